"""The performance gate's figures on the simulated device (issue 24, "Done when"); not a test.

    python benchmarks/perf_gate.py [--seeds 200] [--rounds 10] [--launches 50]

For each seed, every case below is timed on a baseline simulated backend and on a candidate (another
seed: an independent run of the same device), `--rounds` rounds of `--launches` launches each, the
cache flushed before each launch unless said otherwise, and the gate (suite/perf/gate.py, default
threshold 10 %, alpha 0.01) compares the two records. Printed: the share of cases the gate flags
for A/A, for a kernel 20 % slower and 5 % slower; the GB/s the records report against the simulated
bandwidth; the cache-resident flag warm and cold; three rounds; on a device that drifts over the
job (30 % slower over 12,000 launches, A and B on one device), A's run then B's against A and B
interleaved round by round (suite/perf/interleave.py, the order of pytest --timing-baseline); and,
beside them, the host-clock liar's figures. Each criterion's verdict is printed; exit 1 when one is missed. Figures: docs/figures.md.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from suite.cases.hardware import FIELDS as HARDWARE_FIELDS  # noqa: E402
from suite.contract import OpCall  # noqa: E402
from suite.perf import gate  # noqa: E402
from suite.perf.interleave import Side, alternate  # noqa: E402
from suite.perf.record import TimingRecord  # noqa: E402
from suite.perf.simulated import HostClockBackend, SimulatedBackend  # noqa: E402
from suite.perf.traffic import bytes_moved  # noqa: E402

# Bytes per launch (three float32 inputs and a float32 out: 16 bytes an element); the simulated
# device reads 1000 GB/s from memory (of a nominal 1200 GB/s peak), 4000 GB/s from its 64 MiB
# cache, 2 us overhead a launch.
SIZES = {"64 KB": 64_000, "1.6 MB": 1_600_000, "16 MB": 16_000_000, "160 MB": 160_000_000,
         "1.6 GB": 1_600_000_000, "16 GB": 16_000_000_000}
LARGE = ("1.6 GB", "16 GB")             # where the 2 us overhead is under 0.2 % of the time
PEAK_SOURCE = "simulated device (not a product figure)"


def call_of(nbytes: int) -> OpCall:
    """A MseLossBackward-shaped call moving `nbytes`, as broadcast views (no memory behind them);
    only its time is simulated, so its values do not matter."""
    n = nbytes // 16
    view = lambda v: np.broadcast_to(np.full((), v, np.float32), (n,))   # noqa: E731
    return OpCall("MseLossBackward", {"gradOutput": view(1.0), "self": view(2.0), "target": view(3.0)},
                  {"reduction": 0}, (n,), np.dtype(np.float32), "atlas-a2")


def measure(backend, call: OpCall, rounds: int, launches: int, flush: bool = True) -> TimingRecord:
    """The local stand-in for the timing protocol: `rounds` calls of time_launches, each round's
    median per launch (to be replaced by the protocol of `pytest --timing`)."""
    t = [backend.time_launches(call, launches, flush=flush) for _ in range(rounds)]
    return TimingRecord.of_rounds([float(np.median(x.seconds)) for x in t], clock=t[0].clock,
                                  source=t[0].source, cache="cold" if flush else "warm", launches=launches,
                                  nbytes=bytes_moved(call), peak_gbps=backend.peak_gbps, peak_source=PEAK_SOURCE)


# A noisier device than the default, for the figures only: 10 % launch noise, 5 % outliers, 3 %
# drift between rounds.
NOISY = {"noise_sigma": 0.10, "outlier_rate": 0.05, "round_sigma": 0.03}


def verdicts(seeds: int, slowdown: float, rounds: int, launches: int, **model: float) -> Dict[str, List[gate.Verdict]]:
    """Per case, the gate's verdict for each seed: BASE seed 2s against a candidate seed 2s + 1."""
    calls = {name: call_of(b) for name, b in SIZES.items()}
    out: Dict[str, List[gate.Verdict]] = {name: [] for name in SIZES}
    for s in range(seeds):
        base = SimulatedBackend(seed=2 * s, **model)
        cand = SimulatedBackend(seed=2 * s + 1, slowdown=slowdown, **model)
        for name, call in calls.items():
            v = gate.compare(measure(base, call, rounds, launches), measure(cand, call, rounds, launches))
            out[name].append(v)
    return out


# A device that drifts over the job: 30 % slower after DRIFT_LAUNCHES launches, about one job
# (A and B, each the six cases of 10 rounds of 100 launches: 12,000 launches).
DRIFT = 0.30
DRIFT_LAUNCHES = 12_000


