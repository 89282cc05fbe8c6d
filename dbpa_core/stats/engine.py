"""The permutation engine of DBPA (Rauba, Wei & van der Schaar, ICML 2025, Algorithm 1).

The pooled outputs of two arms are compared once (paper §3, steps 2–3: one
similarity matrix, never recomputed); ω is then evaluated on batches of
re-splits by re-indexing the fixed matrices of
:mod:`dbpa_core.stats.discrepancy` in compiled kernels.  Both tests use it:
the fixed-k :func:`~dbpa_core.stats.permutation.dbpa_test` (random or
enumerated splits) and the group-sequential
:func:`~dbpa_core.stats.sequential.sequential_dbpa_test` (splits within
batches), so ω, P0, P1, ties and effect sizes are defined once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations

import numpy as np

from . import _kernels
from .discrepancy import Discrepancy, PairDiscrepancy, _EmpiricalCDFs, is_constant
from .similarity import TEXT_SIMILARITIES, _text_similarity_matrix, embedding_similarity_matrix

# Resamples handled per kernel call.  Results never depend on it (each row is
# reduced on its own), it only bounds the memory of the histogram batches.
_HISTOGRAM_CELLS_PER_BATCH = 2**23
# Above this many cells (the exact W1/KS supports), per-row counts would be
# too large and the kernel gathers the across-arm pairs directly instead.
_MAX_CELLS_FOR_ROW_COUNTS = 1024


@dataclass(frozen=True, eq=False)
class PooledComparison:
    """Two arms' outputs compared once: the engine every DBPA permutation test re-splits (Algorithm 1).

    The pooled outputs are embedded and compared once (paper §3, steps 2–3);
    :meth:`statistics` evaluates ω on a batch of splits by re-indexing that
    fixed similarity matrix in compiled kernels, never recomputing a
    similarity.  :func:`dbpa_test` draws its splits at random (or enumerates
    them); :func:`~dbpa_core.stats.sequential.sequential_dbpa_test` re-splits
    within batches: both read ω, P0, P1, the tie tolerance and the effect size
    from here.

    Attributes
    ----------
    similarity_matrix : ndarray of shape (n, n)
        Pooled similarities, the ``n_original`` original outputs first.
    n_original : int
    similarity : str
    discrepancy : Discrepancy
    degenerate : bool
        Every split gives the same ω (e.g. identical outputs): nothing can be tested.
    batch : int
        Resamples per kernel call (bounds memory only).
    """

    similarity_matrix: np.ndarray = field(repr=False)
    n_original: int
    similarity: str
    discrepancy: Discrepancy
    degenerate: bool
    batch: int
    evaluate: Callable[[np.ndarray], np.ndarray] = field(repr=False)

    @classmethod
    def build(cls, similarity_matrix, embeddings, n_original: int, similarity: str, omega: Discrepancy):
        """Precompute what ω needs from validated inputs (see :func:`pooled_comparison`)."""
        evaluate, degenerate, batch = _statistic_evaluator(omega, similarity_matrix, embeddings, n_original,
                                                           similarity)
        return cls(similarity_matrix, n_original, similarity, omega, degenerate, batch, evaluate)

    @property
    def n(self) -> int:
        return self.similarity_matrix.shape[0]

    def statistics(self, splits: np.ndarray) -> np.ndarray:
        """ω of each split: ``splits`` is (batch, n) pooled indices, arm 0 in its first ``n_original`` columns."""
        return self.evaluate(splits)

    @cached_property
    def observed(self) -> float:
        """ω of the observed split (T_obs)."""
        return float(self.statistics(np.arange(self.n, dtype=np.uint32)[None, :])[0])

    @property
    def within_similarities(self) -> np.ndarray:
        """P0: s(y_i, y_j), i < j, within the original arm."""
        k0 = self.n_original
        return self.similarity_matrix[:k0, :k0][np.triu_indices(k0, k=1)]

    @property
    def across_similarities(self) -> np.ndarray:
        """P1: s(y_i, y'_j) for every pair across the arms."""
        return self.similarity_matrix[: self.n_original, self.n_original :].ravel()


def pooled_comparison(x, y, *, similarity: str, discrepancy: Discrepancy) -> PooledComparison:
    """The :class:`PooledComparison` of two validated arms (embeddings, or texts for a text similarity)."""
    if similarity in TEXT_SIMILARITIES:
        matrix, embeddings = _text_similarity_matrix(list(x) + list(y), similarity), None
    else:
        embeddings = np.vstack([x, y])
        matrix = embedding_similarity_matrix(embeddings, similarity)
    return PooledComparison.build(matrix, embeddings, len(x), similarity, discrepancy)


def tie_tolerance(value):
    """Null values within this of ``value`` count as ties ("at least as extreme").

    A relative 100·machine-ε, as in ``scipy.stats.permutation_test``, so that
    floating-point noise cannot turn an equal value into a smaller one.
    """
    return np.abs(value) * np.finfo(np.float64).eps * 100


def effect_sizes(observed: float, null: np.ndarray) -> tuple[float, float]:
    """(T_obs − mean of the null, the same in null standard deviations; 0 for a constant null)."""
    spread = float(null.std())
    effect = observed - float(null.mean())
    return effect, effect / spread if spread > 0 else 0.0


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


def random_splits(rng: np.random.Generator, n: int, k0: int, size: int) -> np.ndarray:
    """``size`` uniformly random splits of range(n): arm 0 is each row's first k0 entries.

    Only the arm-0 positions are shuffled (the kernels never depend on the
    order within an arm), from k0 uniforms per row drawn in row order, so
    two batches of 50 consume the bit stream exactly as one batch of 100.
    """
    return _kernels.shuffled_prefixes(rng.random((size, k0)), n)


def enumerated_splits(n: int, k0: int, batch: int):
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
