"""plan_sample_size: the power it delivers on populations whose truth is known, its curve, and bad input.

The oracle curves below are bench/bench_planner.py's (150 tests per k, B = 199, JSD on cosine, α = 0.05):
the true power of DBPA at each k on that population.  A plan delivers when the true power at its k is near
the target; the naive Gaussian planner, run through the same check, fails it (the tolerance is one a broken
planner exceeds).
"""

import math

import numpy as np
import pytest

from dbpa_core import compare_discrepancies, plan_sample_size
from dbpa_core.stats.planning import CALIBRATION, SampleSizePlan

from bench.bench_planner import real, synthetic  # the populations the recorded oracle curves belong to

GRID = (4, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50, 63, 80, 100, 126, 160, 200)
#: bench_planner's "synthetic" population: oracle k for 80 % = 65.
SYNTHETIC_ORACLE = (0.01, 0.09, 0.09, 0.24, 0.25, 0.34, 0.38, 0.46, 0.57, 0.63, 0.69, 0.79, 0.88, 0.91, 0.95, 0.97,
                    0.99)
#: bench_planner's "real" population (GPT-3.5's paraphrase answers vs 60 % GPT-4's): oracle k for 80 % = 53.
REAL_ORACLE = (0.02, 0.05, 0.10, 0.17, 0.23, 0.29, 0.41, 0.53, 0.62, 0.65, 0.77, 0.87, 0.94, 0.97, 0.98, 0.99,
               0.99)
SETTINGS = dict(n_resamples=99, n_simulations=30, k_min=4, k_max=200)


def synthetic_draw(k, rng, shift=1.4, dim=32):
    """bench_planner's synthetic population (the one SYNTHETIC_ORACLE was measured on), drawn at size k."""
    return synthetic(shift=shift, dim=dim)(k, rng)


def real_draw():
    """bench_planner's real population (the one REAL_ORACLE was measured on)."""
    return real(q=0.6)


def true_power(k, oracle):
    return float(np.interp(math.log(k if k is not None else GRID[-1]), np.log(GRID), oracle))


def delivered(draw, oracle, seeds, method="mixture", pilot=20):
    """(median true power at the planned k, the planned k's)."""
    ks = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        x, y = draw(pilot, rng)
        ks.append(plan_sample_size(x, y, method=method, rng=rng, **SETTINGS).k)
    return float(np.median([true_power(k, oracle) for k in ks])), ks


def test_delivers_its_power_on_a_synthetic_family():
    # Required (issue 42): median true power ≥ 0.6 for a target of 0.8, never more than about 3× the oracle k.
    power, ks = delivered(synthetic_draw, SYNTHETIC_ORACLE, seeds=(1, 2, 3))
    assert power >= 0.6, ks
    assert all(k is not None and k <= 3 * 65 for k in ks), ks
    # The same check fails the naive planner (a Gaussian per arm at face value): it plans too few.
    naive, naive_ks = delivered(synthetic_draw, SYNTHETIC_ORACLE, seeds=(1, 2, 3), method="gaussian")
    assert naive < 0.6, naive_ks


@pytest.mark.slow  # ≈ 35 s on a loaded two-core machine: three plans in 384-D
def test_delivers_its_power_on_subsampled_real_responses():
    # Required: median ≥ 0.6 and no plan over about 3× the oracle k.  The previous planner (both arms mixtures of
    # both pilots, the clipped unbiased estimate) planned 3.8× here from half of its pilots of 20.
    power, ks = delivered(real_draw(), REAL_ORACLE, seeds=(11, 12, 13))
    assert power >= 0.6, ks
    assert all(k is not None and k <= 3 * 53 for k in ks), ks


def test_plan_is_a_curve_with_its_uncertainty_and_a_reading():
    rng = np.random.default_rng(0)
    x, y = synthetic_draw(20, rng, shift=3.0)
    plan = plan_sample_size(x, y, rng=1, **SETTINGS)
    assert isinstance(plan, SampleSizePlan)
    assert plan.k is not None and plan.sample_sizes[0] <= plan.k <= plan.sample_sizes[-1]
    assert np.all(plan.ci_low <= plan.power) and np.all(plan.power <= plan.ci_high)
    assert np.allclose(plan.power_se, np.sqrt(plan.power * (1 - plan.power) / 30))
    assert plan.reading.startswith(f"Plan k = {plan.k} outputs per arm")
    # The reading's calibration sentence quotes bench/RESULTS.md's figures for pilots of 20.
    assert plan.reading.endswith(CALIBRATION) and "median of 76 % (10–90 %: 49–89 %)" in CALIBRATION
    assert "82 % (63–98 %) on the paper's answers" in CALIBRATION and "1 plan in 12" in CALIBRATION
    with pytest.raises(AttributeError):
        plan.k = 3  # frozen