def drifting(seeds: int, slowdown: float, rounds: int, launches: int,
             interleaved: bool) -> Tuple[Dict[str, List[gate.Verdict]], List[int]]:
    """Per case, the gate's verdict for each seed, A (seed 2s) and B (seed 2s + 1, `slowdown`) on
    one drifting device (their drift counts both backends' launches): interleaved, each case's
    rounds taken in turn, A, B, A, ... (suite/perf/interleave.py, as pytest --timing-baseline
    does); else A's run of every case, then B's (two runs one after the other in one job). And
    per seed, how many cases were flagged."""
    calls = {name: call_of(b) for name, b in SIZES.items()}
    out: Dict[str, List[gate.Verdict]] = {name: [] for name in SIZES}
    flagged: List[int] = []
    for s in range(seeds):
        a = SimulatedBackend(seed=2 * s, drift=DRIFT, drift_launches=DRIFT_LAUNCHES)
        b = SimulatedBackend(seed=2 * s + 1, slowdown=slowdown, drift=DRIFT, drift_launches=DRIFT_LAUNCHES)
        b.device.ramp = a.device.ramp                    # one device
        sides = {(who, name): Side(lambda n, flush, be=be, c=call: (be.time_launches(c, n, flush=flush), 0.0), True)
                 for who, be in (("A", a), ("B", b)) for name, call in calls.items()}
        if interleaved:
            for name in calls:
                alternate([sides["A", name], sides["B", name]], launches, rounds)
        else:
            for who in ("A", "B"):
                for name in calls:
                    alternate([sides[who, name]], launches, rounds)
        n = 0
        for name, call in calls.items():
            rec = [TimingRecord.from_json(sides[who, name].record(bytes_moved(call), (None, None), "cold"))
                   for who in ("A", "B")]
            v = gate.compare(*rec)
            out[name].append(v)
            n += v.kind in (gate.REGRESSION, gate.IMPROVED)
        flagged.append(n)
    return out, flagged


def share(vs: List[gate.Verdict], *which: str) -> float:
    return sum(v.kind in which for v in vs) / len(vs)


def significant(vs: List[gate.Verdict]) -> float:
    """The share a test alone would flag (p <= alpha, whatever the effect): why the gate needs both."""
    return sum(v.p is not None and v.p <= gate.ALPHA for v in vs) / len(vs)


