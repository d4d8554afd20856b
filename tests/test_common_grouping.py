"""suite/common/grouping.py: the run order that keeps one case's data together."""
from __future__ import annotations

from suite.common.grouping import grouped


def test_items_of_one_key_join_the_first_and_nothing_else_moves() -> None:
    items = ["a1", "b1", "a2", "c1", "b2", "a3"]
    assert grouped(items, key=lambda s: s[0]) == ["a1", "a2", "a3", "b1", "b2", "c1"]


def test_distinct_keys_and_empty_input_keep_their_order() -> None:
    assert grouped([], key=id) == []
    items = [3, 1, 2]
    assert grouped(items, key=lambda x: x) == [3, 1, 2]
    assert grouped(items, key=lambda x: 0) == [3, 1, 2]        # one key: one group, in order
    assert items == [3, 1, 2]                                 # the input is not sorted in place
