"""Calibration of dbpa_core.plan_sample_size: the true power at the planned k, against a naive Gaussian planner.

    DBPA_THREADS=1 nice python bench/bench_planner.py [--replicates 12] [--trials 30] [--oracle-trials 0] [--workers 2]

Populations whose truth is known:

* synthetic: 32-D Gaussian outputs around a common direction (as sentence
  embeddings are), anisotropic spread, the perturbed arm shifted along one
  axis; cosine similarity.
* real: the paper's paraphrase answers (§4.2, all 5 seeds × 8 prompts, the
  shipped MiniLM vectors): the original arm is GPT-3.5's 800 answers, the
  perturbed arm the same with a share q of GPT-4's answers mixed in (drawn with
  replacement from these finite populations).

For each population the oracle power curve is computed by brute force (the
permutation test on arms drawn from the population, ``--oracle-trials`` per
k), giving the oracle k for the target.  It does not depend on the planner, so
by default the curves recorded in bench/RESULTS.md (150 tests per k, B = 199)
are used (``--oracle-trials 0``); pass ``--oracle-trials 150`` to recompute
them (about 20 min on two shared cores).  Then for pilots of 10, 20 and 40 per
arm, ``--replicates`` pilots are drawn, each planner plans k, and the true
power at the planned k is read off the oracle curve (interpolated in log k).
Printed per population × pilot size × planner: the median and 10 %/90 %
quantiles of the true power at the planned k, of planned/oracle k, and the
share of plans over 3× the oracle k ("none", no k up to 200, counts as 200).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dbpa_core.stats.permutation import dbpa_test  # noqa: E402
from dbpa_core.stats.planning import _isotonic, plan_sample_size  # noqa: E402

TARGET, ALPHA, B = 0.8, 0.05, 199
PILOTS = (10, 20, 40)
ORACLE_GRID = (4, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50, 63, 80, 100, 126, 160, 200)


def synthetic(shift: float = 1.4, dim: int = 32):
    """Draw(k, rng): common direction of norm 3, spread 1/√(1+j) on axis j, y shifted by ``shift`` on axis 1."""
    scales = 1 / np.sqrt(1 + np.arange(dim))
    centre = np.zeros(dim)
    centre[0] = 3.0

    def draw(k, rng):
        x = centre + rng.standard_normal((k, dim)) * scales
        y = centre + rng.standard_normal((k, dim)) * scales
        y[:, 1] += shift
        return x, y

    return draw


def real(q: float = 0.6):
    """Draw(k, rng): GPT-3.5's paraphrase answers vs the same with a share q of GPT-4's (shipped vectors)."""
    from dbpa_core import paper
    from dbpa_core.data.store import text_hash

    shipped = paper.shipped_embeddings()
    pools = []
    for model in ("gpt-35-1106-vdsT-AE", "SWNorth-gpt-4-0613-20231016"):
        texts = [t for s in paper.SEEDS for arm in paper.load_paraphrases(model, s).paraphrases for t in arm]
        pools.append(shipped.vectors[[shipped.rows[text_hash(t)] for t in texts]].astype(np.float64))
    a, b = pools

    def draw(k, rng):
        x = a[rng.integers(len(a), size=k)]
        from_b = rng.random(k) < q
        y = np.where(from_b[:, None], b[rng.integers(len(b), size=k)], a[rng.integers(len(a), size=k)])
        return x, y

    return draw


POPULATIONS = {"synthetic": synthetic, "real": real}
#: The oracle curves on ORACLE_GRID recorded in bench/RESULTS.md (150 tests per k, B = 199, JSD on cosine, α = 0.05).
ORACLES = {
    "synthetic": (0.01, 0.09, 0.09, 0.24, 0.25, 0.34, 0.38, 0.46, 0.57, 0.63, 0.69, 0.79, 0.88, 0.91, 0.95, 0.97, 0.99),
    "real": (0.02, 0.05, 0.10, 0.17, 0.23, 0.29, 0.41, 0.53, 0.62, 0.65, 0.77, 0.87, 0.94, 0.97, 0.98, 0.99, 0.99),
}


def _true_power(job):
    name, k, trials, seed = job
    draw = POPULATIONS[name]()
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        x, y = draw(k, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hits += dbpa_test(x, y, n_resamples=B, rng=rng).pvalue <= ALPHA
    return hits / trials


def _plan(job):
    name, pilot, method, trials, seed = job
    draw = POPULATIONS[name]()
    rng = np.random.default_rng(seed)
    x, y = draw(pilot, rng)
    plan = plan_sample_size(x, y, power=TARGET, alpha=ALPHA, n_resamples=B, n_simulations=trials, method=method,
                            k_min=4, k_max=200, rng=rng)
    return plan.k


def power_at(k, grid, curve):
    """The oracle curve at k (log-linear interpolation; beyond the grid, its end value)."""
    if k is None:
        return float(curve[-1])
    return float(np.interp(math.log(k), np.log(grid), curve))


def oracle_k(grid, curve):
    above = np.flatnonzero(curve >= TARGET)
    if not above.size:
        return None
    i = int(above[0])
    if i == 0:
        return grid[0]
    t = (TARGET - curve[i - 1]) / (curve[i] - curve[i - 1])
    return math.exp(math.log(grid[i - 1]) + t * (math.log(grid[i]) - math.log(grid[i - 1])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=12)
    parser.add_argument("--trials", type=int, default=30, help="simulated tests per k inside each planner")
    parser.add_argument("--oracle-trials", type=int, default=0, help="0: the recorded oracle curves")
    parser.add_argument("--pilots", default="10,20,40")
    parser.add_argument("--methods", default="mixture,gaussian")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--populations", default="synthetic,real")
    args = parser.parse_args()
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        for name in args.populations.split(","):
            if args.oracle_trials:
                jobs = [(name, k, args.oracle_trials, 1000 + i) for i, k in enumerate(ORACLE_GRID)]
                curve = _isotonic(np.array(list(pool.map(_true_power, jobs))))
            else:
                curve = np.array(ORACLES[name])
            k_star = oracle_k(ORACLE_GRID, curve)
            print(f"\n{name}: oracle power " + ", ".join(f"k={k}: {p:.2f}" for k, p in zip(ORACLE_GRID, curve)))
            trials = args.oracle_trials or 150
            print(f"{name}: oracle k for {TARGET:.0%} power = {k_star:.1f} (±{1.96 * math.sqrt(0.16 / trials):.2f} "
                  "MC error on each oracle power)")
            print(f"{'pilot':>5} {'planner':>9} | {'true power at planned k: median [10 %, 90 %]':>44} | "
                  f"{'planned/oracle k: median [10 %, 90 %], max':>44} | > 3× | none")
            for pilot in (int(p) for p in args.pilots.split(",")):
                for method in args.methods.split(","):
                    jobs = [(name, pilot, method, args.trials, 7 * r + pilot) for r in range(args.replicates)]
                    ks = list(pool.map(_plan, jobs))
                    powers = np.array([power_at(k, ORACLE_GRID, curve) for k in ks])
                    ratios = np.array([(k if k is not None else 200) / k_star for k in ks])
                    pq = np.quantile(powers, [0.5, 0.1, 0.9])
                    rq = np.quantile(ratios, [0.5, 0.1, 0.9])
                    print(f"{pilot:>5} {method:>9} | {pq[0]:>21.2f} [{pq[1]:.2f}, {pq[2]:.2f}]{'':>9} | "
                          f"{rq[0]:>18.2f} [{rq[1]:.2f}, {rq[2]:.2f}], {ratios.max():.2f}{'':>6} | "
                          f"{np.mean(ratios > 3):.2f} | {sum(k is None for k in ks)}", flush=True)
    print(f"\n{args.replicates} pilots per row, {args.trials} simulated tests per k in each plan, B = {B}, "
          f"α = {ALPHA}, target {TARGET:.0%}, JSD on cosine; {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
