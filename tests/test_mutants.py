"""The suite has teeth: it fails every mutant (the generic ones of tests/mutants/gallery.py and
every registered operator's own, its kit's MUTANTS in tests/mutants/<its module>.py), on the cases
where the mutant's defect shows (its `where`) and nowhere else, and it passes the correct kernels
(tests/mutants/correct.py and every operator's kit's VARIANTS) on every case.

Mutants run in-process (tests/mutants/harness.py) over one fixed pairwise subset of the real
cases and goldens, through the same Runner checks the pytest plugin makes; one real pytest session
shows the plugin path fails a mutant too. Nothing here names an operator: the mutants, their
`where` predicates and the operators come from the declarations (tests/mutants/registry.py).
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from suite import ops
from suite.cases.model import NUMBERS
from suite.cases.ids import shape_token
from suite.run.runner import build_call
from tests.mutants import gallery, harness, registry
from tests.mutants.gallery import GENERIC
from tests.mutants.correct import EVERY_SMALL_CASE
from tests.mutants.kernel import Float32Kernel
from tests.mutants.kit import Mutant, Variant
from tests.mutants.report import judged_on, kill_table, markdown, outcome
from tests.sampling import part_of, parts, sampled
from tests.waiting import HANG_S

MUTANTS = registry.gallery_mutants()
VARIANTS = registry.variants()
KINDS = {"numbers", "rejection", "determinism"}


def _operator(kernel) -> "str | None":
    """The operator whose kit a mutant or variant comes from; None for a generic one (it always
    runs: tests/sampling.py)."""
    return next(iter(kernel.operators)) if kernel.operators else None


def test_gallery_has_every_kind_of_defect() -> None:
    assert len(GENERIC) >= 19 and len(MUTANTS) >= 25
    names = [m.__name__ for m in MUTANTS]
    assert len(set(names)) == len(names)
    for m in MUTANTS:
        assert issubclass(m, Float32Kernel) and m is not Float32Kernel
        assert m.description and "\n" not in m.description, m.__name__
        assert m.fails and set(m.fails) <= KINDS, (m.__name__, m.fails)
        assert callable(m.where), m.__name__
    for op in ops.OPERATORS.values():
        assert registry.mutants_of(op), f"{op.name} declares no mutants"
    issue2 = registry.issue2()
    assert len(issue2) == 5 and all(m in MUTANTS for m in issue2), [m.__name__ for m in issue2]


def test_subset_covers_every_facet_value() -> None:
    """The subset keeps every value of every facet, per operator and kind of check."""
    sub = harness.subset()
    assert len(sub) < len(harness.small_cases())

    def facet_values(cases):
        return {(c.op, tuple(harness.checks_of(c)), k, v)
                for c in cases for k, v in harness._facets(c).items()}
    assert facet_values(sub) == facet_values(harness.small_cases())
    assert harness.pairwise_subset(list(reversed(harness.small_cases()))) == list(sub), \
        "the subset depends on the cases alone, not on their order"


def test_the_subset_facets_hold_every_declared_attribute() -> None:
    """Each operator's attributes (reduction and its declared ones) are one facet of the subset."""
    for c in harness.subset():
        names = {k for k, _ in harness._facets(c)["attrs"]}
        assert names >= {"reduction", *(a.name for a in ops.get(c.op).attributes)}, (c.id, names)


def test_the_unmutated_kernel_passes_the_subset() -> None:
    """So a mutant's failures are its defect's."""
    o = harness.run_backend(Float32Kernel(), harness.subset())
    assert o.ran > len(harness.subset()) and not o.failures, o.failures


@pytest.mark.parametrize("mutant", sampled("test_mutant_fails_where_its_defect_is", MUTANTS, _operator,
                                            ids=lambda m: m.__name__))
def test_mutant_fails_where_its_defect_is(mutant) -> None:
    """Killed, by the kinds of check it declares, and only where its `where` says. CI runs the
    generic mutants and a third of the operators' kits (tests/sampling.py), -m heavy the rest."""
    name = mutant.__name__
    m = registry.by_name(name)
    o = outcome(name)
    assert o.failures, f"{name} passed the suite"
    failed_kinds = {k for _, k in o.failures}
    assert set(m.fails) <= failed_kinds, f"{name}: expected {set(m.fails)} checks to fail, got {failed_kinds}"
    by_id = {c.id: c for c in harness.subset()}
    stray = [cid for cid in o.killing_cases if not m.where(by_id[cid])]
    assert not stray, f"{name} failed outside its defect's cases: {stray[:3]} ({o.failures})"


@pytest.mark.heavy
def test_kill_rate_is_100_percent() -> None:
    """Every mutant at once, as docs/mutants.md's table (the test above proves each in CI)."""
    rows = kill_table()
    print("\n" + markdown(rows))
    survivors = [r.mutant for r in rows if not r.kills]
    assert rows and not survivors, f"mutants the suite does not catch: {survivors}"
    assert all(r.example for r in rows)


