"""What changed, the label-blind steps: clustering the pooled outputs, each cluster's share p-value, its name.

Split from :mod:`dbpa_core.stats.explain` (which assembles them into a
:class:`~dbpa_core.stats.explain.ChangeExplanation`).  Nothing here sees which
arm an output came from except :func:`_share_pvalues`, which re-splits the arm
labels over fixed clusters (the permutation argument of ``explain_change``).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from .engine import enumerated_splits, random_splits

#: The largest number of clusters tried by default.
MAX_CLUSTERS = 8
#: Fewest outputs per cluster on average: k ≤ n / MIN_MEAN_CLUSTER_SIZE.
MIN_MEAN_CLUSTER_SIZE = 5
#: KMeans restarts (k-means++ seeding) per candidate k.
N_INIT = 4
# Cluster indices of at most this many resampled outputs are counted per batch
# (bounds memory for B = 10⁶; results never depend on it).
_CELLS_PER_BATCH = 2**22
RULE = ("k in {candidates} maximising the mean silhouette (Euclidean distance between unit vectors) of "
        "KMeans (k-means++, {n_init} starts) on the pooled outputs, arm labels unseen")


@cache
def _controller():
    """threadpoolctl's view of the loaded thread pools (found once: a lookup takes ≈ 20 ms)."""
    import sklearn.cluster  # noqa: F401 - loads the OpenMP runtime, so that the controller sees it
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _cluster(pooled: np.ndarray, distance: np.ndarray, max_clusters: int, rng: np.random.Generator):
    """Cluster labels (0 = the largest cluster), the k tried and their silhouettes."""
    from sklearn.cluster import KMeans  # lazy: scikit-learn is not needed by the test itself
    from sklearn.metrics import silhouette_score

    n = len(pooled)
    seed = int(rng.integers(2**31 - 1))
    # Outputs with an identical earlier output (distance 0) add no cluster.
    distinct = n - int(np.triu(distance < 1e-9, 1).any(axis=0).sum())
    top = min(max_clusters, n // MIN_MEAN_CLUSTER_SIZE, distinct)
    candidates = tuple(range(2, max(2, top) + 1)) if distinct >= 2 else ()
    if not candidates:  # every output identical: one theme, nothing to compare
        return np.zeros(n, dtype=np.intp), (1,), (float("nan"),)
    best, scores = None, []
    for k in candidates:
        labels = KMeans(n_clusters=k, n_init=N_INIT, random_state=seed).fit(pooled).labels_
        score = float(silhouette_score(distance, labels, metric="precomputed"))
        scores.append(score)
        if best is None or score > best[0] + 1e-12:
            best = (score, labels)
    return _relabel(best[1]), candidates, tuple(scores)


def _relabel(labels: np.ndarray) -> np.ndarray:
    """Number clusters by size, largest first (ties: the one holding the earlier output first)."""
    ids = np.unique(labels)
    order = sorted(ids, key=lambda c: (-np.count_nonzero(labels == c), int(np.argmax(labels == c))))
    mapping = np.empty(ids.max() + 1, dtype=np.intp)
    mapping[order] = np.arange(len(order))
    return mapping[labels]


def _share_pvalues(labels: np.ndarray, k0: int, n_clusters: int, n_resamples: int, batch: int | None,
                   rng: np.random.Generator):
    """Permutation p-values of each cluster's |share_x − share_y| and the null of share_x − share_y.

    All re-splits are counted at once per batch: the cluster of every
    re-split's first k0 outputs, one bincount over (resample, cluster) cells.
    Returns the p-values, the null and whether it is exact: every one of the
    C(n, k0) splits counted once, when there are no more of them than B (the
    DBPA test's rule, :func:`dbpa_core.stats.permutation._resample`).
    """
    n = len(labels)
    k1 = n - k0
    sizes = np.bincount(labels, minlength=n_clusters).astype(np.int64)
    # n·a − k0·n_c = k0·k1·(share_x − share_y): integers, so ties are exact.
    observed = np.abs(n * np.bincount(labels[:k0], minlength=n_clusters) - k0 * sizes)
    batch = batch or max(1, _CELLS_PER_BATCH // n)
    n_splits = math.comb(n, k0)
    exact = n_splits <= n_resamples
    if exact:
        blocks = enumerated_splits(n, k0, batch)
    else:
        # The arm-x positions of random splits, drawn row by row as dbpa_test draws them,
        # so the splits (and p-values) do not depend on the batch size.
        blocks = (random_splits(rng, n, k0, min(batch, n_resamples - start))
                  for start in range(0, n_resamples, batch))
    exceed = np.zeros(n_clusters, dtype=np.int64)
    gaps_per_block = []
    for splits in blocks:
        size = len(splits)
        cells = labels[splits[:, :k0]] + (np.arange(size) * n_clusters)[:, None]
        counts = np.bincount(cells.ravel(), minlength=size * n_clusters).reshape(size, n_clusters)
        gaps = n * counts - k0 * sizes
        exceed += np.count_nonzero(np.abs(gaps) >= observed, axis=0)
        gaps_per_block.append(gaps / (k0 * k1))
    null = np.concatenate(gaps_per_block)
    if exact:  # the observed split is one of those counted: no +1 (Phipson & Smyth's exact case)
        return exceed / n_splits, null, True
    return (1 + exceed) / (1 + n_resamples), null, False


def _class_tfidf_terms(texts: list[str], labels: np.ndarray, n_clusters: int, n_terms: int):
    """The ``n_terms`` highest class-based TF-IDF words of each cluster (Grootendorst 2022, eq. 1)."""
    from sklearn.feature_extraction.text import CountVectorizer

    documents = [" ".join(texts[i] for i in np.flatnonzero(labels == c)) for c in range(n_clusters)]
    # Words of two or more characters that start with a letter: numbers ("114/61", "30") rarely name a theme.
    vectorizer = CountVectorizer(stop_words="english", token_pattern=r"(?u)\b[^\W\d_][\w'-]*\w\b")
    try:
        counts = vectorizer.fit_transform(documents).toarray().astype(np.float64)
    except ValueError:  # no word at all (empty outputs, only stop words or numbers)
        return [()] * n_clusters
    vocabulary = vectorizer.get_feature_names_out()
    words_per_class = counts.sum(axis=1, keepdims=True)
    frequency = np.divide(counts, words_per_class, out=np.zeros_like(counts), where=words_per_class > 0)
    idf = np.log(1.0 + counts.sum() / n_clusters / counts.sum(axis=0))
    scores = frequency * idf
    names = []
    for row in scores:
        # Stable sort of −score: equal scores keep the vocabulary's alphabetical order.
        order = np.argsort(-row, kind="stable")
        names.append(tuple(str(vocabulary[i]) for i in order[:n_terms] if row[i] > 0))
    return names


def _typical(pooled: np.ndarray, labels: np.ndarray, cluster: int, n_examples: int) -> np.ndarray:
    """Members of ``cluster`` closest (cosine) to its mean direction, most typical first."""
    members = np.flatnonzero(labels == cluster)
    centre = pooled[members].mean(axis=0)
    similarity = pooled[members] @ centre
    return members[np.argsort(-similarity, kind="stable")[:n_examples]]
