"""Tests of dbpa_core.stats.discrepancy: each ω against an independent computation."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from scipy.spatial.distance import cdist, jensenshannon
from sklearn.metrics.pairwise import rbf_kernel

import dbpa_core as d
from dbpa_core.stats.discrepancy import DISCREPANCIES, MMD, JensenShannon, get_discrepancy


@pytest.fixture
def arms():
    rng = np.random.default_rng(42)
    return rng.normal(size=(9, 4)) + 0.5, rng.normal(size=(7, 4))


def observed(x, y, **kwargs):
    return d.dbpa_test(x, y, n_resamples=1, **kwargs)


def test_registry_names():
    assert set(DISCREPANCIES) == {"jsd", "euclidean", "wasserstein", "ks", "energy", "mmd", "centroid"}
    assert get_discrepancy("js_distance") == JensenShannon(distance=True)
    custom = MMD(bandwidth=2.0)
    assert get_discrepancy(custom) is custom


def test_jsd_base_and_distance_match_scipy(arms):
    x, y = arms
    res = observed(x, y, discrepancy="jsd")
    p0, p1 = res.within_similarities, res.across_similarities
    pooled = d.similarity_matrix(np.vstack(arms), "cosine")
    off = pooled[np.triu_indices_from(pooled, k=1)]
    h0, _ = np.histogram(p0, bins=30, range=(off.min(), off.max()))
    h1, _ = np.histogram(p1, bins=30, range=(off.min(), off.max()))
    assert_allclose(res.statistic, jensenshannon(h0, h1, base=2) ** 2, rtol=1e-12)
    res_distance = observed(x, y, discrepancy="js_distance")
    assert_allclose(res_distance.statistic, jensenshannon(h0, h1), rtol=1e-12)
    res_bins = observed(x, y, discrepancy=JensenShannon(bins=7, base=np.e))
    h0, _ = np.histogram(p0, bins=7, range=(off.min(), off.max()))
    h1, _ = np.histogram(p1, bins=7, range=(off.min(), off.max()))
    assert_allclose(res_bins.statistic, jensenshannon(h0, h1) ** 2, rtol=1e-12)


def test_euclidean_is_the_distance_of_numpy_density_histograms(arms):
    """Appendix C.2's "Euclidean": ‖f0 − f1‖₂ of np.histogram(density=True) on the pooled range."""
    x, y = arms
    res = observed(x, y, discrepancy="euclidean")
    pooled = d.similarity_matrix(np.vstack(arms), "cosine")
    off = pooled[np.triu_indices_from(pooled, k=1)]
    f0, _ = np.histogram(res.within_similarities, bins=30, range=(off.min(), off.max()), density=True)
    f1, _ = np.histogram(res.across_similarities, bins=30, range=(off.min(), off.max()), density=True)
    assert_allclose(res.statistic, np.linalg.norm(f0 - f1), rtol=1e-12)
    # a permutation test like any other ω: same p for any batch size, and identical arms are no change
    p = [d.dbpa_test(x, y, discrepancy="euclidean", n_resamples=300, batch=b, rng=1).pvalue for b in (1, 64)]
    assert p[0] == p[1]
    same = d.dbpa_test(x, x.copy(), discrepancy="euclidean", n_resamples=200, rng=0)
    assert same.pvalue > 0.2
    with pytest.raises(ValueError, match="`bins`"):
        get_discrepancy("euclidean").__class__(bins=1)


def test_jsd_bounds():
    # disjoint histograms reach the maximum of 1 bit
    x = np.array([[1.0, 0.0], [1.0, 0.0001], [0.9999, 0.0]])
    y = np.array([[0.0, 1.0], [0.0001, 1.0], [0.0, 0.9999]])
    res = observed(x, y, discrepancy="jsd")
    assert_allclose(res.statistic, 1.0, rtol=1e-12)


def test_wasserstein_and_ks_match_scipy(arms):
    x, y = arms
    for similarity in ("cosine", "neg_l2"):
        w = observed(x, y, discrepancy="wasserstein", similarity=similarity)
        k = observed(x, y, discrepancy="ks", similarity=similarity)
        p0, p1 = w.within_similarities, w.across_similarities
        assert_allclose(w.statistic, stats.wasserstein_distance(p0, p1), rtol=1e-10)
        assert_allclose(k.statistic, stats.ks_2samp(p0, p1).statistic, rtol=1e-12)


