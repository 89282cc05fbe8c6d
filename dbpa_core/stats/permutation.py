"""Step 4 of DBPA: permutation inference (Rauba, Wei & van der Schaar, ICML 2025, Algorithm 1).

The pooled outputs are embedded and compared once; each resample re-splits
the pooled indices and re-indexes the fixed matrices of
:mod:`dbpa_core.stats.discrepancy`, in batches handled by compiled kernels.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from . import _kernels
from .._validation import check_choice, check_embeddings, check_positive_int, check_rng, check_texts
from .discrepancy import BlockDiscrepancy, Discrepancy, PairDiscrepancy, _EmpiricalCDFs, get_discrepancy, is_constant
from .similarity import EMBEDDING_SIMILARITIES, SIMILARITIES, TEXT_SIMILARITIES, embedding_similarity_matrix
from .similarity import _text_similarity_matrix

ALTERNATIVES = ("greater", "less", "two-sided")
#: Largest B accepted: the null distribution alone takes 8·B bytes, and
#: 10⁶ resamples already resolve p-values down to 10⁻⁶ (Bonferroni over a
#: thousand perturbations at α = 0.05 needs 5·10⁻⁵).
MAX_RESAMPLES = 1_000_000

# Resamples handled per kernel call.  Results never depend on it (each row is
# reduced on its own), it only bounds the memory of the histogram batches.
_HISTOGRAM_CELLS_PER_BATCH = 2**23
# Above this many cells (the exact W1/KS supports), per-row counts would be
# too large and the kernel gathers the across-arm pairs directly instead.
_MAX_CELLS_FOR_ROW_COUNTS = 1024


class DegenerateSampleWarning(RuntimeWarning):
    """The outputs carry no information to test (e.g. all identical)."""


@dataclass(frozen=True, eq=False)
class DBPAResult:
    """Result of :func:`dbpa_test`.

    Attributes
    ----------
    statistic : float
        The observed discrepancy ω(P0, P1) (T_obs).
    pvalue : float
        Permutation p-value: (1 + #{T_b ≥ T_obs}) / (1 + B) for randomized
        resampling, #{T_b ≥ T_obs} / B when all splits were enumerated
        (``exact``); the mirror images for ``alternative="less"``.
    null_distribution : ndarray
        The statistic on each resample, returned so that another p-value
        definition can be applied (as scipy does).
    effect_size : float
        T_obs minus the mean of the null: the discrepancy beyond what chance
        alone produces with these sample sizes, in ω's own units.
    standardized_effect : float
        ``effect_size`` divided by the null's standard deviation (0 if the null
        is constant).
    n_original, n_perturbed : int
        Arm sizes k0, k1.
    n_resamples : int
        Number of resamples actually used (all splits when ``exact``).
    exact : bool
        True when every distinct split was enumerated.
    similarity, discrepancy, alternative : str
        Settings used; ``discrepancy`` is the instance's repr (with its options).
    within_similarities, across_similarities : ndarray
        The observed P0 and P1 values (for histograms).
    warnings : tuple of str
        Warnings issued while testing (also emitted with :mod:`warnings`).
    """

    statistic: float
    pvalue: float
    null_distribution: np.ndarray = field(repr=False)
    effect_size: float
    standardized_effect: float
    n_original: int
    n_perturbed: int
    n_resamples: int
    exact: bool
    similarity: str
    discrepancy: str
    alternative: str
    within_similarities: np.ndarray = field(repr=False)
    across_similarities: np.ndarray = field(repr=False)
    warnings: tuple[str, ...] = ()


def dbpa_test(
    x,
    y,
    *,
    similarity: str = "cosine",
    discrepancy: str | Discrepancy = "jsd",
    n_resamples: int = 1000,
    alternative: str = "greater",
    batch: int | None = None,
    rng=None,
) -> DBPAResult:
    r"""Test whether a perturbation changed the distribution of outputs.

    Distribution-based perturbation analysis (Rauba, Wei & van der Schaar,
    ICML 2025): the outputs of the original arm ``x`` and the perturbed arm
    ``y`` are pooled, the discrepancy ω between P0 (similarities within ``x``)
    and P1 (similarities across arms) is observed, and its null distribution
    is obtained by re-splitting the pooled outputs at random.

    Parameters
    ----------
    x, y : array_like of shape (k0, dim) and (k1, dim), or sequences of str
        Embeddings of the original and the perturbed outputs (texts for the
        text similarities ``"bleu"`` and ``"rouge_l"``).  k0, k1 ≥ 2; the arms
        may differ in size.
    similarity : {"cosine", "neg_l1", "neg_l2", "bleu", "rouge_l"}
        Similarity s between two outputs; computed once on the pooled outputs.
    discrepancy : str or Discrepancy
        ω: ``"jsd"`` (default), ``"js_distance"``, ``"wasserstein"``, ``"ks"``,
        ``"energy"``, ``"mmd"``, ``"centroid"``, or an instance from
        :mod:`dbpa_core.stats.discrepancy` with its own settings.
    n_resamples : int
        Number of random splits B, at most :data:`MAX_RESAMPLES`.  When the number of distinct splits
        C(k0 + k1, k0) is at most B, all of them are enumerated instead and
        the p-value is exact.
    alternative : {"greater", "less", "two-sided"}
        "greater" (default): a large ω is evidence of a change.
    batch : int, optional
        Resamples evaluated per compiled call; bounds memory only, the result
        is the same for every value.
    rng : numpy.random.Generator, int or None
        Source of randomness, keyword-only; the result for a fixed seed does
        not depend on batch size or thread count.

    Returns
    -------
    DBPAResult

    Notes
    -----
    The randomized p-value adds one to numerator and denominator, counting the
    observed split among the resamples, so it is never 0 and the test is
    exactly of level α (Phipson & Smyth 2010).  Null values within a relative
    100·machine-ε of T_obs count as ties (as in ``scipy.stats.permutation_test``)
    so that rounding cannot decide a comparison.

    When every pooled output is identical, no split can differ from another;
    the test then returns p = 1 with a :class:`DegenerateSampleWarning`
    rather than a meaningless small p-value (a defect of the reference code).

    References
    ----------
    .. [1] Rauba, Wei & van der Schaar, "Statistical hypothesis testing for
       auditing robustness in language models", ICML 2025, Algorithm 1.
    .. [2] Phipson & Smyth, "Permutation p-values should never be zero",
       Stat. Appl. Genet. Mol. Biol. 9 (2010).

    Examples
    --------
    >>> import numpy as np, dbpa_core as d
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(20, 8)); y = rng.normal(size=(20, 8)) + 1.0
    >>> d.dbpa_test(x, y, rng=1).pvalue < 0.01
    True
    """
    x, y, similarity, omega, n_resamples, alternative, batch, rng = _dbpa_test_iv(
        x, y, similarity, discrepancy, n_resamples, alternative, batch, rng
    )
    k0 = len(x)
    if similarity in TEXT_SIMILARITIES:
        embeddings = None
        similarity_matrix = _text_similarity_matrix(list(x) + list(y), similarity)
    else:
        embeddings = np.vstack([x, y])
        similarity_matrix = embedding_similarity_matrix(embeddings, similarity)
    return _test_on_matrix(similarity_matrix, embeddings, k0, similarity, omega, n_resamples, alternative, batch, rng)


def dbpa_test_precomputed(
    similarity_matrix,
    n_original: int,
    *,
    discrepancy: str | Discrepancy = "jsd",
    n_resamples: int = 1000,
    alternative: str = "greater",
    batch: int | None = None,
    rng=None,
) -> DBPAResult:
    """:func:`dbpa_test` on a precomputed pooled similarity matrix.

    Parameters
    ----------
    similarity_matrix : array_like of shape (n, n)
        Symmetric similarities of the pooled outputs, the ``n_original``
        original outputs first.  Any similarity works (a judge score, a
        domain metric); larger means more alike.
    n_original : int
        k0, the size of the original arm; the remaining n − k0 rows are the
        perturbed arm.
    discrepancy, n_resamples, alternative, batch, rng
        As in :func:`dbpa_test`.  Discrepancies that need the embeddings
        themselves (``"mmd"``, ``"centroid"``) are not available here;
        ``"energy"`` uses the distance 1 − s.

    Returns
    -------
    DBPAResult
    """
    matrix, k0, omega, n_resamples, alternative, batch, rng = _dbpa_test_precomputed_iv(
        similarity_matrix, n_original, discrepancy, n_resamples, alternative, batch, rng
    )
    return _test_on_matrix(matrix, None, k0, "precomputed", omega, n_resamples, alternative, batch, rng)


def _dbpa_test_precomputed_iv(similarity_matrix, n_original, discrepancy, n_resamples, alternative, batch, rng):
    matrix = check_embeddings(similarity_matrix, "similarity_matrix", min_rows=4)
    if matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"`similarity_matrix` must be square (n, n); got shape {matrix.shape}.")
    if not np.allclose(matrix, matrix.T, rtol=1e-10, atol=1e-12):
        raise ValueError("`similarity_matrix` must be symmetric: s(a, b) = s(b, a).")
    n = matrix.shape[0]
    k0 = check_positive_int(n_original, "n_original", minimum=2)
    if n - k0 < 2:
        raise ValueError(f"`n_original` must leave at least 2 perturbed outputs; got {k0} of {n} rows.")
    omega = get_discrepancy(discrepancy)
    if isinstance(omega, BlockDiscrepancy) and omega.needs_embeddings:
        raise ValueError(
            f"`discrepancy={omega.name!r}` needs embeddings; with a precomputed similarity "
            "matrix use 'jsd', 'js_distance', 'wasserstein', 'ks' or 'energy'."
        )
    return (matrix, k0, omega, *_resampling_iv(n_resamples, alternative, batch, rng))


def _resampling_iv(n_resamples, alternative, batch, rng):
    """The checks :func:`dbpa_test` and :func:`dbpa_test_precomputed` share."""
    n_resamples = check_positive_int(n_resamples, "n_resamples", maximum=MAX_RESAMPLES)
    alternative = check_choice(alternative, "alternative", ALTERNATIVES)
    batch = None if batch is None else check_positive_int(batch, "batch")
    return n_resamples, alternative, batch, check_rng(rng)


def _dbpa_test_iv(x, y, similarity, discrepancy, n_resamples, alternative, batch, rng):
    similarity = check_choice(similarity, "similarity", SIMILARITIES)
    if similarity in TEXT_SIMILARITIES:
        x, y = check_texts(x, "x"), check_texts(y, "y")
    else:
        x, y = check_embeddings(x, "x"), check_embeddings(y, "y")
        if x.shape[1] != y.shape[1]:
            raise ValueError(
                f"`x` and `y` must have the same embedding dimension; got {x.shape[1]} and {y.shape[1]}. "
                "Embed both arms with the same embedder."
            )
    omega = get_discrepancy(discrepancy)
    if similarity in TEXT_SIMILARITIES and isinstance(omega, BlockDiscrepancy) and omega.needs_embeddings:
        raise ValueError(
            f"`discrepancy={omega.name!r}` needs embeddings, but `similarity={similarity!r}` works on texts; "
            f"use one of {EMBEDDING_SIMILARITIES} or a pair discrepancy such as 'jsd'."
        )
    return (x, y, similarity, omega, *_resampling_iv(n_resamples, alternative, batch, rng))


def _test_on_matrix(similarity_matrix, embeddings, k0, similarity, omega, n_resamples, alternative, batch, rng):
    n = similarity_matrix.shape[0]
    k1 = n - k0
    upper = np.triu_indices(k0, k=1)
    within = similarity_matrix[:k0, :k0][upper]
    across = similarity_matrix[:k0, k0:].ravel()
    evaluate, degenerate, default_batch = _statistic_evaluator(omega, similarity_matrix, embeddings, k0, similarity)
    batch = batch or default_batch

    observed = float(evaluate(np.arange(n, dtype=np.uint32)[None, :])[0])
    n_splits = math.comb(n, k0)
    exact = n_splits <= n_resamples
    issued: list[str] = []

    if degenerate:
        message = (
            "All pooled outputs are equally similar to each other (e.g. identical outputs), so no split "
            "can differ from another: returning p = 1. Raise the temperature or check the sampler."
        )
        warnings.warn(message, DegenerateSampleWarning, stacklevel=3)
        issued.append(message)
        size = n_splits if exact else n_resamples
        null = np.full(size, observed)
        return DBPAResult(observed, 1.0, null, 0.0, 0.0, k0, k1, size, exact, similarity, repr(omega),
                          alternative, within, across, tuple(issued))

    if exact:
        null = np.concatenate([evaluate(splits) for splits in _enumerated_splits(n, k0, batch)])
    else:
        null = np.concatenate([
            evaluate(_random_splits(rng, n, k0, min(batch, n_resamples - start)))
            for start in range(0, n_resamples, batch)
        ])

    pvalue = _pvalue(observed, null, alternative, exact)
    spread = float(null.std())
    effect = observed - float(null.mean())
    return DBPAResult(
        statistic=observed,
        pvalue=pvalue,
        null_distribution=null,
        effect_size=effect,
        standardized_effect=effect / spread if spread > 0 else 0.0,
        n_original=k0,
        n_perturbed=k1,
        n_resamples=int(null.size),
        exact=exact,
        similarity=similarity,
        discrepancy=repr(omega),
        alternative=alternative,
        within_similarities=within,
        across_similarities=across,
        warnings=tuple(issued),
    )


def _statistic_evaluator(omega, similarity_matrix, embeddings, k0, similarity):
    """Precompute what ω needs once.

    Returns the evaluator perms (batch, n) → statistics (batch,), whether
    the input is degenerate (every split would give the same statistic
    because the matrix ω reads is constant off and on the diagonal), and the
    number of resamples to evaluate per call.
    """
    n = similarity_matrix.shape[0]
    if isinstance(omega, PairDiscrepancy):
        support = omega.support(similarity_matrix)
        if isinstance(omega, _EmpiricalCDFs):
            # Fused kernel: ω straight from the pairs, no batch of histograms.
            # Per-row counts pay off only with fewer cells than perturbed outputs.
            by_rows = support.n_codes <= min(_MAX_CELLS_FOR_ROW_COUNTS, n - k0)
            row_counts = _row_counts(support.codes, support.n_codes) if by_rows else np.zeros((0, 1), np.int64)
            widths = np.diff(support.cell_values)
            integral = omega.cdf_reduction == "integral"

            def evaluate(perms):
                work = len(perms) * (k0 * k0 // 2 + k0 * (support.n_codes if by_rows else n - k0) + support.n_codes)
                return _kernels.pick("cdf_gaps", work)(perms, k0, support.codes, widths, integral, row_counts)

            return evaluate, support.degenerate, _batch_size(1)
        if support.n_codes <= _MAX_CELLS_FOR_ROW_COUNTS:
            row_counts = _row_counts(support.codes, support.n_codes)

            def histograms(perms):
                work = len(perms) * (k0 * k0 // 2 + k0 * support.n_codes)
                return _kernels.pick("pair_histograms_by_rows", work)(perms, k0, support.codes, row_counts)
        else:

            def histograms(perms):
                work = len(perms) * k0 * (n - k0 // 2)
                return _kernels.pick("pair_histograms", work)(perms, k0, support.codes, support.n_codes)

        def evaluate(perms):
            h0, h1 = histograms(perms)
            return omega.from_histograms(h0, h1, support)

        return evaluate, support.degenerate, _batch_size(support.n_codes)
    matrix = np.ascontiguousarray(omega.matrix(embeddings, similarity_matrix, similarity), dtype=np.float64)
    row_sums = matrix.sum(axis=1)
    total = float(row_sums.sum())

    def evaluate(perms):
        sums = _kernels.pick("block_sums", len(perms) * k0 * k0)(perms, k0, matrix, row_sums, total)
        return omega.from_block_sums(sums, k0, n - k0)

    off_diagonal = matrix[np.triu_indices(n, k=1)]
    degenerate = is_constant(off_diagonal) and is_constant(matrix.diagonal())
    return evaluate, degenerate, _batch_size(1)


def _row_counts(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """counts[i, c] = #{j ≠ i : codes[i, j] = c}."""
    n = codes.shape[0]
    counts = np.zeros((n, n_codes), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(n), n), codes.ravel()), 1)
    counts[np.arange(n), codes.diagonal()] -= 1
    return counts