def test_a_pilot_of_noise_plans_for_no_effect():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((20, 8)) + 3, rng.standard_normal((20, 8)) + 3
    plan = plan_sample_size(x, y, rng=2, n_resamples=99, n_simulations=30, k_max=60)
    assert plan.shrinkage < 0.8  # noise: most of the pilots' difference is removed
    assert plan.k is None and plan.reading.startswith("No k up to 60 reached 80 % power")


def test_kept_share_is_the_posterior_mean_of_the_energy_distance():
    from scipy.spatial.distance import cdist
    from scipy.stats import norm

    from dbpa_core.stats.planning import _energy_ratio

    def u_statistic(a, b):
        return 2 * cdist(a, b).mean() - cdist(a, a).sum() / (len(a) * (len(a) - 1)) - \
            cdist(b, b).sum() / (len(b) * (len(b) - 1))

    def by_hand(a, b):
        # The jackknife written out: leave each output of either arm out and recompute U from scratch.
        u = u_statistic(a, b)
        out_a = np.array([u_statistic(np.delete(a, i, 0), b) for i in range(len(a))])
        out_b = np.array([u_statistic(a, np.delete(b, j, 0)) for j in range(len(b))])
        se = np.sqrt((len(a) - 1) / len(a) * ((out_a - out_a.mean()) ** 2).sum()
                     + (len(b) - 1) / len(b) * ((out_b - out_b.mean()) ** 2).sum())
        plug_in = 2 * cdist(a, b).mean() - cdist(a, a).mean() - cdist(b, b).mean()
        return (u + se * norm.pdf(u / se) / norm.cdf(u / se)) / plug_in, u / plug_in

    rng = np.random.default_rng(9)
    for shift in (0.0, 0.3, 3.0):
        a, b = rng.standard_normal((10, 6)), rng.standard_normal((12, 6)) + np.array([shift, 0, 0, 0, 0, 0])
        expected, clipped = by_hand(a, b)
        assert _energy_ratio(a, b) == pytest.approx(min(1.0, expected), rel=1e-9), shift
        if shift == 3.0:  # a clear difference: the posterior mean is the unbiased estimate
            assert _energy_ratio(a, b) == pytest.approx(clipped, rel=1e-3)
    # Two pilots of one population: the unbiased estimate is below zero (the clipped ratio was 0, a plan for no
    # effect at any k), the posterior mean small but above zero.
    below = [(a, b) for a, b in ((rng.standard_normal((10, 6)), rng.standard_normal((10, 6))) for _ in range(12))
             if by_hand(a, b)[1] < 0]
    assert len(below) >= 2  # about half of such pairs
    assert all(0 < _energy_ratio(a, b) < 0.5 for a, b in below)


def test_compare_discrepancies_plans_each_omega_on_the_same_arms():
    rng = np.random.default_rng(0)
    x, y = synthetic_draw(20, rng, shift=3.0)
    plans = compare_discrepancies(x, y, ("jsd", "energy"), rng=5, **SETTINGS)
    assert list(plans) == ["jsd", "energy"]
    assert all(isinstance(p, SampleSizePlan) for p in plans.values())
    with pytest.raises(ValueError, match="`discrepancies`"):
        compare_discrepancies(x, y, (), rng=5)


@pytest.mark.parametrize(("change", "match"), [
    (dict(pilot_x=np.zeros((3, 4))), "`pilot_x` needs at least 5"),
    (dict(pilot_y=np.ones((20, 5))), "same embedding dimension"),
    (dict(power=1.2), "`power`"),
    (dict(alpha=0.0), "`alpha`"),
    (dict(alpha=0.01, m=8, n_resamples=199), "`n_resamples` = 199 cannot reach"),
    (dict(method="bootstrap"), "`method`"),
    (dict(discrepancy="chi2"), "`discrepancy`"),
    (dict(k_min=10, k_max=5), "`k_max`"),
])
def test_bad_input_names_the_field(change, match):
    rng = np.random.default_rng(0)
    arguments = dict(pilot_x=rng.standard_normal((20, 4)), pilot_y=rng.standard_normal((20, 4)))
    arguments.update(change)
    with pytest.raises(ValueError, match=match):
        plan_sample_size(arguments.pop("pilot_x"), arguments.pop("pilot_y"), **arguments)


def test_a_plan_from_a_small_pilot_says_it_may_under_plan():
    # bench/bench_planner.py: pilots of 10 delivered a median of 47 % on the synthetic family; the reading says so
    from dbpa_core.stats.planning import SMALL_PILOT

    rng = np.random.default_rng(3)
    shift = np.array([1.5] + [0.0] * 7)
    small = plan_sample_size(rng.standard_normal((10, 8)), rng.standard_normal((12, 8)) + shift,
                             n_simulations=20, n_resamples=99, k_max=60, rng=1)
    large = plan_sample_size(rng.standard_normal((20, 8)), rng.standard_normal((20, 8)) + shift,
                             n_simulations=20, n_resamples=99, k_max=60, rng=1)
    assert small.pilot_size == 10 and large.pilot_size == 20
    assert SMALL_PILOT in small.reading and "47 %" in SMALL_PILOT
    assert SMALL_PILOT not in large.reading