def test_operator_mutants_that_show_only_at_scale_are_killed_there() -> None:
    """An operator's mutant whose `where` holds on no small case is a scale mutant (tests/test_scale.py
    runs it over every small case and the default run): its `where` holds on a scale case that
    kills it, with the kinds of check it declares."""
    from tests.mutants.scale import BY_NAME
    for m in registry.scale_operator_mutants():
        assert BY_NAME[m.__name__] is m
        where = sorted((c for c in harness.scale_cases() if m.where(c)), key=lambda c: (c.elements, c.id))
        assert where, f"{m.__name__}: its where holds on no case at all"
        o = next((o for o in (harness.run_backend(m(), [c]) for c in where) if o.failures), None)
        assert o is not None, f"{m.__name__} passes every case where its defect shows"
        assert set(m.fails) <= set(o.kinds()), (m.__name__, o.failures)


def _every_case_is_heavy(variant) -> list:
    """The control (correct.EVERY_CASE) and each operator's own variants run over every case in
    CI; the other generic variants run over every case of every operator only in the heavy tier
    (-m heavy), and in CI over the pairwise subset (the flushing control: every small case)."""
    from tests.mutants.correct import CORRECT, EVERY_CASE
    return [pytest.mark.heavy] if variant in CORRECT and variant not in EVERY_CASE else []


def _variants_every_case() -> list:
    """The control runs in CI; each operator's own variants for a third of the operators
    (tests/sampling.py); the generic variants, and the other operators', with -m heavy."""
    params = sampled("test_correct_variant_passes_every_case", VARIANTS, _operator, ids=lambda v: v.__name__)
    return [pytest.param(*p.values, id=p.id, marks=list(p.marks) or _every_case_is_heavy(p.values[0]))
            for p in params]


@pytest.mark.parametrize("variant", _variants_every_case())
def test_correct_variant_passes_every_case(variant) -> None:
    """No false alarms: every numeric, rejection and determinism case of the full set (an
    operator's own variant: every case of its operator)."""
    cases = judged_on(variant, harness.all_cases())
    o = harness.run_backend(variant(), cases)
    expected = sum(len(harness.checks_of(c)) for c in cases)
    assert cases and o.ran == expected and o.skipped == 0
    assert not o.failures, dict(list(o.failures.items())[:5])


@pytest.mark.parametrize("variant", [v for v in VARIANTS if _every_case_is_heavy(v) or _operator(v)],
                         ids=lambda v: v.__name__)
def test_correct_variant_passes_the_subset(variant) -> None:
    """CI's share of the heavy test above: the pairwise subset of the small cases, for every
    generic and every operator's variant."""
    cases = judged_on(variant, harness.subset())
    o = harness.run_backend(variant(), cases)
    assert cases and o.ran == sum(len(harness.checks_of(c)) for c in cases) and o.skipped == 0
    assert not o.failures, dict(list(o.failures.items())[:5])


@pytest.mark.parametrize("part", parts())
@pytest.mark.parametrize("variant", EVERY_SMALL_CASE,
                         ids=lambda v: v.__name__)
def test_correct_variant_passes_every_small_case(variant, part: int) -> None:
    """The flushing control over every case with committed goldens, every value set: in parts by
    a digest of each case's data, CI runs one (tests/sampling.py), the heavy tier the others."""
    test = f"test_correct_variant_passes_every_small_case[{variant.__name__}]"
    cases = [c for c in judged_on(variant, harness.small_cases()) if part_of(test, c.datakey) == part]
    o = harness.run_backend(variant(), cases)
    assert cases and o.ran == sum(len(harness.checks_of(c)) for c in cases) and o.skipped == 0
    assert not o.failures, dict(list(o.failures.items())[:5])


def test_every_operator_variant_is_collected() -> None:
    for op in ops.OPERATORS.values():
        assert registry.variants_of(op) and all(v in VARIANTS for v in registry.variants_of(op))
        assert len(registry.variants_of(op)) == len(registry.declared(op)[1])