def _batch_size(n_cells: int) -> int:
    """Resamples per kernel call so that a batch's two histograms stay bounded."""
    return max(1, min(4096, _HISTOGRAM_CELLS_PER_BATCH // (2 * n_cells)))


def _random_splits(rng: np.random.Generator, n: int, k0: int, size: int) -> np.ndarray:
    """``size`` uniformly random splits of range(n): arm 0 is each row's first k0 entries.

    Only the arm-0 positions are shuffled (the kernels never depend on the
    order within an arm), from k0 uniforms per row drawn in row order, so
    two batches of 50 consume the bit stream exactly as one batch of 100.
    """
    return _kernels.shuffled_prefixes(rng.random((size, k0)), n)


def _enumerated_splits(n: int, k0: int, batch: int):
    """All C(n, k0) splits as rows (arm 0 first), in lexicographic order."""
    everything = np.arange(n)
    rows = []
    for chosen in combinations(range(n), k0):
        mask = np.ones(n, dtype=bool)
        mask[list(chosen)] = False
        rows.append(np.concatenate([chosen, everything[mask]]))
        if len(rows) == batch:
            yield np.asarray(rows, dtype=np.uint32)
            rows = []
    if rows:
        yield np.asarray(rows, dtype=np.uint32)


def _pvalue(observed: float, null: np.ndarray, alternative: str, exact: bool) -> float:
    # Ties within a relative 100 eps of T_obs count as "at least as extreme",
    # so floating-point noise cannot turn an equal value into a smaller one.
    gamma = abs(observed) * np.finfo(np.float64).eps * 100
    adjustment = 0 if exact else 1
    size = null.size + adjustment

    def greater():
        return (np.count_nonzero(null >= observed - gamma) + adjustment) / size

    def less():
        return (np.count_nonzero(null <= observed + gamma) + adjustment) / size

    if alternative == "greater":
        return float(greater())
    if alternative == "less":
        return float(less())
    return float(min(1.0, 2 * min(greater(), less())))
