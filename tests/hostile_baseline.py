"""A backend that rewrites the baseline `report diff` will compare its run with (issue 43, item 5):
a broken kernel (tests/hostile.py's _Attack: the mean results doubled) that, on its first mean call,
marks every record of the baseline results.json at HOSTILE_TARGET failed. Its own failures are then
no new failures, and an unguarded `report diff BASE NEW` exits 0. tests/test_report_trust.py runs
it against a baseline in a folder the run left writable, and against one named with --baseline
(which the run protects)."""
from __future__ import annotations

import json

from tests.hostile import _Attack, _target


class RewriteBaseline(_Attack):
    """Marks every case of the baseline failed, in place (the file keeps its path and inode)."""

    def attack(self) -> None:
        path = _target()
        doc = json.loads(path.read_text())
        for r in doc["records"]:
            r.update(outcome="failed", reason="forged", reproduce="forged")
        doc["counts"] = {o: sum(r["outcome"] == o for r in doc["records"]) for o in doc["counts"]}
        with open(path, "w") as f:             # in place: no new entry in the baseline's folder
            f.write(json.dumps(doc))
