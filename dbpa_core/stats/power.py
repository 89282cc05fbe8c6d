"""§3.2's sample-size rule, a z-test approximation (Rauba, Wei & van der Schaar, ICML 2025, §3.2, eq. for k_adj).

Testing m perturbations at family-wise level α with Bonferroni means testing
each at α/m; the number of samples per arm grows as

.. math::  k_\\text{adj} \\propto \\left(\\frac{z_{1-\\alpha/(2m)} + z_{1-\\beta}}{\\omega}\\right)^2 .

The paper gives the rule up to its constant.  Here ω is Cohen's d — the shift
of the outputs' mean, in standard deviations of one output, along the
direction that moves — and the constant is the two-sample normal
approximation's 2: with k per arm the test statistic's z-score is
ω·√(k/2), so k = 2·((z_{1−α/(2m)} + z_{1−β})/ω)².  (With the constant 1 the
planned k gave 40–50 % power, not 80 %, in :func:`simulate_power` on such a
shift at m = 8 / m = 1: tests/test_power.py checks that half the k falls
short.)  :func:`simulate_power` measures power directly with the permutation
test for a chosen effect.  The rule is a z-test's: on DBPA's own ω its k falls far short
(:data:`RULE_POWER_AT_63`); :func:`dbpa_core.stats.planning.plan_sample_size` plans DBPA from a pilot.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from scipy.stats import binomtest, norm

from .._validation import MAX_RESAMPLES, check_positive_float, check_positive_int, check_probability, check_rng

#: The constant of §3.2's rule k ∝ ((z_{1−α/(2m)} + z_{1−β}) / ω)²: two arms of k each give the difference of
#: means a standard error of √(2/k) output SDs (the two-sample normal approximation).
TWO_SAMPLE_CONSTANT = 2

#: DBPA's measured power at the rule's k = 63 (d = 0.5, m = 1, α = 0.05, target 80 %): a normal shift of d along one
#: axis, 200 simulated audits, B = 199, seed 1 (:func:`simulate_power`; tests/test_power.py re-measures it).  The
#: rule is a z-test's: the energy distance in 1-D meets it, the paper's ω (the JS distance of P0 vs P1) does not.
RULE_POWER_AT_63 = MappingProxyType({
    ("js_distance", 1): 0.22,    # 1-D, −L2 similarity (95 % interval 0.16–0.28)
    ("js_distance", 16): 0.08,   # 16-D, −L2 similarity (0.05–0.13)
    ("energy", 1): 0.79,         # 1-D, −L2 (0.73–0.84)
})


def required_sample_size(effect: float, *, alpha: float = 0.05, power: float = 0.8, m: int = 1) -> int:
    """Samples per arm needed to detect ``effect`` in a family of ``m`` tests.

    Parameters
    ----------
    effect : float
        ω, Cohen's d: the shift of the outputs' mean in standard deviations
        of one output (0.2 small, 0.5 medium, 0.8 large).  This is the
        normal approximation's scale; DBPA's own statistic does not grow
        like a z-test's (its standardised effect is no estimate of ω), so
        check a plan for DBPA with :func:`simulate_power`.
    alpha : float
        Family-wise error rate.
    power : float
        Desired probability 1 − β of detecting the effect.
    m : int
        Number of perturbations in the family (Bonferroni: α/m each).

    Returns
    -------
    int
        ⌈2 ((z_{1−α/(2m)} + z_{1−β}) / ω)²⌉, at least 2.

    Examples
    --------
    >>> required_sample_size(0.5, alpha=0.05, power=0.8, m=1)
    63
    """
    effect = check_positive_float(effect, "effect")
    alpha = check_probability(alpha, "alpha")
    power = check_probability(power, "power")
    m = check_positive_int(m, "m")
    z_alpha = norm.isf(alpha / (2 * m))  # isf, not ppf(1 - …): 1 - 1e-300 is 1.0 and its quantile infinite
    z_beta = norm.ppf(power)
    # Two arms of k each: the difference of means has standard error √(2/k) output SDs (hence the 2).
    if not math.isfinite(z_alpha):
        raise ValueError(f"`alpha` = {alpha:g} is too small: α/(2m) underflows to 0; give alpha ≥ 1e-300.")
    ratio = (z_alpha + z_beta) / effect
    if not math.isfinite(ratio) or ratio > 1e7:  # 2·10¹⁴ samples: far past anything that can be drawn
        raise ValueError(f"`effect` = {effect:g} is too small to plan for: it would need more than 10¹⁴ samples "
                         "per arm; give an effect of at least 1e-6.")
    return max(2, math.ceil(TWO_SAMPLE_CONSTANT * ratio**2))


def detectable_effect(k: int, *, alpha: float = 0.05, power: float = 0.8, m: int = 1) -> float:
    """The smallest effect that ``k`` samples per arm detect: the inverse of :func:`required_sample_size`.

    Parameters
    ----------
    k : int
        Samples per arm.
    alpha, power, m
        As in :func:`required_sample_size`.

    Returns
    -------
    float
        ω = (z_{1−α/(2m)} + z_{1−β}) · √(2/k), Cohen's d as in :func:`required_sample_size`.

    Examples
    --------
    >>> round(detectable_effect(63), 3)
    0.499
    """
    k = check_positive_int(k, "k")
    alpha = check_probability(alpha, "alpha")
    power = check_probability(power, "power")
    m = check_positive_int(m, "m")
    z_alpha = norm.isf(alpha / (2 * m))
    if not math.isfinite(z_alpha):
        raise ValueError(f"`alpha` = {alpha:g} is too small: α/(2m) underflows to 0; give alpha ≥ 1e-300.")
    return float((z_alpha + norm.ppf(power)) * math.sqrt(TWO_SAMPLE_CONSTANT / k))


def resamples_for(alpha: float) -> int:
    """Re-splits B for a simulated test at level ``alpha``: the smallest of 199, 399, … whose floor 1/(B+1) is at
    most α/5, so that a p-value can fall below α by more than one step (B = 199 at α/m = 0.00625 left p ≤ α to
    the single value 1/200 and understated the power)."""
    alpha = check_probability(alpha, "alpha")
    return int(min(MAX_RESAMPLES, max(199, 200 * math.ceil(5 / alpha / 200) - 1)))


@dataclass(frozen=True, eq=False)
class PowerCurve:
    """Result of :func:`simulate_power`.

    Attributes
    ----------
    sample_sizes : ndarray of int
        k per arm.
    power : ndarray
        Share of trials with p ≤ α at each k.
    ci_low, ci_high : ndarray
        95 % Clopper–Pearson interval of each share.
    n_trials : int
    alpha : float
    """

    sample_sizes: np.ndarray
    power: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_trials: int
    alpha: float


def gaussian_shift(shift: float, dim: int = 16) -> Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]]:
    """Generator of two arms: N(0, I) and N(shift·e₁, I) in ``dim`` dimensions."""
    shift = float(shift)
    dim = check_positive_int(dim, "dim")

    def generate(k: int, rng: np.random.Generator):
        x = rng.standard_normal((k, dim))
        y = rng.standard_normal((k, dim))
        y[:, 0] += shift
        return x, y

    return generate


def simulate_power(
    sample_sizes: Sequence[int],
    *,
    generator: Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]] | None = None,
    shift: float = 1.0,
    n_trials: int = 100,
    alpha: float = 0.05,
    similarity: str = "neg_l2",
    discrepancy="energy",
    n_resamples: int = 200,
    rng=None,
    progress: Callable[[float], None] | None = None,
) -> PowerCurve:
    """Power of :func:`dbpa_core.dbpa_test` against sample size, by simulation.

    Parameters
    ----------
    sample_sizes : sequence of int
        Values of k (per arm) to try, each ≥ 2.
    generator : callable (k, rng) -> (x, y), optional
        Draws the two arms; default :func:`gaussian_shift` with ``shift``.
    shift : float
        Mean shift of the default generator.
    n_trials, alpha, similarity, discrepancy, n_resamples
        Monte Carlo trials per k and the test's settings.
    rng : numpy.random.Generator, int or None
    progress : callable(float), optional
        Called with the completed fraction after each trial.

    Returns
    -------
    PowerCurve
    """
    from .permutation import dbpa_test  # local: permutation imports nothing from here

    sizes = np.array([check_positive_int(k, "sample_sizes", minimum=2) for k in sample_sizes], dtype=int)
    if sizes.size == 0:
        raise ValueError("`sample_sizes` must list at least one k.")
    n_trials = check_positive_int(n_trials, "n_trials")
    alpha = check_probability(alpha, "alpha")
    rng = check_rng(rng)
    generate = generator if generator is not None else gaussian_shift(shift)
    hits = np.zeros(sizes.size, dtype=int)
    done, total = 0, sizes.size * n_trials
    for index, k in enumerate(sizes):
        for _ in range(n_trials):
            x, y = generate(int(k), rng)
            result = dbpa_test(x, y, similarity=similarity, discrepancy=discrepancy,
                               n_resamples=n_resamples, rng=rng)
            hits[index] += result.pvalue <= alpha
            done += 1
            if progress is not None:
                progress(done / total)
    intervals = [binomtest(int(h), n_trials).proportion_ci(0.95, method="exact") for h in hits]
    return PowerCurve(
        sample_sizes=sizes,
        power=hits / n_trials,
        ci_low=np.array([ci.low for ci in intervals]),
        ci_high=np.array([ci.high for ci in intervals]),
        n_trials=n_trials,
        alpha=alpha,
    )
