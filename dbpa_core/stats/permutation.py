"""Step 4 of DBPA: permutation inference (Rauba, Wei & van der Schaar, ICML 2025, Algorithm 1).

The pooled outputs are embedded and compared once; each resample re-splits
the pooled indices and re-indexes the fixed matrices of
:mod:`dbpa_core.stats.discrepancy`, in batches handled by compiled kernels
(:mod:`dbpa_core.stats.engine`, shared with the sequential test).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .._validation import (MAX_RESAMPLES, check_choice, check_embeddings, check_n_resamples, check_positive_int,
                           check_rng, check_test_size, check_texts)
from .discrepancy import BlockDiscrepancy, Discrepancy, get_discrepancy
from .resolution import ALPHA_OVER_M, pvalue_floor, resampling_floor, resolution_warning  # noqa: F401
from .engine import (PooledComparison, effect_sizes, enumerated_splits, pooled_comparison, random_splits,
                     tie_tolerance)
from .similarity import EMBEDDING_SIMILARITIES, SIMILARITIES, TEXT_SIMILARITIES

__all__ = ["ALTERNATIVES", "DEGENERATE", "MAX_RESAMPLES", "DBPAResult", "DegenerateSampleWarning", "ResolutionWarning",
           "as_extreme", "check_measures", "dbpa_test", "dbpa_test_precomputed", "pvalue_floor",
           "resampling_floor", "resolution_warning"]

ALTERNATIVES = ("greater", "less", "two-sided")


class DegenerateSampleWarning(RuntimeWarning):
    """The outputs carry no information to test (e.g. all identical)."""


class ResolutionWarning(UserWarning):
    """The test cannot reach the level asked for: its smallest possible p-value is above it."""


#: The start of the warning every test issues on degenerate outputs (each adds what it returns).
DEGENERATE = ("All pooled outputs are equally similar to each other (e.g. identical outputs), so no split can "
              "differ from another")


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
    kind : {"fixed"}
        The design: k fixed in advance (a :class:`~dbpa_core.stats.sequential.SequentialResult`
        says ``"sequential"``); pages and exports branch on it.
    """

    kind: ClassVar[str] = "fixed"

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
    return _resample(pooled_comparison(x, y, similarity=similarity, discrepancy=omega), n_resamples, alternative,
                     batch, rng)


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
    engine = PooledComparison.build(matrix, None, k0, "precomputed", omega)
    return _resample(engine, n_resamples, alternative, batch, rng)


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
    check_test_size(k0, n - k0, check_n_resamples(n_resamples), names=("n_original", "similarity_matrix"))
    omega = get_discrepancy(discrepancy)
    if isinstance(omega, BlockDiscrepancy) and omega.needs_embeddings:
        raise ValueError(
            f"`discrepancy={omega.name!r}` needs embeddings; with a precomputed similarity "
            "matrix use 'jsd', 'js_distance', 'wasserstein', 'ks' or 'energy'."
        )
    return (matrix, k0, omega, *_resampling_iv(n_resamples, alternative, batch, rng))


def _resampling_iv(n_resamples, alternative, batch, rng):
    """The checks :func:`dbpa_test` and :func:`dbpa_test_precomputed` share."""
    n_resamples = check_n_resamples(n_resamples)
    alternative = check_choice(alternative, "alternative", ALTERNATIVES)
    batch = None if batch is None else check_positive_int(batch, "batch")
    return n_resamples, alternative, batch, check_rng(rng)


def check_measures(similarity, discrepancy) -> tuple[str, Discrepancy]:
    """The similarity (normalised name) and ω (an instance) of a test, checked to work together.

    Shared by every DBPA test (fixed k and sequential): a text similarity
    cannot feed a discrepancy that needs the embeddings themselves.
    """
    similarity = check_choice(similarity, "similarity", SIMILARITIES)
    omega = get_discrepancy(discrepancy)
    if similarity in TEXT_SIMILARITIES and isinstance(omega, BlockDiscrepancy) and omega.needs_embeddings:
        raise ValueError(
            f"`discrepancy={omega.name!r}` needs embeddings, but `similarity={similarity!r}` works on texts; "
            f"use one of {EMBEDDING_SIMILARITIES} or a pair discrepancy such as 'jsd'."
        )
    return similarity, omega


