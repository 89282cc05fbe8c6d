"""What changed: themes with false-discovery control and the outputs most characteristic of each arm.

A DBPA p-value (Rauba, Wei & van der Schaar, ICML 2025, Algorithm 1) says
*whether* the outputs moved; :func:`explain_change` says *how*, calibrated by
the same device: re-splitting the arm labels of the pooled outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .._validation import (MAX_RESAMPLES, MAX_SAMPLES, SAMPLES_WHY, check_positive_int, check_probability,
                           check_rng,
                           check_texts_embeddings)
from .corrections import adjust_pvalues
from .discrepancy import MMD
from .themes import (MAX_CLUSTERS, MIN_MEAN_CLUSTER_SIZE, N_INIT, RULE, _class_tfidf_terms, _cluster, _controller,
                     _share_pvalues, _typical)

__all__ = ["MAX_CLUSTERS", "MIN_MEAN_CLUSTER_SIZE", "N_INIT", "ChangeExplanation", "Representatives", "Theme",
           "explain_change"]

@dataclass(frozen=True)
class Theme:
    """One cluster of the pooled outputs and the test of its share difference.

    Attributes
    ----------
    cluster : int
        Its index in :attr:`ChangeExplanation.labels` (0 = the largest cluster).
    terms : tuple of str
        Its distinguishing words, highest class-based TF-IDF first.
    count_x, count_y : int
        Outputs of each arm in the cluster.
    share_x, share_y : float
        ``count_x / k0`` and ``count_y / k1``.
    pvalue : float
        Permutation p-value of |share_x − share_y|, (1 + #{T_b ≥ T_obs}) / (1 + B).
    qvalue : float
        Benjamini–Hochberg adjusted p-value across all clusters.
    significant : bool
        ``qvalue <= fdr``: the only themes that may be reported as findings.
    examples : tuple of str
        Its most typical outputs (closest to the cluster's mean direction).
    example_indices : tuple of int
        Their rows in the pooled outputs (arm x first: index < k0 is arm x).
    """

    cluster: int
    terms: tuple[str, ...]
    count_x: int
    count_y: int
    share_x: float
    share_y: float
    pvalue: float
    qvalue: float
    significant: bool
    examples: tuple[str, ...]
    example_indices: tuple[int, ...]


@dataclass(frozen=True)
class Representatives:
    """The outputs of one arm most characteristic of it, by the MMD witness.

    Attributes
    ----------
    arm : {"x", "y"}
    indices : tuple of int
        Rows of that arm's inputs, most characteristic first.
    texts : tuple of str
    witness : tuple of float
        Leave-one-out witness value toward this arm (mean Gaussian-kernel
        similarity to the other outputs of its own arm minus that to the
        other arm's outputs; 0 = equally close to both).
    """

    arm: str
    indices: tuple[int, ...]
    texts: tuple[str, ...]
    witness: tuple[float, ...]


@dataclass(frozen=True, eq=False)
class ChangeExplanation:
    """Result of :func:`explain_change`.

    Attributes
    ----------
    themes : tuple of Theme
        One per cluster, in cluster order (``themes[labels[i]]`` is output i's).
    representative : dict {"x": Representatives, "y": Representatives}
        A plain dict, so that the result pickles (the app's ``st.cache_data``).
    labels : ndarray of int, shape (k0 + k1,)
        The theme of each pooled output (arm x first), e.g. to colour a 2-D cloud.
    n_clusters : int
    candidates, silhouettes : tuple
        The numbers of clusters tried and their mean silhouettes (the rule's evidence).
    rule : str
        The rule that chose ``n_clusters``, in words.
    n_x, n_y : int
        Arm sizes k0, k1.
    n_resamples : int
        The re-splits counted: B, or every split C(k0 + k1, k0) when there are
        no more of them than B (``exact``).
    fdr : float
        The Benjamini–Hochberg level.
    bandwidth : float
        σ of the witness's Gaussian kernel (median heuristic on the pooled outputs).
    null_distribution : ndarray of shape (n_resamples, n_clusters)
        share_x − share_y of each cluster on each re-split (as scipy returns its null).
    exact : bool
        Every split of the pooled outputs was counted (p is exact), as
        :func:`dbpa_core.dbpa_test` does when C(k0 + k1, k0) ≤ B.
    """

    themes: tuple[Theme, ...]
    representative: dict[str, Representatives]
    labels: np.ndarray = field(repr=False)
    n_clusters: int
    candidates: tuple[int, ...]
    silhouettes: tuple[float, ...]
    rule: str
    n_x: int
    n_y: int
    n_resamples: int
    fdr: float
    bandwidth: float
    null_distribution: np.ndarray = field(repr=False)
    correction: str = "fdr_bh"
    exact: bool = False

    @property
    def significant_themes(self) -> tuple[Theme, ...]:
        """The themes declared at the FDR level, smallest q first."""
        return tuple(sorted((t for t in self.themes if t.significant), key=lambda t: (t.qvalue, t.cluster)))


def explain_change(texts_x, texts_y, emb_x, emb_y, *, fdr: float = 0.1, n_resamples: int = 1000,
                   max_clusters: int = MAX_CLUSTERS, n_terms: int = 5, n_examples: int = 3,
                   batch: int | None = None, rng=None) -> ChangeExplanation:
    r"""Explain how the outputs moved: themes whose share changed, with FDR control, and representative outputs.

    Parameters
    ----------
    texts_x, texts_y : sequence of str
        The outputs of the original (x) and the perturbed (y) arm, k0, k1 ≥ 2.
    emb_x, emb_y : array_like of shape (k0, dim) and (k1, dim)
        Their embeddings, row i of ``emb_x`` for ``texts_x[i]``; normalised to
        unit length here (any non-zero finite vectors are accepted).
    fdr : float
        Benjamini–Hochberg level in (0, 1) across the clusters (default 0.1).
    n_resamples : int
        B random re-splits of the arm labels (at most ``MAX_RESAMPLES``); when
        the pooled outputs have no more than B splits, every split is counted
        instead and p is exact, as in :func:`dbpa_core.dbpa_test`.
    max_clusters : int
        Largest number of clusters tried (≥ 2).
    n_terms, n_examples : int
        Words naming each theme; examples per theme and representatives per arm.
    batch : int, optional
        Re-splits counted per step; bounds memory only, the result is the same
        for every value.
    rng : numpy.random.Generator, int or None
        Seeds KMeans and the re-splits, keyword-only.

    Returns
    -------
    ChangeExplanation

    Notes
    -----
    **Number of clusters.**  k ranges over 2 … min(``max_clusters``, ⌊n / 5⌋,
    distinct outputs) for the n = k0 + k1 pooled outputs (on average at least
    five outputs a theme, so a theme is more than a couple of stray outputs);
    the k with the largest mean silhouette (Rousseeuw 1987) wins, ties to the
    smaller k.  Silhouette rather than the elbow or BIC because it needs no
    threshold and no distributional model of sentence embeddings.  KMeans on
    unit vectors is spherical k-means up to the centroid normalisation:
    clusters of cosine similarity, the paper's default similarity (§3).

    **Theme names.**  Class-based TF-IDF (Grootendorst 2022): each cluster's
    texts form one document; a term's weight is its frequency in the cluster
    times log(1 + A / f), A the mean number of words per cluster and f the
    term's count over all clusters, so words common to every theme rank low.

    **Test.**  The clusters never saw the arm labels, so they are a function
    of the pooled set alone: under H₀ every re-split of the labels is as
    likely as the observed one given the clusters, and no re-split needs
    re-clustering.  For cluster c with n_c outputs, of which a_c in arm x,
    T_c = abs(a_c / k0 − (n_c − a_c) / k1); over B re-splits (the DBPA engine's)
    p_c = (1 + #{T_c,b ≥ T_c}) / (1 + B) (Phipson & Smyth 2010: never 0),
    compared as the integers abs(n·a − k0·n_c), so ties are exact.  Given the
    clusters, a_c is hypergeometric under H₀: p_c estimates that exact tail,
    and is that tail when C(n, k0) ≤ B: then every split is counted once and
    p_c = #{T_c,s ≥ T_c} / C(n, k0), as the DBPA test's exact branch does.
    Benjamini–Hochberg (:func:`dbpa_core.adjust_pvalues`) runs across the
    clusters at ``fdr``.  The T_c are dependent (shares sum to 1), where BH's
    guarantee is not proven; on the paper's responses it held: any theme
    declared in 8.5 % (± 2.0) of null audits at ``fdr`` = 0.1 on 100 distinct
    GPT-3.5 answers and 5.0 % (± 1.5) on 100 distinct GPT-4 answers (random
    halves, 200 splits, ``bench/bench_explain.py --null``); 5.0 % also on 100
    GPT-3.5 texts of which only 20 are distinct (``tests/test_explain.py``).

    **Representatives: the MMD witness, not contributions to ω.**  The
    witness f(z) = mean k(z, x_i) − mean k(z, y_j) is the function along
    which the two arms' kernel mean embeddings differ most (Gretton et al.
    2012); with the Gaussian kernel of the package's MMD (median-heuristic σ)
    it scores *every* output, of either arm, by how much more it resembles
    one arm than the other.  ω itself (JSD between the histograms of P0 and
    P1) is not additive over outputs: an output's "contribution" would need
    a leave-one-out ω per output, which moves with the histogram bins, is
    asymmetric (P0 holds arm x only) and is noisy at small k.  The witness
    of an output is computed leave-one-out (its own k(z, z) = 1 left out),
    so a lone outlier does not look characteristic of its arm just by
    resembling itself.

    References
    ----------
    .. [1] Rauba, Wei & van der Schaar, "Statistical hypothesis testing for
       auditing robustness in language models", ICML 2025, Algorithm 1.
    .. [2] Gretton et al., "A kernel two-sample test", JMLR 13 (2012).
    .. [3] Benjamini & Hochberg, "Controlling the false discovery rate", JRSS B 57 (1995).
    .. [4] Grootendorst, "BERTopic: neural topic modeling with a class-based
       TF-IDF procedure", arXiv:2203.05794 (2022).
    .. [5] Rousseeuw, "Silhouettes", J. Comput. Appl. Math. 20 (1987).

    Examples
    --------
    >>> import numpy as np, dbpa_core as d
    >>> a, b = np.eye(3)[0], np.eye(3)[1]
    >>> emb_x = np.array([a] * 10); emb_y = np.array([a] * 2 + [b] * 8)
    >>> texts_x = ["the sky is blue"] * 10
    >>> texts_y = ["the sky is blue"] * 2 + ["mars is red"] * 8
    >>> e = d.explain_change(texts_x, texts_y, emb_x, emb_y, rng=0)
    >>> [(t.terms[:2], t.share_x, t.share_y, t.significant) for t in e.themes]
    [(('blue', 'sky'), 1.0, 0.2, True), (('mars', 'red'), 0.0, 0.8, True)]
    """
    texts_x, texts_y, emb_x, emb_y, fdr, n_resamples, max_clusters, n_terms, n_examples, batch, rng = (
        _explain_change_iv(texts_x, texts_y, emb_x, emb_y, fdr, n_resamples, max_clusters, n_terms, n_examples,
                           batch, rng))
    # One thread for BLAS and KMeans' OpenMP: their reductions could otherwise round differently
    # with the thread count (DESIGN: results for a seed never depend on it), and at these sizes
    # waking a second thread costs more than it saves (≈ 60 ms a product when the other core is busy).
    # The account is a function of each arm's outputs, not of the order they arrived in: both arms are put in
    # one canonical order first and every index is mapped back after.  A recorded backend replays the same
    # outputs in another order for another replicate, and the themes read "2 of 2 … differ" before a Resample
    # and "2 of 3" after it on identical outputs (trial 7): KMeans' starts depend on the row order.
    order_x, order_y = _canonical_order(texts_x, emb_x), _canonical_order(texts_y, emb_y)
    with _controller().limit(limits=1):
        found = _explain([texts_x[i] for i in order_x], [texts_y[i] for i in order_y], emb_x[order_x],
                         emb_y[order_y], fdr, n_resamples, max_clusters, n_terms, n_examples, batch, rng)
    return _in_caller_order(found, order_x, order_y)


def _canonical_order(texts: list[str], embeddings: np.ndarray) -> np.ndarray:
    """The rows of one arm sorted by text, then by embedding bytes (equal rows are interchangeable)."""
    return np.array(sorted(range(len(texts)), key=lambda i: (texts[i], embeddings[i].tobytes())), dtype=np.intp)


def _in_caller_order(found: ChangeExplanation, order_x: np.ndarray, order_y: np.ndarray) -> ChangeExplanation:
    """``found`` (computed on the canonically ordered arms) with every index and label in the caller's order."""
    pooled = np.concatenate([order_x, len(order_x) + order_y])  # canonical pooled row j is the caller's pooled[j]
    labels = np.empty_like(found.labels)
    labels[pooled] = found.labels
    themes = tuple(replace(theme, example_indices=tuple(int(pooled[j]) for j in theme.example_indices))
                   for theme in found.themes)
    orders = {"x": order_x, "y": order_y}
    representative = {arm: replace(chosen, indices=tuple(int(orders[arm][i]) for i in chosen.indices))
                      for arm, chosen in found.representative.items()}
    return replace(found, themes=themes, representative=representative, labels=labels)


def _explain_change_iv(texts_x, texts_y, emb_x, emb_y, fdr, n_resamples, max_clusters, n_terms, n_examples, batch,
                       rng):
    texts_x, emb_x = check_texts_embeddings(texts_x, emb_x, "texts_x", "emb_x")
    texts_y, emb_y = check_texts_embeddings(texts_y, emb_y, "texts_y", "emb_y")
    for name, size in (("texts_x", len(texts_x)), ("texts_y", len(texts_y))):
        if size > MAX_SAMPLES:
            raise ValueError(f"`{name}` holds {size:,} outputs; at most {MAX_SAMPLES:,} per arm ({SAMPLES_WHY}).")
    if emb_x.shape[1] != emb_y.shape[1]:
        raise ValueError(f"`emb_x` and `emb_y` must have the same embedding dimension; got {emb_x.shape[1]} and "
                         f"{emb_y.shape[1]}. Embed both arms with the same embedder.")
    return (texts_x, texts_y, emb_x, emb_y, check_probability(fdr, "fdr"),
            check_positive_int(n_resamples, "n_resamples", maximum=MAX_RESAMPLES),
            check_positive_int(max_clusters, "max_clusters", minimum=2),
            check_positive_int(n_terms, "n_terms"), check_positive_int(n_examples, "n_examples"),
            None if batch is None else check_positive_int(batch, "batch"), check_rng(rng))


def _explain(texts_x, texts_y, emb_x, emb_y, fdr, n_resamples, max_clusters, n_terms, n_examples, batch, rng):
    k0, k1 = len(texts_x), len(texts_y)
    texts = texts_x + texts_y
    pooled = np.vstack([emb_x, emb_y])
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    distance = np.sqrt(np.clip(2.0 - 2.0 * (pooled @ pooled.T), 0.0, None))  # ‖a − b‖ of unit vectors
    np.fill_diagonal(distance, 0.0)
    labels, candidates, silhouettes = _cluster(pooled, distance, max_clusters, rng)
    n_clusters = int(labels.max()) + 1
    pvalues, null, exact = _share_pvalues(labels, k0, n_clusters, n_resamples, batch, rng)
    adjusted = adjust_pvalues(pvalues, method="fdr_bh", alpha=fdr)
    names = _class_tfidf_terms(texts, labels, n_clusters, n_terms)
    counts_x = np.bincount(labels[:k0], minlength=n_clusters)
    counts_y = np.bincount(labels[k0:], minlength=n_clusters)
    themes = []
    for c in range(n_clusters):
        typical = _typical(pooled, labels, c, n_examples)
        themes.append(Theme(c, names[c], int(counts_x[c]), int(counts_y[c]), float(counts_x[c] / k0),
                            float(counts_y[c] / k1), float(pvalues[c]), float(adjusted.pvalues_adjusted[c]),
                            bool(adjusted.reject[c]), tuple(texts[i] for i in typical), tuple(map(int, typical))))
    representative, bandwidth = _witness_representatives(pooled, distance, texts, k0, n_examples)
    tried = f"{{{candidates[0]}}}" if len(candidates) == 1 else f"{{{candidates[0]}, …, {candidates[-1]}}}"
    rule = RULE.format(candidates=tried, n_init=N_INIT) if n_clusters > 1 else "one cluster: all outputs identical"
    return ChangeExplanation(
        themes=tuple(themes), representative=representative, labels=labels, n_clusters=n_clusters,
        candidates=candidates, silhouettes=silhouettes,
        rule=rule, n_x=k0, n_y=k1,
        n_resamples=len(null), fdr=fdr, bandwidth=bandwidth, null_distribution=null, exact=exact)


def _witness_representatives(pooled: np.ndarray, distance: np.ndarray, texts: list[str], k0: int, n_examples: int):
    """Each arm's outputs with the largest leave-one-out MMD witness toward their own arm, and σ."""
    # The package's MMD kernel (Gaussian) with its median heuristic: σ = median pooled distance.
    off = distance[np.triu_indices(len(distance), 1)]
    sigma = float(np.median(off[off > 0])) if np.any(off > 0) else 1.0
    gram = MMD(bandwidth=sigma).matrix(pooled, None, "cosine")
    n = len(pooled)
    k1 = n - k0
    to_x = gram[:, :k0].sum(axis=1)
    to_y = gram[:, k0:].sum(axis=1)
    diagonal = gram.diagonal()
    # Leave-one-out: an output's similarity to itself (= 1) is not evidence about its arm.
    witness_x = (to_x[:k0] - diagonal[:k0]) / max(k0 - 1, 1) - to_y[:k0] / k1
    witness_y = (to_y[k0:] - diagonal[k0:]) / max(k1 - 1, 1) - to_x[k0:] / k0
    representative = {}
    for arm, witness, offset in (("x", witness_x, 0), ("y", witness_y, k0)):
        top = np.argsort(-witness, kind="stable")[:n_examples]
        representative[arm] = Representatives(arm, tuple(int(i) for i in top),
                                              tuple(texts[offset + i] for i in top),
                                              tuple(float(witness[i]) for i in top))
    return representative, sigma
