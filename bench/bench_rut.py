"""Benchmark of the RUT paper experiment on the recorded pools (issue 26): the study vs one audit at a time.

    nice -n 10 python bench/bench_rut.py [--trials 500] [--baseline-trials 10]

Times, side by side:

* ``power_study``: every substitute, q ∈ {0, 0.1, …, 1}, ``--trials`` audits per q,
  RUT + MMD (B = 1000 re-splits) + KS, vectorized with common random numbers;
* the baseline: the same audits tested one by one with the one-audit functions
  (``rank_uniformity_test``, ``hamming_mmd_test``), timed on ``--baseline-trials``
  audits per q and substitute and scaled to ``--trials``;
* ``score_selection`` (Fig 2) and the whole ``python -m dbpa_core reproduce rut``.

The load average is printed beside the figures (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.rut.mmd import hamming_mmd_test  # noqa: E402
from dbpa_core.rut.pools import load_rut_pools  # noqa: E402
from dbpa_core.rut.power import Q_GRID, draw_audit, power_study, score_selection  # noqa: E402
from dbpa_core.rut.uniformity import rank_uniformity_test  # noqa: E402


def baseline_seconds(pools, trials: int) -> float:
    """Seconds for ``trials`` audits per q and substitute, one audit at a time."""
    rng = np.random.default_rng(1)
    start = time.perf_counter()
    for name in pools.substitutes:
        for q in Q_GRID:
            for _ in range(trials):
                audit = draw_audit(pools, name, q, rng=rng)
                rank_uniformity_test(audit.target_scores, audit.reference_scores, rng=rng)
                hamming_mmd_test(audit.target_tokens, audit.reference_tokens, n_resamples=1000, rng=rng)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--baseline-trials", type=int, default=10)
    args = parser.parse_args()
    pools = load_rut_pools()
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)")
    start = time.perf_counter()
    power_study(pools, n_trials=args.trials, n_resamples=1000, rng=0)
    study = time.perf_counter() - start
    start = time.perf_counter()
    score_selection(pools, n_trials=args.trials, rng=0)
    selection = time.perf_counter() - start
    base = baseline_seconds(pools, args.baseline_trials) * args.trials / args.baseline_trials
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dbpa_core", "reproduce", "rut"], cwd=REPO, check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    cli = time.perf_counter() - start
    n_tests = len(pools.substitutes) * len(Q_GRID) * args.trials
    print(f"power_study, {len(pools.substitutes)} substitutes × {len(Q_GRID)} q × {args.trials} audits "
          f"({n_tests:,} audits, 3 tests each): {study:.1f} s")
    print(f"baseline, one audit at a time (scaled from {args.baseline_trials} per q): {base:.0f} s "
          f"→ {base / study:.0f}× slower")
    print(f"score_selection ({args.trials} trials per substitute): {selection:.1f} s")
    print(f"python -m dbpa_core reproduce rut (whole command, fresh process): {cli:.1f} s")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
