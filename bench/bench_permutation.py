"""Benchmark of the DBPA permutation engine against two baselines.

(a) the reference implementation's approach: a Python loop that permutes the
    embeddings and recomputes every similarity (and histogram) per resample;
(b) ``scipy.stats.permutation_test`` with an index-permuting statistic on the
    precomputed similarity matrix.

Same data and seed for all three; the p-values must agree within Monte Carlo
error (for JSD, (a) bins each split on its own range as the reference code
did, so its statistic differs slightly from ours and (b)'s fixed range).  Prints the median wall time of ``--repeats`` runs and the ratios.

    python bench/bench_permutation.py            # the full grid
    python bench/bench_permutation.py --quick    # k=40, B=800 only
    python bench/bench_permutation.py --discrepancies ks wasserstein
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.spatial.distance import cdist, jensenshannon
from sklearn.metrics.pairwise import cosine_similarity

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import dbpa_core as d  # noqa: E402

DIM = 384  # all-MiniLM-L6-v2
CDF_STATISTICS = {
    "wasserstein": stats.wasserstein_distance,
    "ks": lambda p0, p1: stats.ks_2samp(p0, p1).statistic,
}
BASELINE_MAX_RESAMPLES = 1000  # slow baselines are timed on at most this many resamples, then scaled


def make_arms(k, rng):
    centre = rng.normal(size=DIM)
    x = centre + rng.normal(size=(k, DIM))
    y = centre + rng.normal(size=(k, DIM)) + 0.05
    return x, y


def cosine(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


def jsd_from_values(p0, p1, edges):
    h0, _ = np.histogram(p0, bins=edges)
    h1, _ = np.histogram(p1, bins=edges)
    return jensenshannon(h0, h1, base=2) ** 2


def reference_loop(x, y, discrepancy, n_resamples, rng):
    """Baseline (a), the reference implementation's approach: every resample re-splits the
    embeddings, recomputes the cosine similarities with scikit-learn, and builds 30-bin
    density histograms on that split's own [min, max] before scipy's JS distance."""
    pooled = np.vstack([x, y])
    k0 = len(x)

    def statistic(a, b):
        if discrepancy == "jsd":
            within = cosine_similarity(a)[np.triu_indices(len(a), k=1)]
            across = cosine_similarity(a, b).ravel()
            edges = np.linspace(min(within.min(), across.min()), max(within.max(), across.max()), 31)
            h0, _ = np.histogram(within, bins=edges, density=True)
            h1, _ = np.histogram(across, bins=edges, density=True)
            return jensenshannon(h0, h1)
        if discrepancy in CDF_STATISTICS:
            within = cosine_similarity(a)[np.triu_indices(len(a), k=1)]
            return CDF_STATISTICS[discrepancy](within, cosine_similarity(a, b).ravel())
        return 2 * cdist(a, b, "cosine").mean() - cdist(a, a, "cosine").mean() - cdist(b, b, "cosine").mean()

    observed = statistic(x, y)
    count = 0
    for _ in range(n_resamples):
        order = rng.permutation(len(pooled))
        count += statistic(pooled[order[:k0]], pooled[order[k0:]]) >= observed * (1 - 1e-12)
    return (1 + count) / (1 + n_resamples)


def scipy_indices(x, y, discrepancy, n_resamples, rng):
    """Baseline (b): scipy.stats.permutation_test permuting indices into a fixed matrix."""
    pooled = np.vstack([x, y])
    k0 = len(x)
    sim = cosine(pooled, pooled)
    dist = 1 - sim
    off = sim[np.triu_indices_from(sim, k=1)]
    edges = np.linspace(off.min(), off.max(), 31)

    def statistic(a, b):
        a, b = a.astype(int), b.astype(int)
        if discrepancy == "jsd":
            return jsd_from_values(sim[np.ix_(a, a)][np.triu_indices(len(a), k=1)], sim[np.ix_(a, b)].ravel(), edges)
        if discrepancy in CDF_STATISTICS:
            return CDF_STATISTICS[discrepancy](sim[np.ix_(a, a)][np.triu_indices(len(a), k=1)],
                                               sim[np.ix_(a, b)].ravel())
        return 2 * dist[np.ix_(a, b)].mean() - dist[np.ix_(a, a)].mean() - dist[np.ix_(b, b)].mean()

    res = stats.permutation_test((np.arange(k0), np.arange(k0, len(pooled))), statistic, vectorized=False,
                                 n_resamples=n_resamples, alternative="greater", rng=rng)
    return res.pvalue


def ours(x, y, discrepancy, n_resamples, rng):
    return d.dbpa_test(x, y, discrepancy=discrepancy, n_resamples=n_resamples, rng=rng).pvalue


def timed(function, repeats, *args):
    times, pvalue = [], None
    for run in range(repeats):
        start = time.perf_counter()
        pvalue = function(*args, np.random.default_rng(run))
        times.append(time.perf_counter() - start)
    return statistics.median(times), pvalue


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the exposition default k=40, B=800")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--discrepancies", nargs="+", default=["jsd", "energy"],
                        choices=["jsd", "energy", *CDF_STATISTICS], help="default: jsd energy (the issue's grid)")
    args = parser.parse_args(argv)
    grid = [(40, 800)] if args.quick else [(k, b) for k in (20, 40, 200) for b in (800, 10_000)]
    rng = np.random.default_rng(0)
    ours(*make_arms(5, rng), "jsd", 10, 0)  # compile the kernels outside the timings
    for discrepancy in args.discrepancies:
        ours(*make_arms(5, rng), discrepancy, 10, 0)
        ours(*make_arms(40, rng), discrepancy, 10, 0)  # large exact supports use another kernel

    header = (f"{'ω':7} {'k':>4} {'B':>6} | {'ours':>9} | {'ref loop (a)':>13} {'ratio':>7} | "
              f"{'scipy (b)':>11} {'ratio':>7} | p ours / (a) / (b)")
    print(header)
    print("-" * len(header))
    for discrepancy in args.discrepancies:
        for k, n_resamples in grid:
            x, y = make_arms(k, np.random.default_rng(k))
            t_ours, p_ours = timed(ours, args.repeats, x, y, discrepancy, n_resamples)
            baseline_b = min(n_resamples, BASELINE_MAX_RESAMPLES)
            scale = n_resamples / baseline_b
            t_ref, p_ref = timed(reference_loop, args.repeats, x, y, discrepancy, baseline_b)
            t_scipy, p_scipy = timed(scipy_indices, args.repeats, x, y, discrepancy, baseline_b)
            t_ref, t_scipy = t_ref * scale, t_scipy * scale
            note = f"  (baselines timed on {baseline_b} resamples, ×{scale:g})" if scale != 1 else ""
            print(f"{discrepancy:7} {k:>4} {n_resamples:>6} | {t_ours * 1e3:7.1f}ms | {t_ref * 1e3:11.0f}ms "
                  f"{t_ref / t_ours:6.0f}× | {t_scipy * 1e3:9.0f}ms {t_scipy / t_ours:6.0f}× | "
                  f"{p_ours:.4f} / {p_ref:.4f} / {p_scipy:.4f}{note}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