def drift_figures(a: argparse.Namespace, checks: List[Tuple[str, str, bool]]) -> None:
    """The interleaved mode's criteria on a drifting device (docs/perf-gate.md, "Drift")."""
    seq, seq_seeds = drifting(a.seeds, 1.0, a.rounds, a.launches, interleaved=False)
    ks = [k for ks in seq.values() for k in ks]
    seeds_hit = sum(n > 0 for n in seq_seeds) / len(seq_seeds)
    print(f"drift {DRIFT:.0%} over {DRIFT_LAUNCHES:,} launches, A/A, A's run then B's: REGRESSION "
          f"{share(ks, gate.REGRESSION):.2%} of cases, IMPROVED {share(ks, gate.IMPROVED):.2%}, UNKNOWN "
          f"{share(ks, gate.UNKNOWN):.2%}; seeds with a false flag {seeds_hit:.1%}")
    checks.append(("drift, sequential A/A flags false regressions", f"{share(ks, gate.REGRESSION):.1%} of cases, "
                   f"{seeds_hit:.1%} of seeds", share(ks, gate.REGRESSION) >= 0.5))
    inter, _ = drifting(a.seeds, 1.0, a.rounds, a.launches, interleaved=True)
    ks = [k for ks in inter.values() for k in ks]
    flagged = share(ks, gate.REGRESSION, gate.IMPROVED)
    print(f"drift, A/A interleaved (ABAB): flagged {flagged:.2%} (REGRESSION {share(ks, gate.REGRESSION):.2%}), "
          f"UNKNOWN {share(ks, gate.UNKNOWN):.2%}; p <= {gate.ALPHA:g} alone: {significant(ks):.2%}")
    checks.append(("drift, interleaved A/A flags <= 2 % of cases", f"{flagged:.2%}", flagged <= 0.02))
    for slowdown in (1.20, 1.05):
        for order in (True, False):
            vs, _ = drifting(a.seeds, slowdown, a.rounds, a.launches, interleaved=order)
            per = {name: share(k, gate.REGRESSION) for name, k in vs.items()}
            print(f"drift, {slowdown - 1:.0%} slower, {'interleaved' if order else 'sequential'}: REGRESSION per "
                  f"case " + ", ".join(f"{n} {x:.1%}" for n, x in per.items()))
            if slowdown > 1.1 and order:
                checks.append(("drift, 20 % slower interleaved flagged in >= 99 % of seeds",
                               f"min {min(per.values()):.1%}", min(per.values()) >= 0.99))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=200)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--launches", type=int, default=100)
    a = p.parse_args()
    started = time.perf_counter()
    checks: List[Tuple[str, str, bool]] = []

    aa = verdicts(a.seeds, 1.0, a.rounds, a.launches)
    every = [k for ks in aa.values() for k in ks]
    flagged = share(every, gate.REGRESSION, gate.IMPROVED)
    print(f"A/A, {a.seeds} seeds x {len(SIZES)} cases: flagged {flagged:.2%} "
          f"(REGRESSION {share(every, gate.REGRESSION):.2%}, IMPROVED {share(every, gate.IMPROVED):.2%}), "
          f"UNKNOWN {share(every, gate.UNKNOWN):.2%}; p <= {gate.ALPHA:g} alone: {significant(every):.2%}")
    checks.append(("A/A flags <= 2 % of cases", f"{flagged:.2%}", flagged <= 0.02))

    for slowdown, want in ((1.20, "flagged in >= 99 % of seeds"), (1.05, "never flagged")):
        vs = verdicts(a.seeds, slowdown, a.rounds, a.launches)
        per = {name: share(ks, gate.REGRESSION) for name, ks in vs.items()}
        print(f"{slowdown - 1:.0%} slower: REGRESSION per case " + ", ".join(f"{n} {x:.1%}" for n, x in per.items())
              + f"; UNKNOWN {share([k for ks in vs.values() for k in ks], gate.UNKNOWN):.2%}"
              + f"; p <= {gate.ALPHA:g} alone: {significant([k for ks in vs.values() for k in ks]):.2%}")
        ok = min(per.values()) >= 0.99 if slowdown > 1.1 else max(per.values()) == 0
        checks.append((f"{slowdown - 1:.0%} slower {want}",
                       f"min {min(per.values()):.1%}" if slowdown > 1.1 else f"max {max(per.values()):.1%}", ok))

    off = []
    for s in range(a.seeds):
        b = SimulatedBackend(seed=s)
        off += [measure(b, call_of(SIZES[n]), a.rounds, a.launches).gbps / b.model.bandwidth_gbps - 1 for n in LARGE]
    worst = max(abs(x) for x in off)
    print(f"GB/s against the simulated device's {SimulatedBackend().model.bandwidth_gbps:g} GB/s on {', '.join(LARGE)}: worst {worst:.3%} off "
          f"(mean {np.mean(off):+.3%})")
    checks.append(("GB/s within 1 % of the bandwidth on large cases", f"{worst:.3%}", worst <= 0.01))

    rows = []
    for name, nbytes in SIZES.items():
        fr = {}
        for flush in (True, False):
            recs = [measure(SimulatedBackend(seed=s), call_of(nbytes), a.rounds, a.launches, flush=flush)
                    for s in range(min(a.seeds, 20))]
            fr[flush] = (np.median([r.peak_fraction for r in recs]), float(np.mean([r.cache_resident for r in recs])))
        rows.append((name, fr))
        print(f"  {name:>7}: cold {fr[True][0]:.0%} of peak (cache-resident in {fr[True][1]:.0%}), "
              f"warm {fr[False][0]:.0%} (cache-resident in {fr[False][1]:.0%})")
    warm_fits = [fr[False][1] for name, fr in rows if SIZES[name] <= SimulatedBackend().model.llc_bytes
                 and fr[False][0] > 1]
    cold_any = max(fr[True][1] for _, fr in rows)
    checks.append(("warm cache flagged above 100 % of peak, cold not",
                   f"warm flagged {min(warm_fits):.0%} where faster than memory; cold {cold_any:.0%}",
                   bool(warm_fits) and min(warm_fits) == 1.0 and cold_any == 0))

    three = verdicts(a.seeds, 1.20, 3, a.launches)
    unknown = share([k for ks in three.values() for k in ks], gate.UNKNOWN)
    print(f"three rounds, 20 % slower: UNKNOWN in {unknown:.1%} of cases")
    checks.append(("three rounds give UNKNOWN", f"{unknown:.1%}", unknown == 1.0))

    for slowdown in (1.0, 1.05, 1.20):
        ks = [k for ks in verdicts(a.seeds, slowdown, a.rounds, a.launches, **NOISY).values() for k in ks]
        print(f"noisier device ({', '.join(f'{k} {v:g}' for k, v in NOISY.items())}), {slowdown - 1:.0%} slower: "
              f"REGRESSION {share(ks, gate.REGRESSION):.2%}, IMPROVED {share(ks, gate.IMPROVED):.2%}, "
              f"UNKNOWN {share(ks, gate.UNKNOWN):.2%}; p <= {gate.ALPHA:g} alone: {significant(ks):.2%}")

    drift_figures(a, checks)

    liar = measure(HostClockBackend(seed=0), call_of(SIZES["1.6 GB"]), a.rounds, a.launches)
    print(f"host-clock liar on 1.6 GB: says clock {liar.clock!r}, median {liar.median_s * 1e6:.2f} us, "
          f"{liar.peak_fraction:.0f}x the peak (cache-resident: {liar.cache_resident})")
    bandwidth = [f for f in HARDWARE_FIELDS if "bandwidth" in f]
    print("product peaks: " + ("cases/hardware.yaml has " + ", ".join(bandwidth) if bandwidth else
                               "unverified: cases/hardware.yaml gives no memory bandwidth (no sourced figure)"))

    print(f"\n{'criterion':<52} {'figure':<44} met")
    for what, fig, ok in checks:
        print(f"{what:<52} {fig:<44} {'yes' if ok else 'NO'}")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0 if all(ok for _, _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
