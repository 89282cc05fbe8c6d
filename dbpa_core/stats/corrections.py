"""Step 5 of DBPA: many perturbations, one family-wise decision (Rauba, Wei & van der Schaar, ICML 2025, §3.2).

One p-value per perturbation; the family is controlled with Bonferroni (the
paper's default, §4), Holm, Benjamini–Hochberg or any other method of
``statsmodels.stats.multitest.multipletests``, which does the arithmetic: a
well-kept implementation rather than one written by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from .._validation import check_choice, check_probability, check_pvalues

#: method name → what it controls (shown next to the table in the app).
METHODS: dict[str, str] = {
    "bonferroni": "family-wise error rate (any false alarm), valid under any dependence",
    "holm": "family-wise error rate, uniformly more powerful than Bonferroni",
    "sidak": "family-wise error rate, for independent tests",
    "holm-sidak": "family-wise error rate, step-down Šidák, for independent tests",
    "simes-hochberg": "family-wise error rate, step-up, for independent or positively dependent tests",
    "hommel": "family-wise error rate, closed Simes procedure",
    "fdr_bh": "false discovery rate (expected share of false alarms among detections), Benjamini–Hochberg",
    "fdr_by": "false discovery rate under any dependence, Benjamini–Yekutieli",
    "fdr_tsbh": "false discovery rate, two-stage Benjamini–Hochberg",
    "fdr_tsbky": "false discovery rate, two-stage Benjamini–Krieger–Yekutieli",
}

#: The people's names of the corrections (a page or a report shows these, never the statsmodels codes).
METHOD_NAMES: dict[str, str] = {
    "bonferroni": "Bonferroni", "holm": "Holm", "sidak": "Šidák", "holm-sidak": "Holm–Šidák",
    "simes-hochberg": "Hochberg (Simes)", "hommel": "Hommel", "fdr_bh": "Benjamini–Hochberg (FDR)",
    "fdr_by": "Benjamini–Yekutieli (FDR)", "fdr_tsbh": "two-stage Benjamini–Hochberg (FDR)",
    "fdr_tsbky": "two-stage Benjamini–Krieger–Yekutieli (FDR)",
}


@dataclass(frozen=True, eq=False)
class AdjustedPValues:
    """Result of :func:`adjust_pvalues`.

    Attributes
    ----------
    pvalues : ndarray
        The raw p-values, as given.
    pvalues_adjusted : ndarray
        Adjusted p-values (capped at 1): reject perturbation i at level α
        exactly when ``pvalues_adjusted[i] <= alpha``.
    reject : ndarray of bool
        Decisions at ``alpha``.
    method : str
    alpha : float
    """

    pvalues: np.ndarray = field(repr=False)
    pvalues_adjusted: np.ndarray
    reject: np.ndarray
    method: str
    alpha: float

    @property
    def n_rejected(self) -> int:
        return int(self.reject.sum())


def adjust_pvalues(pvalues, method: str = "bonferroni", *, alpha: float = 0.05) -> AdjustedPValues:
    """Adjust a family of p-values for multiple testing.

    Parameters
    ----------
    pvalues : array_like of shape (m,)
        One p-value per perturbation, each in [0, 1].
    method : str
        ``"bonferroni"`` (default, the paper's choice), ``"holm"``,
        ``"fdr_bh"``, or another key of :data:`METHODS`.
    alpha : float
        Family-wise error rate (or false discovery rate for ``fdr_*``) in (0, 1).

    Returns
    -------
    AdjustedPValues

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.02, 0.5]).pvalues_adjusted
    array([0.03, 0.06, 1.  ])
    """
    pvalues = check_pvalues(pvalues)
    method = check_choice(method, "method", METHODS)
    alpha = check_probability(alpha, "alpha")
    if method == "bonferroni":
        # m·p needs no library, and the home page's first view must not wait ≈1.7 s for statsmodels.
        return AdjustedPValues(pvalues, np.minimum(pvalues * len(pvalues), 1.0), pvalues <= alpha / len(pvalues),
                               method, alpha)
    # Imported here: statsmodels takes ≈1.7 s to import, which would delay the app's first page.
    from statsmodels.stats.multitest import multipletests

    reject, adjusted, _, _ = multipletests(pvalues, alpha=alpha, method=method)
    return AdjustedPValues(pvalues, np.minimum(adjusted, 1.0), reject, method, alpha)


def uncorrected_fwer(alpha: float, m: int) -> float:
    """The family-wise error rate of ``m`` independent tests each run at ``alpha`` without correction.

    ``1 − (1 − α)^m``: the chance of at least one false alarm when no
    perturbation changes anything (paper §3.2, why the family is corrected).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"`alpha` must be in (0, 1), got {alpha}.")
    if int(m) < 1:
        raise ValueError(f"`m` must be at least 1, got {m}.")
    return min(1.0, 1.0 - (1.0 - alpha) ** int(m))
