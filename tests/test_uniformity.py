"""Tests of dbpa_core.rut.uniformity (RUT): calibration with ties, agreement with scipy, power."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dbpa_core import rank_uniformity_test
from dbpa_core.rut.uniformity import randomized_ranks, substitution_power


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


def test_power_curve_grows_with_q():
    rng = np.random.default_rng(4)
    reference_pool = rng.normal(size=(30, 12))
    alternative_pool = rng.normal(loc=1.5, size=(30, 4))
    power = substitution_power(reference_pool, alternative_pool, n_prompts=30, m=10, q_values=[0, 0.5, 1],
                               n_trials=60, rng=0)
    assert power.power[0] <= 0.15 and power.power[2] >= 0.95
    assert power.power[0] <= power.power[1] <= power.power[2]
    assert 0 < power.auc < 1 and power.auc_ks <= 1


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


def test_bad_method_and_power_inputs():
    with pytest.raises(ValueError, match="`method`"):
        rank_uniformity_test(np.ones(3), np.ones((3, 2)), method="ad")
    with pytest.raises(ValueError, match="`n_prompts`"):
        substitution_power(np.ones((3, 4)), np.ones((3, 2)), n_prompts=5, m=2)
    with pytest.raises(ValueError, match="`m` \\+ 1"):
        substitution_power(np.ones((3, 4)), np.ones((3, 2)), n_prompts=3, m=4)
    with pytest.raises(ValueError, match="`q_values`"):
        substitution_power(np.ones((3, 4)), np.ones((3, 2)), n_prompts=3, m=2, q_values=[1.5])
