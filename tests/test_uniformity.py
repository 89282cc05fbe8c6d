"""Tests of dbpa_core.rut.uniformity (RUT): calibration with ties, agreement with scipy, power."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dbpa_core import rank_uniformity_test
from dbpa_core.rut.uniformity import randomized_ranks, substituted_share_bound


def test_exact_ranks_without_ties():
    target = np.array([0.5, 2.5])
    reference = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    # L = 0 and 2, E = 0: r = (L + U) / 4
    ranks = randomized_ranks(target, reference, rng=0)
    u = np.random.default_rng(0).random(2)
    np.testing.assert_allclose(ranks, (np.array([0, 2]) + u) / 4, rtol=1e-15)


def test_ties_are_spread_by_the_uniform():
    target = np.full(2000, 2.0)
    reference = np.tile([1.0, 2.0, 2.0, 3.0], (2000, 1))  # L = 1, E = 2: r ∈ [1/5, 4/5)
    ranks = randomized_ranks(target, reference, rng=0)
    assert ranks.min() >= 0.2 and ranks.max() < 0.8
    assert stats.kstest((ranks - 0.2) / 0.6, "uniform").pvalue > 0.01


def test_statistic_agrees_with_scipy():
    rng = np.random.default_rng(1)
    result = rank_uniformity_test(rng.normal(size=40), rng.normal(size=(40, 15)), rng=2)
    reference = stats.cramervonmises(result.ranks, "uniform")
    assert result.statistic == pytest.approx(reference.statistic, rel=1e-14)
    assert result.pvalue == pytest.approx(reference.pvalue, rel=1e-12)
    assert result.ks_statistic == pytest.approx(stats.kstest(result.ranks, "uniform").statistic, rel=1e-14)


def _naive_pvalue(target, reference):
    """Ranks without the randomization (ties counted as 'below')."""
    naive = ((reference < target[:, None]).sum(axis=1) + 0.5) / (reference.shape[1] + 1)
    return stats.cramervonmises(naive, "uniform").pvalue


def test_type_one_error_with_heavy_ties_randomized_vs_naive():
    """Discrete scores in {0, 1, 2}: randomized ranks keep α, naive ranks do not."""
    rng = np.random.default_rng(2026)
    trials, rejected, naive_rejected = 1000, 0, 0
    for _ in range(trials):
        scores = rng.choice(3, size=(50, 11), p=[0.2, 0.5, 0.3]).astype(float)
        target, reference = scores[:, 0], scores[:, 1:]
        rejected += rank_uniformity_test(target, reference, rng=rng).pvalue <= 0.05
        naive_rejected += _naive_pvalue(target, reference) <= 0.05
    assert 0.03 <= rejected / trials <= 0.07  # binomial sd 0.0069
    assert naive_rejected / trials > 0.2


def test_null_calibration_continuous():
    rng = np.random.default_rng(7)
    pvalues = [rank_uniformity_test(rng.normal(size=30), rng.normal(size=(30, 8)), rng=rng).pvalue
               for _ in range(1000)]
    assert 0.03 <= np.mean(np.array(pvalues) <= 0.05) <= 0.07
    assert stats.kstest(pvalues, "uniform").pvalue > 0.01


def test_full_substitution_with_a_different_model_is_detected():
    rng = np.random.default_rng(3)
    reference = rng.normal(size=(40, 20))
    target = rng.normal(loc=1.0, size=40)  # the other model's scores sit higher
    assert rank_uniformity_test(target, reference, rng=0).pvalue < 1e-4


@pytest.mark.parametrize(("target", "reference", "match"), [
    (np.ones(1), np.ones((1, 3)), "`target_scores` must be 1-D"),
    (np.ones(3), np.ones(3), "`reference_scores` must be 2-D"),
    (np.ones(3), np.ones((2, 3)), "one row per prompt"),
    (np.array([1, np.nan, 2]), np.ones((3, 2)), "finite"),
    (["a", "b"], np.ones((2, 2)), "numeric"),
])
def test_bad_inputs(target, reference, match):
    with pytest.raises(ValueError, match=match):
        rank_uniformity_test(target, reference)


def test_bad_method():
    with pytest.raises(ValueError, match="`method`"):
        rank_uniformity_test(np.ones(3), np.ones((3, 2)), method="ad")


# ------------------------------------------------------------ the share bound
def _ks_statistics(ranks):
    ranks = np.sort(ranks, axis=1)
    n = ranks.shape[1]
    i = np.arange(1, n + 1)
    return np.maximum((i / n - ranks).max(axis=1), (ranks - (i - 1) / n).max(axis=1))


def _mixture_ranks(rng, audits, n, q, substitute):
    """Ranks of audits where each answer is substituted with probability q; ``substitute`` draws its ranks."""
    substituted = rng.random((audits, n)) < q
    return np.where(substituted, substitute(rng, (audits, n)), rng.random((audits, n)))


SUBSTITUTES = {
    # ranks piled at 0: sup|G − U| ≈ 1, the bound's tight case
    "near-point-mass": lambda rng, size: 0.01 * rng.random(size),
    "beta(2, 5)": lambda rng, size: rng.beta(2, 5, size),
    "two-sided": lambda rng, size: np.where(rng.random(size) < 0.5, 0.05, 0.95) * rng.random(size) ** 0.1,
}


@pytest.mark.parametrize("name", list(SUBSTITUTES))
@pytest.mark.parametrize("q", [0.0, 0.1, 0.3, 0.6, 1.0])
def test_share_bound_covers_the_true_share(name, q):
    rng = np.random.default_rng([list(SUBSTITUTES).index(name), round(10 * q)])
    audits, n = 2000, 100
    bound = substituted_share_bound(_ks_statistics(_mixture_ranks(rng, audits, n, q, SUBSTITUTES[name])), n)
    coverage = np.mean(bound <= q)
    # ≥ 95 % up to Monte Carlo error (sd 0.0049); the KS statistic alone (no subtraction) covers almost never.
    assert coverage >= 0.935, coverage


def test_share_bound_is_exact_at_q_zero_and_informative_above():
    rng = np.random.default_rng(8)
    audits, n = 4000, 100
    null = _ks_statistics(rng.random((audits, n)))
    # At q = 0 the bound covers exactly when KS does not reject: 95 %, not more (sd 0.0034) ...
    assert 0.94 <= np.mean(substituted_share_bound(null, n) <= 0) <= 0.96
    # ... so the 90 % quantile, used by mistake, is caught.
    assert np.mean(substituted_share_bound(null, n, confidence_level=0.9) <= 0) < 0.92
    ranks = _mixture_ranks(rng, audits, n, 0.3, SUBSTITUTES["near-point-mass"])
    assert 0.15 < np.median(substituted_share_bound(_ks_statistics(ranks), n)) < 0.3  # recovers most of q


def test_share_bound_with_a_prompt_dependent_share():
    """q(x) depends on the prompt: fixed prompts, the first ones always substituted (independent, not identical)."""
    rng = np.random.default_rng(9)
    audits, n = 2000, 100
    share = np.linspace(0, 1, n) ** 3  # q(x_i); their mean is the substituted share
    substituted = rng.random((audits, n)) < share
    ranks = np.where(substituted, SUBSTITUTES["near-point-mass"](rng, (audits, n)), rng.random((audits, n)))
    bound = substituted_share_bound(_ks_statistics(ranks), n)
    assert np.mean(bound <= share.mean()) >= 0.935


def test_share_bound_on_the_result_agrees_with_ks():
    rng = np.random.default_rng(10)
    for shift in (0.0, 0.4, 1.5):
        result = rank_uniformity_test(rng.normal(loc=shift, size=80), rng.normal(size=(80, 20)), rng=rng)
        expected = max(0.0, result.ks_statistic - stats.kstwo.ppf(0.95, 80))
        assert result.share_lower_bound == pytest.approx(expected, abs=1e-15)
        assert (result.share_lower_bound > 0) == (result.ks_pvalue < 0.05)
        assert result.confidence_level == 0.95
    target, reference = rng.normal(loc=1.5, size=80), rng.normal(size=(80, 20))
    usual = rank_uniformity_test(target, reference, rng=0)
    strict = rank_uniformity_test(target, reference, confidence_level=0.99, rng=0)
    assert 0 < strict.share_lower_bound < usual.share_lower_bound  # same ranks, a larger quantile


def test_share_bound_bad_inputs():
    with pytest.raises(ValueError, match="`confidence_level`"):
        substituted_share_bound(0.3, 100, confidence_level=1.0)
    with pytest.raises(ValueError, match="`n`"):
        substituted_share_bound(0.3, 0)
    with pytest.raises(ValueError, match="`confidence_level`"):
        rank_uniformity_test(np.ones(3), np.ones((3, 2)), confidence_level=95)