def test_a_new_operators_mutants_and_variants_are_collected(monkeypatch) -> None:
    """An operator module and its kit are all it takes: a fake operator registered next to the real
    ones, with a kit under its module's name (tests.mutants.<stem>), brings its mutant and variant
    into the collections and `--backend tests.mutants.gallery:<Name>`, and its mutant is the
    control with its kernel in place, for that operator's calls only."""
    real = sorted(ops.OPERATORS.values(), key=lambda op: op.name)[0]
    base = type(real)

    class Fake(base):
        name = "FakeOperatorOfTheHarnessTest"

    class Doubled(Fake):
        def reference_terms(self, x, attrs, shapes):
            return super().reference_terms(x, attrs, shapes) * np.float32(2.0)

    def install_kit(mutants, variants=()) -> None:
        kit = types.ModuleType(registry.kit_name(Fake()))
        kit.MUTANTS, kit.VARIANTS = mutants, variants
        monkeypatch.setitem(sys.modules, kit.__name__, kit)

    assert registry.kit(Fake()) is None and registry.mutants_of(Fake()) == ()   # no kit, no mutants
    install_kit((Mutant("FakeOperatorDoubled", "every term doubled", Doubled(), where=lambda c: True),),
                (Variant("FakeOperatorAsDeclared", "the operator itself", Fake()),))
    monkeypatch.setitem(ops.OPERATORS, Fake.name, Fake())
    names = [m.__name__ for m in registry.all_mutants()]
    assert "FakeOperatorDoubled" in names and names[:len(GENERIC)] == [m.__name__ for m in GENERIC]
    assert "FakeOperatorAsDeclared" in [v.__name__ for v in registry.variants()]
    mutant = gallery.FakeOperatorDoubled
    assert mutant.operators == {Fake.name} and mutant.fails == {"numbers"}

    case = next(c for c in harness.subset() if c.op == real.name and c.expect == NUMBERS
                and c.values == "uniform" and 0 < np.prod(c.out_shape) and c.layout == "contiguous")
    call = build_call(case, harness.store().load(case).inputs)
    control = Float32Kernel().run(call)
    assert np.array_equal(mutant().run(call), control, equal_nan=True), "another operator's call runs the control"
    fake_call = dataclasses.replace(call, op=Fake.name)
    doubled = mutant().run(fake_call).astype(np.float64)
    assert np.allclose(doubled, 2 * control.astype(np.float64), rtol=1e-2), (doubled, control)
    assert not mutant.where(case) and mutant.where(dataclasses.replace(case, op=Fake.name))

    install_kit((Mutant("Misnamed", "its kernel is another operator", real, where=lambda c: True),))
    with pytest.raises(TypeError, match="must be an instance"):
        registry.mutants_of(Fake())


def test_no_file_of_the_harness_names_an_operator() -> None:
    """The harness reads declarations: no operator, operator mutant or variant, input or attribute
    is named in tests/mutants or here, but in the operators' kits (tests/mutants/<stem>.py, each
    beside the operator's own module, which hold all of that)."""
    words, kits = set(), set()
    for op in ops.OPERATORS.values():
        words |= {op.name, *(a.name for a in op.attributes)}
        words |= {f'"{n}"' for n in op.inputs} | {f"'{n}'" for n in op.inputs}
        mutants, variants = registry.declared(op)
        words |= {m.name for m in mutants} | {v.name for v in variants}
        kits.add(registry.kit_name(op).rsplit(".", 1)[-1] + ".py")
    here = sorted((harness.ROOT / "tests" / "mutants").glob("*.py"))
    assert kits <= {f.name for f in here}, "an operator without its kit"
    files = [f for f in here if f.name not in kits] + [Path(__file__)]
    found = {(f.name, w) for f in files for w in words if w in f.read_text()}
    assert not found, sorted(found)


def _plugin_pick():
    """An operator's deterministic numbers mutant, and a -k selection (operator, shapes, layout of
    one case it kills) holding cases it fails and cases it passes."""
    by_id = {c.id: c for c in harness.subset()}
    for m in MUTANTS:
        if m.operators is None or set(m.fails) != {"numbers"}:
            continue
        for cid in sorted(outcome(m.__name__).killing_cases, key=lambda i: (len(i), i)):
            c = by_id[cid]
            tokens = [c.op, ".".join(shape_token(s) for s in c.shapes.values()), c.layout]
            selected = [x for x in harness.all_cases()
                        if x.expect == NUMBERS and all(t.lower() in x.id.lower() for t in tokens)]
            if len(selected) > 80 or all(m.where(x) for x in selected):
                continue                          # too long a session, or nothing it passes
            want = {x.id for x in selected if "numbers" in harness.run_backend(m(), [x]).kinds()}
            if 0 < len(want) < len(selected):
                return m.__name__, tokens, want
    raise AssertionError("no operator mutant with a small -k selection it partly fails")


def test_plugin_path_fails_a_mutant() -> None:
    """A real pytest session with --backend tests.mutants.gallery:<Name> (an operator's mutant,
    built from its declaration) fails exactly the cases the in-process run says it should, and
    passes the rest of its selection."""
    name, tokens, want = _plugin_pick()
    root = str(harness.ROOT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    env["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-rf",
         "--backend", f"tests.mutants.gallery:{name}", "-k", " and ".join(tokens), "suite/conformance"],
        cwd=root, env=env, capture_output=True, text=True, timeout=HANG_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    failed = {line.split("[", 1)[1].split("]", 1)[0]
              for line in out.splitlines() if line.startswith("FAILED ")}
    assert failed == want, (name, tokens, out[-3000:])
    summary = re.search(r"(\d+) failed, (\d+) passed", out)
    assert summary and int(summary[1]) == len(want) and int(summary[2]) > 0, \
        "the selection also has cases the mutant passes"
