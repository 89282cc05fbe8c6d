"""TPR/FPR analysis of a test over the significance level α (Rauba, Wei & van der Schaar, ICML 2025, §4.2, Figs 1–2).

Control perturbations should not change the output distribution, target
perturbations should.  Rejecting at level α, the false-positive rate is the
share of controls with p ≤ α and the true-positive rate the share of targets
with p ≤ α; sweeping α from 0 to 1 traces the ROC curve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_probability, check_pvalues


@dataclass(frozen=True, eq=False)
class ROCResult:
    """Result of :func:`roc_analysis`.

    Attributes
    ----------
    thresholds : ndarray
        The α values of the sweep, increasing from 0 to 1: 0, every distinct
        p-value, 1.
    fpr, tpr : ndarray
        FPR(α) and TPR(α) at each threshold (rejecting when p ≤ α).
    auc : float
        Trapezoidal area under the (FPR, TPR) curve; equals the probability
        that a random target has a smaller p than a random control (ties
        count ½), i.e. ``sklearn.metrics.roc_auc_score(is_target, -p)``.
    n_targets, n_controls : int
    """

    thresholds: np.ndarray
    fpr: np.ndarray
    tpr: np.ndarray
    auc: float
    n_targets: int
    n_controls: int

    def tpr_at_fpr(self, max_fpr: float) -> tuple[float, float]:
        """Best TPR whose FPR does not exceed ``max_fpr``, and the α that achieves it.

        Returns
        -------
        (tpr, alpha) : tuple of float
            The largest α with FPR(α) ≤ ``max_fpr`` and the TPR at that α.
        """
        max_fpr = check_probability(max_fpr, "max_fpr", open_low=False, open_high=False)
        allowed = np.flatnonzero(self.fpr <= max_fpr + 1e-12)
        best = allowed[-1]  # fpr and tpr are non-decreasing in α
        return float(self.tpr[best]), float(self.thresholds[best])

    def rates_at_alpha(self, alpha: float) -> tuple[float, float]:
        """(FPR, TPR) when rejecting at level ``alpha``."""
        alpha = check_probability(alpha, "alpha", open_low=False, open_high=False)
        index = int(np.searchsorted(self.thresholds, alpha, side="right") - 1)
        return float(self.fpr[index]), float(self.tpr[index])


def roc_analysis(pvalues, is_target) -> ROCResult:
    """FPR and TPR of the rule "reject when p ≤ α" over all α.

    Parameters
    ----------
    pvalues : array_like of shape (m,)
        One p-value per perturbation.
    is_target : array_like of bool, shape (m,)
        True for target perturbations (should be detected), False for
        controls (should not).  Both kinds must be present.

    Returns
    -------
    ROCResult
    """
    pvalues = check_pvalues(pvalues)
    labels = np.asarray(is_target)
    if labels.shape != pvalues.shape:
        raise ValueError(f"`is_target` must have the same shape as `pvalues`; got {labels.shape} and {pvalues.shape}.")
    if labels.dtype != bool:
        if not np.all(np.isin(labels, (0, 1))):
            raise ValueError("`is_target` must hold booleans (True = target perturbation, False = control).")
        labels = labels.astype(bool)
    n_targets, n_controls = int(labels.sum()), int((~labels).sum())
    if n_targets == 0 or n_controls == 0:
        raise ValueError("`is_target` must contain both targets (True) and controls (False) to define TPR and FPR.")

    thresholds = np.unique(np.concatenate([[0.0], pvalues, [1.0]]))
    # Counts of p ≤ α for every α at once: sort once, then binary search.
    tpr = np.searchsorted(np.sort(pvalues[labels]), thresholds, side="right") / n_targets
    fpr = np.searchsorted(np.sort(pvalues[~labels]), thresholds, side="right") / n_controls
    curve_fpr = np.concatenate([[0.0], fpr])
    curve_tpr = np.concatenate([[0.0], tpr])
    auc = float(np.trapezoid(curve_tpr, curve_fpr))
    return ROCResult(thresholds, fpr, tpr, auc, n_targets, n_controls)
