"""Benchmark of dbpa_core.explain_change ("What changed") after embedding.

    python bench/bench_explain.py [--repeats 5]
    DBPA_THREADS=1 nice python bench/bench_explain.py --null [--splits 200]   # the null rate on distinct texts

Real text: GPT-3.5 against GPT-4 answers to the paper's paraphrase prompts
(§4.2; 200 of each, the shipped MiniLM vectors, nothing embedded), B = 1000.
Prints the median wall and CPU time of the whole explanation and of its
steps, and for the permutation step the vectorised count (all B re-splits in
one bincount) against a naive loop that re-splits and counts one resample at
a time, with the ratio and a check that both give the same p-values.

``--null``: the share of null audits declaring any theme at FDR 0.1, on
distinct texts (the shipped answers repeat: GPT-3.5's 800 answers hold 160
distinct texts, each recorded on 5 seeds; GPT-4's 800 are all distinct).  Per
split: 100 distinct answers of one model drawn at random, halved 50/50 at
random, ``explain_change`` with B = 500.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dbpa_core.data.store import text_hash  # noqa: E402
from dbpa_core.stats import explain as module  # noqa: E402
from dbpa_core.stats import themes  # noqa: E402

from dbpa_core import paper  # noqa: E402


def arms(k: int):
    shipped = paper.shipped_embeddings()
    texts = {}
    for model in ("gpt-35-1106-vdsT-AE", "SWNorth-gpt-4-0613-20231016"):
        runs = [paper.load_paraphrases(model, seed) for seed in paper.SEEDS]
        texts[model] = [t for run in runs for arm in run.paraphrases for t in arm][:k]
    return [(t, shipped.vectors[[shipped.rows[text_hash(x)] for x in t]].astype(np.float64))
            for t in texts.values()]


def timed(function, repeats: int):
    """Median wall and CPU seconds of ``function()`` and its last result."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def naive_pvalues(labels, k0, n_clusters, n_resamples, rng):
    """The baseline: one re-split at a time, a Python loop over B."""
    n = len(labels)
    sizes = np.bincount(labels, minlength=n_clusters)
    observed = np.abs(n * np.bincount(labels[:k0], minlength=n_clusters) - k0 * sizes)
    exceed = np.zeros(n_clusters, dtype=np.int64)
    for _ in range(n_resamples):
        chosen = labels[rng.permutation(n)[:k0]]
        exceed += np.abs(n * np.bincount(chosen, minlength=n_clusters) - k0 * sizes) >= observed
    return (1 + exceed) / (1 + n_resamples)


def null_rate(splits: int, fdr: float = 0.1) -> None:
    """Share of null audits (random halves of 100 distinct answers of one model) declaring any theme at ``fdr``."""
    shipped = paper.shipped_embeddings()
    for model in ("gpt-35-1106-vdsT-AE", "SWNorth-gpt-4-0613-20231016"):
        texts = [t for s in paper.SEEDS for arm in paper.load_paraphrases(model, s).paraphrases for t in arm]
        distinct = list(dict.fromkeys(texts))
        rng = np.random.default_rng(2026)
        declared = unadjusted = 0
        for _ in range(splits):
            arm = [distinct[i] for i in rng.choice(len(distinct), size=100, replace=False)]
            vectors = shipped.vectors[[shipped.rows[text_hash(t)] for t in arm]].astype(np.float64)
            order = rng.permutation(100)
            a, b = order[:50], order[50:]
            e = module.explain_change([arm[i] for i in a], [arm[i] for i in b], vectors[a], vectors[b], fdr=fdr,
                                      n_resamples=500, rng=rng)
            declared += bool(e.significant_themes)
            unadjusted += any(t.pvalue <= fdr for t in e.themes)
        se = np.sqrt(declared / splits * (1 - declared / splits) / splits)
        print(f"{model}: {len(texts)} answers, {len(distinct)} distinct; any theme at FDR {fdr}: {declared}/{splits} "
              f"= {declared / splits:.3f} (± {se:.3f}); any theme with p ≤ {fdr} unadjusted: "
              f"{unadjusted / splits:.3f}", flush=True)

