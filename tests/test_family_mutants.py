"""The loss family's mutants (tests/mutants/family.py): written once, applied to every member of
the family that does not opt out (with its reason, as data), and each instance's `where` is
exact on the pairwise subset: its kernel computes other numbers than the operator's reference on
some case where `where` holds and on none where it does not (tests/test_mutants.py then proves the
suite fails each instance there and only there)."""
from __future__ import annotations

import numpy as np
import pytest

from suite import ops
from suite.cases.model import NUMBERS
from suite.ops.loss import LossBackward
from suite.run.runner import build_call
from tests.mutants import family, harness, registry
from tests.mutants.kit import Mutant
from tests.sampling import sampled

MEMBERS = sorted((op for op in ops.OPERATORS.values() if isinstance(op, LossBackward)), key=lambda op: op.name)
INSTANCES = [(op, m) for op in MEMBERS for m in family.instances(op, registry.kit(op).FAMILY)]


def test_every_member_takes_or_opts_out_of_every_family_mutant() -> None:
    assert len(MEMBERS) >= 9 and len(family.FAMILY) >= 6
    for op in MEMBERS:
        member = registry.kit(op).FAMILY
        assert isinstance(member, family.Member), f"{op.name}'s kit declares no FAMILY"
        taken = {m.name for m in family.instances(op, member)}
        assert len(taken) + len(member.opt_out) == len(family.FAMILY), op.name
        assert all(isinstance(r, str) and len(r) > 10 for r in member.opt_out.values()), op.name
        own = {m.name for m in registry.kit(op).MUTANTS}
        assert not own & taken, f"{op.name}'s kit hand-writes family mutants {sorted(own & taken)}"
        assert taken <= {k.__name__ for k in registry.mutants_of(op)}


def test_an_instance_is_the_operator_with_one_step_overridden() -> None:
    for op, m in INSTANCES:
        assert isinstance(m.kernel, type(op)) and type(m.kernel) is not type(op) and m.kernel.name == op.name
        overridden = {k for k in vars(type(m.kernel).__mro__[1]) if not k.startswith("__") and k != "member"}
        assert overridden and m.description and m.fails == {"numbers"}, (m.name, overridden)


def test_a_bad_member_is_one_clear_error() -> None:
    op = MEMBERS[0]
    with pytest.raises(ValueError, match="unknown family mutants"):
        family.instances(op, family.Member(prefix="X", opt_out={"NoSuchDefect": "a reason long enough"}))
    with pytest.raises(ValueError, match="without its reason"):
        family.instances(op, family.Member(prefix="X", opt_out={"SumAsMean": ""}))
    with pytest.raises(ValueError, match="neither B nor an input"):
        family.instances(op, family.Member(prefix="X", mean_over="nothing"))


def _result(kernel, call):
    with np.errstate(all="ignore"):
        r = kernel.reference(call)
    return {k: np.asarray(v) for k, v in r.items()} if isinstance(r, dict) else {"out": np.asarray(r)}


def _differs(a, b) -> bool:
    for k in a:
        x, y = a[k].astype(np.float64), b[k].astype(np.float64)
        if x.shape != y.shape or not bool(np.all((x == y) | (np.isnan(x) & np.isnan(y)))):
            return True
    return False


@pytest.mark.parametrize("pair", sampled("test_where_is_exactly_where_the_kernel_computes_otherwise", INSTANCES,
                                          lambda p: p[0].name, ids=lambda p: p[1].name))
def test_where_is_exactly_where_the_kernel_computes_otherwise(pair) -> None:
    """On the subset's numeric cases of the operator: the instance's kernel and the operator's
    reference differ on some case where `where` holds, and agree bit for bit wherever it does
    not (so `where` claims no more cases than its own definition and misses none it changes).
    CI: a third of the members (tests/sampling.py); -m heavy the others."""
    op, m = pair
    cases = [c for c in harness.subset() if c.op == op.name and c.expect == NUMBERS]
    shows, stray = [], []
    for c in cases:
        call = build_call(c, harness.store().load(c).inputs)
        changed = _differs(_result(m.kernel, call), _result(op, call))
        if m.where(c):
            shows.append(changed)
        elif changed:
            stray.append(c.id)
    assert any(shows), f"{m.name}: the kernel computes as the operator on every case where it claims to show"
    assert not stray, f"{m.name} changes cases outside its where: {stray[:3]}"
