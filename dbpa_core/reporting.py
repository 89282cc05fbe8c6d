"""Plain-language readings and table formatting of results.

Every number shown to a user comes with one sentence that reads it; the
sentences live here so that the app, the command line and the reports say
the same thing.
"""

from __future__ import annotations

from ._validation import check_probability

#: (upper bound, stars) as in the paper's tables: * p < 0.05, ** p < 0.01, *** p < 0.001.
STAR_LEVELS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))


def significance_stars(pvalue: float) -> str:
    """Stars for a p-value: ``"***"`` < 0.001 ≤ ``"**"`` < 0.01 ≤ ``"*"`` < 0.05 ≤ ``""``.

    Examples
    --------
    >>> [significance_stars(p) for p in (0.0004, 0.004, 0.04, 0.4)]
    ['***', '**', '*', '']
    """
    pvalue = check_probability(pvalue, "pvalue", open_low=False, open_high=False)
    for bound, stars in STAR_LEVELS:
        if pvalue < bound:
            return stars
    return ""


def decision(pvalue: float, alpha: float) -> str:
    """``"REJECT H₀"`` when p ≤ α, else ``"FAIL TO REJECT H₀"``."""
    return "REJECT H₀" if pvalue <= alpha else "FAIL TO REJECT H₀"


def read_pvalue(pvalue: float, n_resamples: int) -> str:
    """One sentence that reads a permutation p-value."""
    share = f"{pvalue:.1%}" if pvalue >= 0.001 else f"{pvalue:.2g}"
    return (
        f"If the perturbation changed nothing, a discrepancy at least this large would turn up in about "
        f"{share} of random re-splits of the {n_resamples} tried."
    )


def read_decision(pvalue: float, alpha: float) -> str:
    """One sentence that reads the decision at level α."""
    if pvalue <= alpha:
        return (f"p ≤ α = {alpha:g}: the outputs changed more than chance explains; "
                "the perturbation changed the output distribution.")
    return (f"p > α = {alpha:g}: the difference is within what chance produces; "
            "no change is shown (which is not proof of no change).")
