"""Sharding (suite/report/shard.py): which shard each case lands in is pinned by a golden table, so any
other hash, ordering or numbering fails; and `parse` at and outside every boundary of K/N, each
with the message the user reads."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from suite.cases.load import load_cases
from suite.report import shard
from suite.report.shard import MAX_SHARDS, ShardError

ROOT = Path(__file__).resolve().parents[1]

# case id, then its shard for N = 1, 2, 3 and 7 (computed once from sha256 ranking and round-robin
# dealing; written here as data: a change to either moves cases and must be a deliberate one,
# since CI jobs and known-failure triage key on where a case runs)
GOLDEN = """
# case id                                                                 N=1 2  3  7
ShardTestOp-float32-atlas-a2-none-2x3.2x3-contiguous-uniform              1  2  2  1
ShardTestOp-float32-atlas-a2-none-scalar.4-contiguous-uniform             1  2  1  3
ShardTestOp-float32-atlas-a2-none-0x3.0x3-contiguous-uniform              1  1  2  7
ShardTestOp-float32-atlas-a2-none-1x1x1x1x1x1x1x2.2-contiguous-uniform    1  2  1  6
ShardTestOp-float32-atlas-a2-mean-2x3.2x3-contiguous-uniform              1  2  3  2
ShardTestOp-float32-atlas-a2-mean-scalar.4-contiguous-uniform             1  2  2  6
ShardTestOp-float32-atlas-a2-mean-0x3.0x3-contiguous-uniform              1  1  1  4
ShardTestOp-float32-atlas-a2-mean-1x1x1x1x1x1x1x2.2-contiguous-uniform    1  1  2  1
ShardTestOp-float32-atlas-a2-sum-2x3.2x3-contiguous-uniform               1  2  3  3
ShardTestOp-float32-atlas-a2-sum-scalar.4-contiguous-uniform              1  1  1  3
ShardTestOp-float32-atlas-a2-sum-0x3.0x3-contiguous-uniform               1  1  2  5
ShardTestOp-float32-atlas-a2-sum-1x1x1x1x1x1x1x2.2-contiguous-uniform     1  2  3  5
ShardTestOp-float16-atlas-a2-none-2x3.2x3-contiguous-uniform              1  2  2  5
ShardTestOp-float16-atlas-a2-none-scalar.4-contiguous-uniform             1  2  1  4
ShardTestOp-float16-atlas-a2-none-0x3.0x3-contiguous-uniform              1  1  3  3
ShardTestOp-float16-atlas-a2-none-1x1x1x1x1x1x1x2.2-contiguous-uniform    1  2  2  3
ShardTestOp-float16-atlas-a2-mean-2x3.2x3-contiguous-uniform              1  1  1  5
ShardTestOp-float16-atlas-a2-mean-scalar.4-contiguous-uniform             1  1  1  1
ShardTestOp-float16-atlas-a2-mean-0x3.0x3-contiguous-uniform              1  2  3  1
ShardTestOp-float16-atlas-a2-mean-1x1x1x1x1x1x1x2.2-contiguous-uniform    1  1  2  2
ShardTestOp-float16-atlas-a2-sum-2x3.2x3-contiguous-uniform               1  2  1  7
ShardTestOp-float16-atlas-a2-sum-scalar.4-contiguous-uniform              1  1  3  5
ShardTestOp-float16-atlas-a2-sum-0x3.0x3-contiguous-uniform               1  1  3  1
ShardTestOp-float16-atlas-a2-sum-1x1x1x1x1x1x1x2.2-contiguous-uniform     1  1  1  2
ShardTestOp-bfloat16-atlas-a2-none-2x3.2x3-contiguous-uniform             1  1  3  4
ShardTestOp-bfloat16-atlas-a2-none-scalar.4-contiguous-uniform            1  2  1  2
ShardTestOp-bfloat16-atlas-a2-none-0x3.0x3-contiguous-uniform             1  2  1  5
ShardTestOp-bfloat16-atlas-a2-none-1x1x1x1x1x1x1x2.2-contiguous-uniform   1  2  3  6
ShardTestOp-bfloat16-atlas-a2-mean-2x3.2x3-contiguous-uniform             1  2  2  2
ShardTestOp-bfloat16-atlas-a2-mean-scalar.4-contiguous-uniform            1  2  1  1
ShardTestOp-bfloat16-atlas-a2-mean-0x3.0x3-contiguous-uniform             1  1  2  3
ShardTestOp-bfloat16-atlas-a2-mean-1x1x1x1x1x1x1x2.2-contiguous-uniform   1  1  3  2
ShardTestOp-bfloat16-atlas-a2-sum-2x3.2x3-contiguous-uniform              1  1  3  6
ShardTestOp-bfloat16-atlas-a2-sum-scalar.4-contiguous-uniform             1  1  2  4
ShardTestOp-bfloat16-atlas-a2-sum-0x3.0x3-contiguous-uniform              1  2  3  4
ShardTestOp-bfloat16-atlas-a2-sum-1x1x1x1x1x1x1x2.2-contiguous-uniform    1  1  3  7
a                                                                         1  2  2  4
b                                                                         1  1  1  6
ShardTestOp-float16-atlas-a2-none-2x3.2x3-strided-tiny                    1  1  1  7
ShardTestOp-float16-atlas-a2-none-2x3.2x3-negstride-tiny                  1  2  2  7
"""
NS = (1, 2, 3, 7)
ROWS = [line.split() for line in GOLDEN.strip().splitlines() if not line.startswith("#")]
IDS = [r[0] for r in ROWS]
WANT = {n: {r[0]: int(r[1 + i]) for r in ROWS} for i, n in enumerate(NS)}


def test_the_table_is_what_it_claims() -> None:
    assert len(IDS) == len(set(IDS)) == 40
    assert all(len(r) == 1 + len(NS) for r in ROWS)


@pytest.mark.parametrize("n", NS)
def test_each_case_lands_in_its_pinned_shard(n: int) -> None:
    got = shard.assign(IDS, n)
    wrong = {c: (got.get(c), WANT[n][c]) for c in IDS if got.get(c) != WANT[n][c]}
    assert not wrong, f"N={n}: case -> (got, pinned): {wrong}"
    assert set(got) == set(IDS)


@pytest.mark.parametrize("n", NS)
def test_input_order_and_repeats_change_nothing(n: int) -> None:
    """The shard of a case depends on the set of ids alone: reversed, shuffled by a fixed
    permutation, or with every id given twice, the answer is the pinned one."""
    assert shard.assign(list(reversed(IDS)), n) == WANT[n]
    assert shard.assign(IDS[1::2] + IDS[::2], n) == WANT[n]
    assert shard.assign(IDS + IDS[::-1], n) == WANT[n]
    assert shard.assign(iter(IDS), n) == WANT[n]                  # any iterable


@pytest.mark.parametrize("n,sizes", [(1, [40]), (2, [20, 20]), (3, [14, 13, 13]), (7, [6, 6, 6, 6, 6, 5, 5])])
def test_shards_are_balanced_and_numbered_from_1(n: int, sizes: list) -> None:
    got = shard.assign(IDS, n)
    assert [list(got.values()).count(k) for k in range(1, n + 1)] == sizes
    assert set(got.values()) == set(range(1, n + 1))


def test_shard_assignment_is_stable_and_balanced() -> None:
    """The project's own cases (thousands of ids, not the table's 40) deal evenly into 4 shards,
    whatever order they come in."""
    ids = [c.id for c in load_cases([ROOT / "cases"])[0]]
    a, b = shard.assign(ids, 4), shard.assign(list(reversed(ids)), 4)
    assert a == b
    sizes = [list(a.values()).count(k) for k in (1, 2, 3, 4)]
    assert max(sizes) - min(sizes) <= 1


def test_more_shards_than_cases_and_no_cases() -> None:
    assert shard.assign([], 3) == {}
    assert shard.assign(["b", "a"], 5) == {"b": 1, "a": 2}       # sha256("b") < sha256("a")


# spec -> (K, N), or the whole message of the ShardError
PARSE = [
    ("1/1", (1, 1)),
    ("3/3", (3, 3)),                           # K = N
    ("1/3", (1, 3)),
    ("2/3", (2, 3)),
    (f"1/{MAX_SHARDS}", (1, MAX_SHARDS)),      # N at its largest
    (f"{MAX_SHARDS}/{MAX_SHARDS}", (MAX_SHARDS, MAX_SHARDS)),
    ("01/03", (1, 3)),                         # leading zeros: still the numbers 1 and 3
    ("0/3", "--shard '0/3': need 1 <= K <= N <= 100000"),
    ("4/3", "--shard '4/3': need 1 <= K <= N <= 100000"),
    (f"1/{MAX_SHARDS + 1}", "--shard '1/100001': need 1 <= K <= N <= 100000"),
    (f"{MAX_SHARDS + 1}/{MAX_SHARDS + 1}", "--shard '100001/100001': need 1 <= K <= N <= 100000"),
    ("-1/3", "--shard '-1/3': need 1 <= K <= N <= 100000"),
    ("1/0", "--shard '1/0': need 1 <= K <= N <= 100000"),
    ("0/0", "--shard '0/0': need 1 <= K <= N <= 100000"),
    ("1/-3", "--shard '1/-3': need 1 <= K <= N <= 100000"),
    ("a/b", "--shard 'a/b': write K/N, e.g. 2/4"),
    ("x", "--shard 'x': write K/N, e.g. 2/4"),
    ("1/3/5", "--shard '1/3/5': write K/N, e.g. 2/4"),
    (" 1/3", "--shard ' 1/3': write K/N, e.g. 2/4"),
    ("1/3 ", "--shard '1/3 ': write K/N, e.g. 2/4"),
    ("1 /3", "--shard '1 /3': write K/N, e.g. 2/4"),
    ("1/3\n", "--shard '1/3\\n': write K/N, e.g. 2/4"),
    ("", "--shard '': write K/N, e.g. 2/4"),
    ("/", "--shard '/': write K/N, e.g. 2/4"),
    ("1/", "--shard '1/': write K/N, e.g. 2/4"),
    ("/3", "--shard '/3': write K/N, e.g. 2/4"),
    ("3", "--shard '3': write K/N, e.g. 2/4"),
    ("+1/3", "--shard '+1/3': write K/N, e.g. 2/4"),
    ("1_0/20", "--shard '1_0/20': write K/N, e.g. 2/4"),    # int() would read 10
    ("1.0/3", "--shard '1.0/3': write K/N, e.g. 2/4"),
    ("1:3", "--shard '1:3': write K/N, e.g. 2/4"),
    ("\u0661/\u0663", "--shard '\u0661/\u0663': write K/N, e.g. 2/4"),    # Arabic-Indic 1/3: int() reads them
    ("1/" + "9" * 13, "--shard '1/9999999999999': write K/N, e.g. 2/4"),
]


def _id(spec: str) -> str:
    """A test id of printable ASCII only (mutmut passes ids back to pytest, which cannot find one
    holding an escaped newline or a non-ASCII digit): anything else shows as '?'."""
    return "'" + re.sub(r"[^0-9A-Za-z/ :._+-]", "?", spec) + "'"


@pytest.mark.parametrize("spec,want", PARSE, ids=[_id(s) for s, _ in PARSE])
def test_parse_at_and_outside_every_boundary(spec: str, want) -> None:
    if isinstance(want, tuple):
        assert shard.parse(spec) == want
        return
    with pytest.raises(ShardError) as e:
        shard.parse(spec)
    assert str(e.value) == want
    assert isinstance(e.value, ValueError)


def test_max_shards_is_the_documented_limit() -> None:
    assert MAX_SHARDS == 100_000
