"""One perturbation across many prompts (`dbpa_test_many`): time, power gain, and which ω has power.

    python bench/bench_many.py [--repetitions 100] [--n-resamples 199]

1. **Time** of a 100-prompt × k = 5 test at B = 1,000 (384-d vectors; goal ≤ 1 s), beside
   100 separate `dbpa_test` calls (the per-prompt route) and a naive loop that recomputes every
   prompt's P0/P1 histograms with NumPy per resample (timed on 20 resamples, scaled to 1,000).
2. **Power gain** on synthetic data where every prompt moves a little (100 prompts × k = 5,
   strong prompt effects): the stratified test against per-prompt tests + Bonferroni (any prompt
   rejected) and + Benjamini–Hochberg, on the same draws.
3. **Which ω** on the paper's real responses (``assets/paper/``, shipped MiniLM vectors):
   GPT-3.5 vs GPT-4 on the 9 prompts of a seed (the random patient and its 8 paraphrases),
   5 answers per prompt and model drawn without replacement from the 20 per repetition, every
   seed in turn; and the null: GPT-4 against GPT-4 (two disjoint draws of 5).  Rejection rates at
   α = 0.05, with per-prompt tests + Bonferroni beside.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dbpa_core as d  # noqa: E402
from dbpa_core.data.store import text_hash  # noqa: E402
from dbpa_core.paper.embeddings import load_shipped_embeddings, shipped_embeddings  # noqa: E402
from dbpa_core.paper.loaders import SEEDS, load_paraphrases  # noqa: E402
from dbpa_core.stats.discrepancy import DISCREPANCY_NAMES  # noqa: E402

ALPHA = 0.05
GPT35, GPT4 = "gpt-35-1106-vdsT-AE", "SWNorth-gpt-4-0613-20231016"


def synthetic(rng, m=100, k=5, dim=384, shift=0.0):
    centres = rng.normal(size=(m, dim)) * 3.0
    direction = rng.normal(size=dim)
    direction *= shift * math.sqrt(dim) / np.linalg.norm(direction)
    xs = [c + rng.normal(size=(k, dim)) for c in centres]
    ys = [c + direction + rng.normal(size=(k, dim)) for c in centres]
    return xs, ys


def naive_statistic(x, y, bins=30):
    """JSD of one split as a reference implementation computes it: similarities, then two histograms."""
    pooled = np.vstack([x, y])
    unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    sim = unit @ unit.T
    off = sim[np.triu_indices_from(sim, k=1)]
    k0 = len(x)
    h0, _ = np.histogram(sim[:k0, :k0][np.triu_indices(k0, k=1)], bins=bins, range=(off.min(), off.max()))
    h1, _ = np.histogram(sim[:k0, k0:], bins=bins, range=(off.min(), off.max()))
    p, q = h0 / h0.sum(), h1 / h1.sum()
    mid = (p + q) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return 0.5 * np.nansum(np.where(p > 0, p * np.log2(p / mid), 0)) + 0.5 * np.nansum(
            np.where(q > 0, q * np.log2(q / mid), 0))


def timing():
    rng = np.random.default_rng(0)
    xs, ys = synthetic(rng)
    print("## Time: 100 prompts × k = 5 per arm, 384-d, B = 1,000\n")
    print("| ω | dbpa_test_many | 100 × dbpa_test | naive loop (scaled) |")
    print("|---|---|---|---|")
    for omega in ("jsd", "energy"):
        d.dbpa_test_many(xs[:2], ys[:2], discrepancy=omega, rng=0)  # compile the kernels first
        d.dbpa_test(xs[0], ys[0], discrepancy=omega, rng=0)
        start = time.perf_counter()
        d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=1000, rng=0)
        many = time.perf_counter() - start
        start = time.perf_counter()
        for x, y in zip(xs, ys):
            d.dbpa_test(x, y, discrepancy=omega, n_resamples=1000, rng=0)
        separate = time.perf_counter() - start
        naive = "—"
        if omega == "jsd":
            start = time.perf_counter()
            for _ in range(20):
                for x, y in zip(xs, ys):
                    order = rng.permutation(len(x) + len(y))
                    pooled = np.vstack([x, y])[order]
                    naive_statistic(pooled[: len(x)], pooled[len(x):])
            naive = f"{(time.perf_counter() - start) * 50:.1f} s"
        print(f"| {omega} | {many:.3f} s | {separate:.3f} s | {naive} |")
    print()


def per_prompt_decisions(result):
    pvalues = [p.pvalue for p in result.per_prompt]
    return (d.adjust_pvalues(pvalues, "bonferroni").n_rejected > 0,
            d.adjust_pvalues(pvalues, "fdr_bh").n_rejected > 0)


def power_gain(repetitions, n_resamples):
    print(f"## Power: 100 prompts × k = 5, every prompt shifted a little ({repetitions} data sets, "
          f"B = {n_resamples})\n")
    print("| shift | ω | stratified | per-prompt + Bonferroni | per-prompt + BH |")
    print("|---|---|---|---|---|")
    for shift in (0.0, 0.1, 0.2):
        for omega in ("jsd", "energy"):
            rng = np.random.default_rng(1)
            hits = np.zeros(3)
            for _ in range(repetitions):
                xs, ys = synthetic(rng, dim=32, shift=shift)
                res = d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=n_resamples, rng=rng)
                hits += (res.pvalue <= ALPHA, *per_prompt_decisions(res))
            print(f"| {shift} | {omega} | " + " | ".join(f"{h / repetitions:.2f}" for h in hits) + " |")
    print()


def paper_arms():
    """{seed: (GPT-3.5's, GPT-4's) 9 groups of 20 vectors}, from the shipped MiniLM file."""
    shipped = shipped_embeddings()
    arms = {}
    for seed in SEEDS:
        pair = []
        for model in (GPT35, GPT4):
            run = load_paraphrases(model, seed)
            groups = [run.base, *run.paraphrases]
            found = load_shipped_embeddings([t for g in groups for t in g], embedder_key=shipped.embedder_key)
            pair.append([np.stack([found[text_hash(t)] for t in g]) for g in groups])
        arms[seed] = tuple(pair)
    return arms


def omega_comparison(repetitions, n_resamples, k=5):
    arms = paper_arms()
    print(f"## Which ω: the paper's GPT-3.5 vs GPT-4, 9 prompts × {k} answers ({repetitions} draws over the "
          f"5 seeds, B = {n_resamples})\n")
    print("First draw of seed 9 (answers 0–4 of each prompt), B = 1,000:\n")
    a, b = arms[SEEDS[0]]
    print("| ω | p (stratified) | smallest per-prompt p |")
    print("|---|---|---|")
    for omega in DISCREPANCY_NAMES:
        res = d.dbpa_test_many([g[:k] for g in a], [g[:k] for g in b], discrepancy=omega, n_resamples=1000, rng=0)
        print(f"| {omega} | {res.pvalue:.3f} | {min(p.pvalue for p in res.per_prompt):.3f} |")
    print("\nRejection rates at α = 0.05 (change: GPT-3.5 vs GPT-4; null: GPT-4 vs GPT-4):\n")
    print("| ω | change: stratified | change: per-prompt + Bonferroni | null: stratified |")
    print("|---|---|---|---|")
    for omega in DISCREPANCY_NAMES:
        rng = np.random.default_rng(2)
        change = bonferroni = null = 0
        for r in range(repetitions):
            a, b = arms[SEEDS[r % len(SEEDS)]]
            picks = [rng.permutation(20) for _ in a]
            xs = [g[p[:k]] for g, p in zip(a, picks)]
            ys = [g[p[k:2 * k]] for g, p in zip(b, picks)]
            res = d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=n_resamples, rng=rng)
            change += res.pvalue <= ALPHA
            bonferroni += per_prompt_decisions(res)[0]
            halves = d.dbpa_test_many([g[p[:k]] for g, p in zip(b, picks)], [g[p[k:2 * k]] for g, p in zip(b, picks)],
                                      discrepancy=omega, n_resamples=n_resamples, rng=rng)
            null += halves.pvalue <= ALPHA
        print(f"| {omega} | {change / repetitions:.2f} | {bonferroni / repetitions:.2f} | {null / repetitions:.2f} |")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--n-resamples", type=int, default=199)
    args = parser.parse_args()
    timing()
    power_gain(args.repetitions, args.n_resamples)
    omega_comparison(args.repetitions, args.n_resamples)


if __name__ == "__main__":
    main()
