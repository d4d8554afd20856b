"""Stage 2, the goldens: where a golden comes from (source), the bundle format, large cases'
fingerprints and cache, the store a run reads and its manifest, and `golden generate`/`check`
(build).

Small cases (up to STORED_LIMIT elements) are committed: their inputs and golden live in
deterministic zip bundles, golden/<op>/<bucket>-<sha12>.npz, listed with their sha256s in
golden/manifest.json. Large cases commit no arrays: their inputs are drawn on demand from the
case's seed, their golden computed in float64 block by block and kept in the user's cache; the
manifest holds a fingerprint of each (docs/scale.md, "What a run trusts"). A user's own case
file's cases (where.py) that the golden folder lacks are computed the same way, with no
fingerprint (docs/goldens.md, "Your own case files").

May import: suite.common, suite.contract, suite.values, suite.ops, suite.cases.
"""