def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--null", action="store_true", help="the null rate on distinct texts, not the timings")
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("-k", type=int, default=200, help="outputs per arm")
    parser.add_argument("-B", type=int, default=1000, help="re-splits")
    args = parser.parse_args()
    if args.null:
        null_rate(args.splits)
        return
    (texts_x, emb_x), (texts_y, emb_y) = arms(args.k)
    module.explain_change(texts_x[:10], texts_y[:10], emb_x[:10], emb_y[:10], rng=0)  # imports, numba cache
    wall, cpu, result = timed(lambda: module.explain_change(texts_x, texts_y, emb_x, emb_y, n_resamples=args.B,
                                                            rng=0), args.repeats)
    print(f"explain_change, k = {args.k} per arm, B = {args.B}, {result.n_clusters} themes "
          f"({len(result.significant_themes)} significant): {wall * 1000:7.1f} ms wall, {cpu * 1000:7.1f} ms CPU "
          f"(target ≤ 1000 ms)")

    pooled = np.vstack([emb_x, emb_y])
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    texts = texts_x + texts_y
    k0, labels, c = len(texts_x), result.labels, result.n_clusters
    with themes._controller().limit(limits=1):
        distance = np.sqrt(np.clip(2.0 - 2.0 * (pooled @ pooled.T), 0.0, None))
        np.fill_diagonal(distance, 0.0)
        steps = {
            "clustering (KMeans × k, silhouette)": lambda: themes._cluster(pooled, distance, themes.MAX_CLUSTERS,
                                                                          np.random.default_rng(0)),
            "permutation p-values (vectorised)": lambda: themes._share_pvalues(labels, k0, c, args.B, None,
                                                                               np.random.default_rng(0)),
            "theme names (class-based TF-IDF)": lambda: themes._class_tfidf_terms(texts, labels, c, 5),
            "representatives (MMD witness)": lambda: module._witness_representatives(pooled, distance, texts, k0, 3),
        }
        for name, step in steps.items():
            step_wall, step_cpu, _ = timed(step, args.repeats)
            print(f"  {name:40} {step_wall * 1000:7.1f} ms wall, {step_cpu * 1000:7.1f} ms CPU")
    fast_wall, _, (fast, _) = timed(lambda: themes._share_pvalues(labels, k0, c, args.B, None,
                                                                  np.random.default_rng(1)), args.repeats)
    slow_wall, _, slow = timed(lambda: naive_pvalues(labels, k0, c, args.B, np.random.default_rng(1)), args.repeats)
    print(f"permutation step: vectorised {fast_wall * 1000:.2f} ms vs naive per-re-split loop "
          f"{slow_wall * 1000:.1f} ms: {slow_wall / fast_wall:.0f}× faster")
    exact = [exact_pvalue(len(labels), k0, int((labels == i).sum()), int((labels[:k0] == i).sum())) for i in range(c)]
    print(f"  p-values (each ± {np.sqrt(0.05 * 0.95 / args.B):.3f} Monte Carlo s.e. near 0.05): ours "
          f"{np.round(fast, 3).tolist()}, loop {np.round(slow, 3).tolist()}, exact hypergeometric "
          f"{np.round(exact, 3).tolist()}")


def exact_pvalue(n, k0, size, in_x):
    """The exact permutation tail given the clusters (the count in arm x is hypergeometric under H₀)."""
    from scipy import stats

    support = np.arange(max(0, size - (n - k0)), min(size, k0) + 1)
    pmf = stats.hypergeom(n, size, k0).pmf(support)
    return min(1.0, pmf[np.abs(n * support - k0 * size) >= abs(n * in_x - k0 * size)].sum())


if __name__ == "__main__":
    main()