@pytest.mark.parametrize("similarity", ["cosine", "neg_l1"])
def test_wasserstein_and_ks_on_a_large_support_match_scipy(similarity):
    """Beyond 1 024 unique similarities the engine switches to a fused CDF kernel: same statistics."""
    from dbpa_core.stats.engine import _MAX_CELLS_FOR_ROW_COUNTS

    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(31, 5)), rng.normal(size=(29, 5)) + 0.3
    for name, reference in (("wasserstein", stats.wasserstein_distance),
                            ("ks", lambda a, b: stats.ks_2samp(a, b).statistic)):
        res = d.dbpa_test(x, y, discrepancy=name, similarity=similarity, n_resamples=50, rng=0)
        assert get_discrepancy(name).support(d.similarity_matrix(np.vstack([x, y]), similarity)).n_codes \
            > _MAX_CELLS_FOR_ROW_COUNTS
        assert_allclose(res.statistic, reference(res.within_similarities, res.across_similarities), rtol=1e-12)


def test_fused_cdf_kernel_equals_histograms_then_reduction():
    """Every resample of the fused kernel equals ω computed from the two histograms (1 225 cells)."""
    from dbpa_core.stats import _kernels
    from dbpa_core.stats.engine import _row_counts, random_splits

    rng = np.random.default_rng(8)
    pooled = rng.normal(size=(50, 3))
    sim = d.similarity_matrix(pooled, "neg_l2")
    perms = random_splits(rng, 50, 22, 300)
    for name in ("wasserstein", "ks"):
        omega = get_discrepancy(name)
        support = omega.support(sim)
        h0, h1 = _kernels._SERIAL["pair_histograms"](perms, 22, support.codes, support.n_codes)
        expected = omega.from_histograms(h0, h1, support)
        counts = _row_counts(support.codes, support.n_codes)
        for row_counts in (counts, np.zeros((0, 1), np.int64)):  # across pairs from row counts, or gathered
            fused = _kernels._SERIAL["cdf_gaps"](perms, 22, support.codes, np.diff(support.cell_values),
                                                 omega.cdf_reduction == "integral", row_counts)
            assert_allclose(fused, expected, rtol=1e-12)


def test_energy_one_dimension_matches_scipy():
    rng = np.random.default_rng(1)
    u, v = rng.normal(size=12), rng.normal(size=8) + 1
    res = observed(u[:, None], v[:, None], discrepancy="energy", similarity="neg_l2")
    # scipy returns the square root of the energy distance
    assert_allclose(res.statistic, stats.energy_distance(u, v) ** 2, rtol=1e-12)


def test_energy_cosine_matches_direct_computation(arms):
    x, y = arms
    res = observed(x, y, discrepancy="energy", similarity="cosine")
    expected = 2 * cdist(x, y, "cosine").mean() - cdist(x, x, "cosine").mean() - cdist(y, y, "cosine").mean()
    assert_allclose(res.statistic, expected, rtol=1e-12)


def test_mmd_matches_sklearn_kernel(arms):
    x, y = arms
    pooled = np.vstack(arms)
    distances = cdist(pooled, pooled)
    sigma = np.median(distances[np.triu_indices_from(distances, k=1)])
    gamma = 1 / (2 * sigma**2)
    expected = rbf_kernel(x, x, gamma=gamma).mean() + rbf_kernel(y, y, gamma=gamma).mean() \
        - 2 * rbf_kernel(x, y, gamma=gamma).mean()
    assert_allclose(observed(x, y, discrepancy="mmd").statistic, expected, rtol=1e-10)
    gamma = 1 / (2 * 3.0**2)
    expected = rbf_kernel(x, x, gamma=gamma).mean() + rbf_kernel(y, y, gamma=gamma).mean() \
        - 2 * rbf_kernel(x, y, gamma=gamma).mean()
    assert_allclose(observed(x, y, discrepancy=MMD(bandwidth=3.0)).statistic, expected, rtol=1e-10)


def test_centroid_is_squared_mean_distance(arms):
    x, y = arms
    expected = np.sum((x.mean(axis=0) - y.mean(axis=0)) ** 2)
    assert_allclose(observed(x, y, discrepancy="centroid").statistic, expected, rtol=1e-10)


@pytest.mark.parametrize(("make", "match"), [
    (lambda: JensenShannon(bins=1), "`bins`"),
    (lambda: JensenShannon(base=1), "`base`"),
    (lambda: JensenShannon(base=-2), "`base`"),
    (lambda: MMD(bandwidth=0), "`bandwidth`"),
    (lambda: get_discrepancy(3), "`discrepancy` must be one of"),
])
def test_bad_settings(make, match):
    with pytest.raises(ValueError, match=match):
        make()
