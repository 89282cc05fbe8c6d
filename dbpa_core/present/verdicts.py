"""Plain verdicts: the headline a room reads first, with the technical label beside it.

A stakeholder reads "Changed the answers", not "REJECT H₀"; the technical
label stays, smaller, for whoever checks the test (issue 45).  The sentences
live here, not in the app, so reports and the command line can say the same.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from .._validation import check_positive_int, check_probability
from .formatting import format_percent
from .readings import decision

#: The headline when the test declares a change (p ≤ α).
CHANGED = "Changed the answers"
#: The headline when it does not: absence of evidence is not evidence of absence.
NO_CHANGE = "No change detected (this does not prove there is none)"
#: The RUT's headlines (a stakeholder asks "is this the model we pay for?").
NOT_CLAIMED_MODEL = "Likely not the claimed model"
CONSISTENT_WITH_CLAIM = "Consistent with the claimed model (this does not prove it is)"
#: The effect's headline when the observed discrepancy is not above the null's mean.
NO_EFFECT = "none beyond chance"
#: Said before a run of typed prompts on the simulated backend (issue 45: any two prompts gave p ≤ 0.001).
TYPED_ON_SIMULATED = ("**The simulated backend cannot test typed prompts.** It invents an answer distribution from "
                      "each prompt's text, so any two different prompts differ by construction and the test will "
                      "declare a change whatever they say. Choose *Local SmolLM2* or an API in the sidebar to test "
                      "a real model, or a scenario above to see the method with a known truth.")
#: Power the "would be needed" sample size aims at (the planner's default, paper §3.2).
PLANNED_POWER = 0.8
#: Beyond this the estimate is said as a bound: one run's effect cannot be scaled that far with any trust.
LARGEST_STATED_K = 2000


def plain_verdict(pvalue: float, alpha: float) -> str:
    """The headline of a two-arm test: :data:`CHANGED` when p ≤ α, else :data:`NO_CHANGE`."""
    check_probability(alpha, "alpha")
    return CHANGED if pvalue <= alpha else NO_CHANGE


def technical_label(pvalue: float, alpha: float) -> str:
    """The smaller label under the headline: ``"REJECT H₀ at α = 0.05"`` (or FAIL TO REJECT)."""
    check_probability(alpha, "alpha")
    return f"{decision(pvalue, alpha)} at α = {alpha:g}"


def rut_verdict(pvalue: float, alpha: float) -> str:
    """The RUT's headline: :data:`NOT_CLAIMED_MODEL` when p ≤ α, else :data:`CONSISTENT_WITH_CLAIM`."""
    check_probability(alpha, "alpha")
    return NOT_CLAIMED_MODEL if pvalue <= alpha else CONSISTENT_WITH_CLAIM


def effect_in_words(effect_size: float, standardized: float) -> str:
    """The effect as a headline: never a negative number.

    ``effect_size`` is the observed statistic minus the null's mean, ``standardized`` the same in null
    standard deviations.  At or below zero the observed split is no more different than chance makes
    it, so the headline is :data:`NO_EFFECT` (a "−0.004" read as an effect in a user trial).
    """
    if not math.isfinite(effect_size) or effect_size <= 0 or standardized <= 0:
        return NO_EFFECT
    z = float(standardized)
    size = "large" if z >= 3 else "moderate" if z >= 1 else "small"
    return f"{size}: {z:.1f} × chance's spread"


def k_needed(k: int, standardized: float, alpha: float, *, power: float = PLANNED_POWER, m: int = 1) -> float:
    """Samples per arm at which this effect would be detected with ``power``: a normal approximation.

    With k outputs per arm a mean-type statistic's z-score grows as √k (the two-sample normal
    approximation of :mod:`dbpa_core.stats.power`), so the z this run observed, ``standardized``, would
    reach z₁₋α/m + z_power at k · ((z₁₋α/m + z_power) / z)².  One run's z is itself noisy, so this is an
    order of magnitude, not a plan; ``inf`` when the run shows no effect to scale (z ≤ 0).
    """
    check_positive_int(k, "k")
    check_probability(alpha, "alpha")
    check_probability(power, "power")
    check_positive_int(m, "m")
    if not math.isfinite(standardized) or standardized <= 0:
        return math.inf
    # The standard library's normal quantiles, not scipy.stats: importing scipy.stats took 1.2–2.7 s of the
    # home page's first run on a fresh server (py-spy, issue 45), for two quantiles.
    normal = NormalDist()
    target = normal.inv_cdf(1 - alpha / m) + normal.inv_cdf(power)
    return k * (target / standardized) ** 2


def missed_note(true_effect: float, k: int, standardized: float, alpha: float, *, m: int = 1) -> str:
    """The label of a simulated target the test missed, with the k that would have been needed.

    ``true_effect`` is the simulated model's known share of answer content moved; ``standardized`` the
    effect this run observed (null SDs), scaled by :func:`k_needed`.
    """
    check_positive_int(k, "k")
    needed = k_needed(k, standardized, alpha, m=m)
    head = f"Missed: true effect {format_percent(true_effect)}, not detected at k = {k}"
    how = (f"(normal approximation: this run's z = {standardized:+.1f} grows as √k; "
           f"{format_percent(PLANNED_POWER)} power at α = {alpha:g}" + (f"/{m}" if m > 1 else "") + ")")
    if not math.isfinite(needed):
        return (f"{head} — this run shows no effect beyond chance to scale from, so the k needed cannot be "
                "estimated from it; try k several times larger.")
    if needed > LARGEST_STATED_K:
        return f"{head} — at this effect size more than k = {LARGEST_STATED_K:,} would be needed {how}."
    # Rounded up to a round number: the estimate is an order of magnitude (see k_needed).
    step = 10 if needed < 200 else 50
    rounded = max(k + step, int(math.ceil(needed / step) * step))
    return f"{head} — at this effect size about k = {rounded:,} would be needed {how}."