def _dbpa_test_iv(x, y, similarity, discrepancy, n_resamples, alternative, batch, rng):
    similarity, omega = check_measures(similarity, discrepancy)
    if similarity in TEXT_SIMILARITIES:
        x, y = check_texts(x, "x"), check_texts(y, "y")
    else:
        x, y = check_embeddings(x, "x"), check_embeddings(y, "y")
        if x.shape[1] != y.shape[1]:
            raise ValueError(
                f"`x` and `y` must have the same embedding dimension; got {x.shape[1]} and {y.shape[1]}. "
                "Embed both arms with the same embedder."
            )
    check_test_size(len(x), len(y), check_n_resamples(n_resamples))
    return (x, y, similarity, omega, *_resampling_iv(n_resamples, alternative, batch, rng))


def _resample(engine: PooledComparison, n_resamples, alternative, batch, rng) -> DBPAResult:
    n, k0 = engine.n, engine.n_original
    batch = batch or engine.batch
    observed = engine.observed
    n_splits = math.comb(n, k0)
    exact = n_splits <= n_resamples
    issued: list[str] = []
    settings = dict(n_original=k0, n_perturbed=n - k0, exact=exact, similarity=engine.similarity,
                    discrepancy=repr(engine.discrepancy), alternative=alternative,
                    within_similarities=engine.within_similarities,
                    across_similarities=engine.across_similarities)

    if engine.degenerate:
        message = f"{DEGENERATE}: returning p = 1. Raise the temperature or check the sampler."
        warnings.warn(message, DegenerateSampleWarning, stacklevel=3)
        issued.append(message)
        size = n_splits if exact else n_resamples
        return DBPAResult(statistic=observed, pvalue=1.0, null_distribution=np.full(size, observed),
                          effect_size=0.0, standardized_effect=0.0, n_resamples=size, warnings=tuple(issued),
                          **settings)

    if exact:
        null = np.concatenate([engine.statistics(splits) for splits in enumerated_splits(n, k0, batch)])
    else:
        null = np.concatenate([
            engine.statistics(random_splits(rng, n, k0, min(batch, n_resamples - start)))
            for start in range(0, n_resamples, batch)
        ])
    effect, standardized = effect_sizes(observed, null)
    return DBPAResult(statistic=observed, pvalue=_pvalue(observed, null, alternative, exact),
                      null_distribution=null, effect_size=effect, standardized_effect=standardized,
                      n_resamples=int(null.size), warnings=tuple(issued), **settings)


def as_extreme(null, observed: float, alternative: str = "greater") -> np.ndarray:
    """Which re-splits are as or more extreme than ``observed``: the p-value's numerator, one rule for all.

    A re-split within :func:`tie_tolerance` of T_obs counts as a tie (≥), so
    that a split equal to the observed one up to floating-point error (a
    mirror split) is counted; the null chart reads its tail through this same
    function, so its "n of B ≥ the observed" is the p-value's numerator.
    ``alternative="two-sided"`` marks the upper tail (the chart's).
    """
    null = np.asarray(null, dtype=float)
    gamma = tie_tolerance(observed)
    return null <= observed + gamma if alternative == "less" else null >= observed - gamma


def _pvalue(observed: float, null: np.ndarray, alternative: str, exact: bool) -> float:
    adjustment = 0 if exact else 1
    size = null.size + adjustment

    def greater():
        return (np.count_nonzero(as_extreme(null, observed, "greater")) + adjustment) / size

    def less():
        return (np.count_nonzero(as_extreme(null, observed, "less")) + adjustment) / size

    if alternative == "greater":
        return float(greater())
    if alternative == "less":
        return float(less())
    return float(min(1.0, 2 * min(greater(), less())))
