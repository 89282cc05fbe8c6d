"""What a permutation p-value can resolve: its floor, and the warning when the floor is above the level.

Algorithm 1's p-value (Rauba, Wei & van der Schaar, ICML 2025, with Phipson &
Smyth's +1) is never below 1/(B + 1), or 1/N when all N splits are enumerated.
Kept apart from :mod:`dbpa_core.stats.permutation` (which re-exports these
names) so that the readings of a p-value import no compiled kernel: the home
page's verdict is written before numba is imported (issue 45).
"""

from __future__ import annotations

import math

from .._validation import MAX_RESAMPLES

#: Corrections whose first step compares the smallest p-value with α/m (single-step and step-down
#: family-wise methods); the step-up ones (Hochberg, Hommel, FDR) can reject at α when every test does.
ALPHA_OVER_M = ("bonferroni", "holm", "sidak", "holm-sidak")


def resampling_floor(n_resamples: int, *, exact: bool = False) -> float:
    """The smallest one-sided p-value of a test that ran: 1/(B + 1) for B random re-splits (the observed split
    counted among them, Algorithm 1 with Phipson & Smyth's +1), 1/N when all N splits were enumerated
    (``exact``: ``n_resamples`` is then N, the observed split among them).  A result's own
    ``n_resamples`` and ``exact`` give it; :func:`pvalue_floor` gives it from a test's sizes before it runs."""
    n_resamples = int(n_resamples)
    return 1.0 / n_resamples if exact else 1.0 / (n_resamples + 1)


def pvalue_floor(n_original: int, n_perturbed: int, n_resamples: int, alternative: str = "greater") -> float:
    """The smallest p-value a test of these sizes can return, before it runs.

    Randomized: 1/(B + 1); exact (C(k₀ + k₁, k₀) ≤ B splits, all enumerated): one over their number
    (:func:`resampling_floor`).  Twice that for a two-sided test.
    """
    pooled = int(n_original) + int(n_perturbed)
    splits = math.comb(pooled, int(n_original)) if pooled <= 1_000 else math.inf
    floor = resampling_floor(splits, exact=True) if splits <= n_resamples else resampling_floor(n_resamples)
    return min(1.0, 2 * floor) if alternative == "two-sided" else floor


def resolution_warning(alpha: float, *, n_original: int, n_perturbed: int, n_resamples: int, m: int = 1,
                       correction: str = "bonferroni", alternative: str = "greater") -> str | None:
    """A warning when no p-value of the test can reach the level it is read at (None when one can).

    A permutation p-value is never below :func:`pvalue_floor`; read at α (or at α/m, the first step of
    Bonferroni and Holm over m perturbations), a floor above it means the test can never reject,
    whatever the data: "no change" would then say nothing.  The message gives the B that would do.
    """
    level = alpha / m if m > 1 and correction in ALPHA_OVER_M else alpha
    floor = pvalue_floor(n_original, n_perturbed, n_resamples, alternative)
    if floor <= level:
        return None
    ratio = (2 if alternative == "two-sided" else 1) / level  # inf for a level as small as 5e-324
    needed = math.ceil(ratio) - 1 if math.isfinite(ratio) and ratio < 1e300 else math.inf
    where = (f"{correction} over {m} perturbations at α = {alpha:g} needs p ≤ {level:.3g}" if level != alpha
             else f"α = {alpha:g} needs p ≤ {alpha:g}")
    if pvalue_floor(n_original, n_perturbed, 10**9, alternative) > level or needed > MAX_RESAMPLES:
        fix = "more outputs per arm"
        smallest = "every one of its distinct splits enumerated"
    else:
        fix = f"B ≥ {needed:,}"
        smallest = f"B = {n_resamples:,}"
    return (f"No p-value can reach the level: with {smallest} the smallest possible p is {floor:.3g}, but "
            f"{where}, so the test cannot find a change whatever the outputs. Use {fix}.")
