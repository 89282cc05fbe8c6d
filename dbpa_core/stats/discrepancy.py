r"""Step 3 of DBPA (Rauba, Wei & van der Schaar, ICML 2025, §3): the discrepancy ω between the two arms.

Two families share one permutation engine (:mod:`dbpa_core.stats.permutation`):

*Pair discrepancies* compare the 1-D distributions of similarities
P0 = {s(y_i, y_j) : i < j, both in the original arm} and
P1 = {s(y_i, y'_j) : all i, j} (paper §3, "distribution construction").
They are computed from integer histograms of those values, which the engine
fills by re-indexing a matrix of bin codes.

*Block discrepancies* are two-sample statistics on the outputs themselves:
a weighted sum of the means of a pooled matrix M over the blocks (A, A),
(B, B) and (A, B),

.. math::  T = a\,\overline{M}_{AA} + b\,\overline{M}_{BB} + c\,\overline{M}_{AB}.

A name → class registry (:data:`DISCREPANCIES`) maps the strings accepted by
:func:`dbpa_core.dbpa_test` to implementations; an instance may be passed
instead of a name to change its settings, e.g. ``JensenShannon(bins=50)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._validation import check_positive_float, check_positive_int
from .similarity import distance_from_similarity, embedding_similarity_matrix


@dataclass(frozen=True)
class PairSupport:
    """How P0 and P1 values are coded for histogramming (fixed for a test).

    ``codes[i, j]`` is the histogram cell of s(y_i, y_j); ``cell_values`` are
    the cell edges (JSD) or the sorted unique similarity values (W1, KS).
    ``codes`` has the smallest unsigned dtype that holds ``n_codes`` cells
    (see :func:`_cell_codes`).
    """

    codes: np.ndarray
    n_codes: int
    cell_values: np.ndarray
    degenerate: bool


def _cell_codes(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """``codes`` in the smallest unsigned dtype that holds ``n_codes`` cells.

    The permutation kernels spend their time on ``hist[codes[i, j]] += 1``:
    one-byte codes keep the whole n×n matrix in cache, and unsigned indices
    spare numba's wraparound check for negative indices (together about 2×
    faster at k = 200; ``bench/bench_permutation.py``).
    """
    return np.ascontiguousarray(codes, dtype=np.min_scalar_type(max(n_codes - 1, 0)))


class Discrepancy(ABC):
    """Base class: a named, frozen configuration of one ω."""

    name: ClassVar[str]
    kind: ClassVar[str]  # "pairs" or "blocks"
    label: ClassVar[str]
    reading: ClassVar[str]  # one plain sentence for the app


class PairDiscrepancy(Discrepancy):
    kind = "pairs"

    @abstractmethod
    def support(self, similarity: np.ndarray) -> PairSupport:
        """Code the off-diagonal similarities into histogram cells."""

    @abstractmethod
    def from_histograms(self, h0: np.ndarray, h1: np.ndarray, support: PairSupport) -> np.ndarray:
        """ω for a batch of histogram pairs of shape (batch, n_codes)."""


class BlockDiscrepancy(Discrepancy):
    kind = "blocks"
    coefficients: ClassVar[tuple[float, float, float]]  # (a, b, c) on AA, BB, AB means
    needs_embeddings: ClassVar[bool] = True

    @abstractmethod
    def matrix(self, embeddings: np.ndarray | None, similarity: np.ndarray, similarity_name: str) -> np.ndarray:
        """The pooled (n, n) matrix M whose block means define T."""

    def from_block_sums(self, sums: np.ndarray, k0: int, k1: int) -> np.ndarray:
        a, b, c = self.coefficients
        return a * sums[:, 0] / k0**2 + b * sums[:, 2] / k1**2 + c * sums[:, 1] / (k0 * k1)


def is_constant(values: np.ndarray) -> bool:
    spread = float(values.max() - values.min()) if values.size else 0.0
    return spread <= 1e-12 * max(1.0, float(np.abs(values).max(initial=0.0)))


def _off_diagonal(similarity: np.ndarray) -> np.ndarray:
    return similarity[np.triu_indices_from(similarity, k=1)]


# ---------------------------------------------------------------- pair family
@dataclass(frozen=True)
class JensenShannon(PairDiscrepancy):
    r"""Jensen–Shannon divergence between the histograms of P0 and P1.

    .. math::  \mathrm{JSD}(p, q) = \tfrac12 \mathrm{KL}(p \| m) + \tfrac12 \mathrm{KL}(q \| m),
               \quad m = \tfrac12 (p + q)

    The histograms have ``bins`` equal-width cells on the range [min, max] of
    *all* off-diagonal pooled similarities.  That range is the same for every
    permutation (it is a function of the pooled data), so the statistic is a
    fixed function of the split, as a permutation test requires; the reference
    code re-fitted the range per split.  ``base=2`` puts the divergence in
    [0, 1] bits.  With ``distance=True`` this is the JS *distance*
    √JSD in base e, the number the reference implementation reported
    (``scipy.spatial.distance.jensenshannon``'s default).
    """

    bins: int = 30
    base: float = 2.0
    distance: bool = False

    name: ClassVar[str] = "jsd"

    # ``js_distance`` is this class with ``distance=True``: its label and reading must say so, or a page
    # would show the square root in nats under the divergence's name and scale.
    @property
    def label(self) -> str:
        return "Jensen–Shannon distance (√JSD)" if self.distance else "Jensen–Shannon divergence"

    @property
    def reading(self) -> str:
        if self.distance:
            return ("The square root of the Jensen–Shannon divergence (in nats) between the within-original and "
                    "across-arm similarities: 0 for identical histograms, at most √ln 2 ≈ 0.83 (no overlap).")
        return ("How differently the within-original and across-arm similarities are spread, "
                "from 0 (identical histograms) to 1 bit (no overlap).")

    def __post_init__(self):
        check_positive_int(self.bins, "bins", minimum=2)
        base = check_positive_float(self.base, "base")
        if base == 1.0:
            raise ValueError("`base` of the logarithm must not be 1.")

    def support(self, similarity):
        return _binned_support(similarity, self.bins)

    def from_histograms(self, h0, h1, support):
        p = h0 / h0.sum(axis=1, keepdims=True)
        q = h1 / h1.sum(axis=1, keepdims=True)
        m = 0.5 * (p + q)
        with np.errstate(divide="ignore", invalid="ignore"):
            kl_p = np.where(p > 0, p * np.log(p / m), 0.0).sum(axis=1)
            kl_q = np.where(q > 0, q * np.log(q / m), 0.0).sum(axis=1)
        divergence_nats = np.maximum(0.5 * (kl_p + kl_q), 0.0)
        if self.distance:
            return np.sqrt(divergence_nats)
        return divergence_nats / np.log(self.base)


def _binned_support(similarity: np.ndarray, bins: int) -> PairSupport:
    """``bins`` equal cells on the range of all off-diagonal pooled similarities (fixed for every split)."""
    values = _off_diagonal(similarity)
    low, high = float(values.min()), float(values.max())
    degenerate = is_constant(values)
    edges = np.linspace(low, high if not degenerate else low + 1.0, bins + 1)
    # Same cell assignment as np.histogram: half-open cells, last one closed.
    codes = np.searchsorted(edges, similarity, side="right") - 1
    np.clip(codes, 0, bins - 1, out=codes)
    return PairSupport(_cell_codes(codes, bins), bins, edges, degenerate)


@dataclass(frozen=True)
class HistogramEuclidean(PairDiscrepancy):
    r"""Euclidean distance between the density histograms of P0 and P1: :math:`\lVert f_0 - f_1 \rVert_2`.

    :math:`f = \text{counts} / (n \cdot w)` on ``bins`` equal cells of width w over the range of all pooled
    similarities (as :class:`JensenShannon`: one range for every split), i.e. ``np.histogram(...,
    density=True)``.  This is our reading of the "Euclidean" column of the paper's appendix C.2 (Table 4),
    which the paper does not define: its printed values (32–57) are on the scale of density histograms of
    cosine similarities (tens per unit of similarity), not of distances between unit embeddings (≤ 2).
    """

    bins: int = 30

    name: ClassVar[str] = "euclidean"
    label: ClassVar[str] = "Euclidean distance of the similarity densities"
    reading: ClassVar[str] = (
        "How far apart the densities of within-original and across-arm similarities are, bin by bin "
        "(0 = identical histograms; larger when the similarities are concentrated in a narrow range)."
    )

    def __post_init__(self):
        check_positive_int(self.bins, "bins", minimum=2)

    def support(self, similarity):
        return _binned_support(similarity, self.bins)

    def from_histograms(self, h0, h1, support):
        width = support.cell_values[1] - support.cell_values[0]
        f0 = h0 / (h0.sum(axis=1, keepdims=True) * width)
        f1 = h1 / (h1.sum(axis=1, keepdims=True) * width)
        # A row-wise sum, not a matrix product: the result must not depend on the batch size.
        return np.sqrt(((f0 - f1) ** 2).sum(axis=1))


@dataclass(frozen=True)
class _EmpiricalCDFs(PairDiscrepancy):
    """Shared support for the exact 1-D statistics: cells are unique values.

    ``cdf_reduction`` ("integral" or "sup") names the same statistic for the
    engine's fused kernel (``_kernels.cdf_gaps``), which computes it pair by
    pair instead of materialising a batch of histograms over every unique
    value; :meth:`from_histograms` stays the reference it is tested against.
    """

    cdf_reduction: ClassVar[str]

    def support(self, similarity):
        values = _off_diagonal(similarity)
        unique, inverse = np.unique(similarity, return_inverse=True)
        codes = _cell_codes(inverse.reshape(similarity.shape), unique.size)
        return PairSupport(codes, unique.size, unique, is_constant(values))

    @staticmethod
    def _cdf_gap(h0, h1):
        return np.cumsum(h0, axis=1) / h0.sum(axis=1, keepdims=True) - np.cumsum(h1, axis=1) / h1.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Wasserstein(_EmpiricalCDFs):
    r"""Wasserstein-1 distance between P0 and P1: :math:`\int |F_0 - F_1|`.

    Exact (no binning): the CDFs jump at the sorted unique similarity values.
    Agrees with ``scipy.stats.wasserstein_distance(P0, P1)``.
    """

    name: ClassVar[str] = "wasserstein"
    cdf_reduction: ClassVar[str] = "integral"
    label: ClassVar[str] = "Wasserstein-1 distance"
    reading: ClassVar[str] = (
        "How far, in similarity units, the within-original similarities must move to match the across-arm ones."
    )

    def from_histograms(self, h0, h1, support):
        widths = np.diff(support.cell_values)
        # A row-wise sum, not a matrix product: BLAS blocking would make the
        # last bits depend on how many resamples share a batch.
        return (np.abs(self._cdf_gap(h0, h1)[:, :-1]) * widths).sum(axis=1)


@dataclass(frozen=True)
class KolmogorovSmirnov(_EmpiricalCDFs):
    r"""Kolmogorov–Smirnov distance between P0 and P1: :math:`\sup |F_0 - F_1|`.

    Agrees with ``scipy.stats.ks_2samp(P0, P1).statistic``.  Its p-value here
    comes from the permutation of outputs, not from the KS tables, because P0
    and P1 values are not independent.
    """

    name: ClassVar[str] = "ks"
    cdf_reduction: ClassVar[str] = "sup"
    label: ClassVar[str] = "Kolmogorov–Smirnov distance"
    reading: ClassVar[str] = (
        "The largest gap between the cumulative distributions of within-original and across-arm similarities."
    )

    def from_histograms(self, h0, h1, support):
        return np.abs(self._cdf_gap(h0, h1)).max(axis=1)


# --------------------------------------------------------------- block family
@dataclass(frozen=True)
class Energy(BlockDiscrepancy):
    r"""Energy distance (Székely & Rizzo 2013), V-statistic form.

    .. math::  \mathcal{E} = 2\,\overline{d}_{AB} - \overline{d}_{AA} - \overline{d}_{BB}

    with the distance d implied by ``similarity``: 1 − cosine, L1 or L2.  In
    one dimension with L2 this is the square of
    ``scipy.stats.energy_distance``.
    """

    name: ClassVar[str] = "energy"
    label: ClassVar[str] = "energy distance"
    reading: ClassVar[str] = (
        "How much farther apart outputs of different arms are than outputs of the same arm (0 = no difference)."
    )
    coefficients: ClassVar[tuple[float, float, float]] = (-1.0, -1.0, 2.0)
    needs_embeddings: ClassVar[bool] = False

    def matrix(self, embeddings, similarity, similarity_name):
        return distance_from_similarity(similarity, similarity_name)


@dataclass(frozen=True)
class MMD(BlockDiscrepancy):
    r"""Squared maximum mean discrepancy with a Gaussian (RBF) kernel, V-statistic.

    .. math::  \mathrm{MMD}^2 = \overline{K}_{AA} + \overline{K}_{BB} - 2\,\overline{K}_{AB},
               \quad K_{ij} = \exp\!\big(-\|e_i - e_j\|_2^2 / (2\sigma^2)\big)

    ``bandwidth=None`` uses the median heuristic: σ = median of the pooled
    pairwise Euclidean distances (Gretton et al. 2012), a function of the
    pooled data and hence the same for every permutation.
    """

    bandwidth: float | None = None

    name: ClassVar[str] = "mmd"
    label: ClassVar[str] = "MMD² (RBF kernel)"
    reading: ClassVar[str] = (
        "How different the two arms' embedding distributions are under a Gaussian kernel (0 = identical)."
    )
    coefficients: ClassVar[tuple[float, float, float]] = (1.0, 1.0, -2.0)

    def __post_init__(self):
        if self.bandwidth is not None:
            check_positive_float(self.bandwidth, "bandwidth")

    def matrix(self, embeddings, similarity, similarity_name):
        distance = -embedding_similarity_matrix(embeddings, "neg_l2")
        sigma = self.bandwidth
        if sigma is None:
            off = _off_diagonal(distance)
            sigma = float(np.median(off[off > 0])) if np.any(off > 0) else 1.0
        return np.exp(-(distance**2) / (2.0 * sigma**2))


@dataclass(frozen=True)
class Centroid(BlockDiscrepancy):
    r"""Squared distance between the arms' mean embeddings, :math:`\|\bar x_0 - \bar x_1\|^2`.

    The interactive exposition's statistic; equals MMD² with the linear
    kernel, i.e. block means of the Gram matrix of the embeddings.
    """

    name: ClassVar[str] = "centroid"
    label: ClassVar[str] = "centroid distance²"
    reading: ClassVar[str] = "The squared distance between the average output of each arm in embedding space."
    coefficients: ClassVar[tuple[float, float, float]] = (1.0, 1.0, -2.0)

    def matrix(self, embeddings, similarity, similarity_name):
        return embeddings @ embeddings.T


DISCREPANCIES: dict[str, type[Discrepancy]] = {
    cls.name: cls for cls in (JensenShannon, HistogramEuclidean, Wasserstein, KolmogorovSmirnov, Energy, MMD, Centroid)
}
"""Name → class; ``"js_distance"`` is JensenShannon(distance=True)."""


def get_discrepancy(discrepancy) -> Discrepancy:
    """Resolve a name or an instance to a :class:`Discrepancy`."""
    if isinstance(discrepancy, Discrepancy):
        return discrepancy
    if isinstance(discrepancy, str):
        key = discrepancy.lower()
        if key == "js_distance":
            return JensenShannon(distance=True)
        if key in DISCREPANCIES:
            return DISCREPANCIES[key]()
    names = ", ".join(repr(n) for n in [*DISCREPANCIES, "js_distance"])
    raise ValueError(f"`discrepancy` must be one of {names} or a Discrepancy instance; got {discrepancy!r}.")


DISCREPANCY_NAMES = (*DISCREPANCIES, "js_distance")
