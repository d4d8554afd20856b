"""The shape class of a record (suite/report/summary.py shape_class), read off its operator's own
declaration (issue 42, item 8): report.html called every aclnnNLLLoss group "broadcast" (its inputs
[N, C], [N] and [C] differ in shape by the contract, and none is broadcast), and "large" looked at
the output alone, so a mean or sum over millions of elements was never "large"."""
from __future__ import annotations

import pytest

from suite import ops
from suite.report import groups, html, summary
from tests.reportkit import sample_record


def _rec(op, shapes, out, kind="numbers", outcome="passed"):
    return {**sample_record("k", outcome), "op": op, "kind": kind, "shapes": shapes, "out_shape": out,
            "dtypes": {n: "float32" for n in shapes}}


def _nll(n, c, out=()):
    return _rec("NLLLoss", {"self": [n, c], "target": [n], "weight": [c]}, list(out))


@pytest.mark.parametrize("record, cls", [
    (_nll(4, 5), "rank 2"),                                   # a class index beside scores: no broadcast
    (_nll(4, 5, (4,)), "rank 2"),                             # reduction none: out [N]
    (_rec("NLLLoss", {"self": [7], "target": [], "weight": [7]}, []), "rank 1"),   # one sample
    (_nll(3, 100000), "large"),                               # a vocabulary: one output element
    (_nll(0, 4), "empty"),
    (_rec("MseLoss", {"self": [2, 3], "target": [2, 3]}, []), "rank 2"),           # a mean of 6 terms
    (_rec("MseLoss", {"self": [100, 100], "target": [100, 100]}, []), "large"),    # a mean of 10^4 terms
    (_rec("MseLoss", {"self": [64, 1], "target": [1, 64]}, []), "large"),          # 4096 terms from 128 inputs
    (_rec("MseLoss", {"self": [2, 3], "target": [3]}, []), "broadcast"),           # target broadcast to self
    (_rec("MseLossBackward", {"gradOutput": [], "self": [2, 3], "target": [2, 3]}, [2, 3]), "broadcast"),
    (_rec("MseLossBackward", {"gradOutput": [2, 3], "self": [2, 3], "target": [2, 3]}, [2, 3]), "rank 2"),
    (_rec("MseLossBackward", {"gradOutput": [2, 3], "self": [2, 3], "target": [2, 3]},
          [1] * 9, kind="rejection"), "rank 9"),                                   # a wrong out's rank shows
    (_rec("MseLoss", {"self": [2, 3], "target": [4, 5]}, [], kind="rejection"), "broadcast"),  # no terms
    (_rec("NoSuchOp", {"a": [2, 3], "b": [3]}, [2, 3]), "broadcast"),              # unknown: by the shapes
    (_rec("NoSuchOp", {"a": [64, 64]}, []), "large"),
    (_rec("NoSuchOp", {"a": [2, 3]}, []), "rank 0"),
])
def test_the_shape_class_follows_the_operators_declaration(record, cls):
    assert record["op"] == "NoSuchOp" or record["op"] in ops.OPERATORS
    assert summary.shape_class(record) == cls


def test_nll_groups_and_the_grid_say_rank_and_large_not_broadcast():
    recs = [_nll(4, 5, ()), _nll(10, 7, ()), _nll(3, 100000, ()), {**_nll(4, 5), "outcome": "failed"}]
    page = html.coverage_table(recs)
    assert 'title="broadcast float32 reduction=none: none"' in page          # the row is empty
    assert 'title="rank 2 float32 reduction=none: mixed"' in page and 'title="large float32 reduction=none: passed"' in page
    (g,) = groups.group_failures(recs)
    assert g.labels["shape"] == "rank 2"
