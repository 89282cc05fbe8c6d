r"""Rank-based uniformity test (RUT): is this API serving the model it claims?

Zhu, Ye, Qiu, Zhu, Tan, Mannan, Michala, Popa & Neiswanger, "Auditing Black-Box LLM APIs with a
Rank-Based Uniformity Test", ICLR 2026 (arXiv:2506.06975).  An asymmetric two-sample test: for each of n
prompts, one response of the *target* (the API under audit) and m responses
of a local *reference* model; every response is scored with one scalar
function computed by the reference model (e.g. its mean log-rank).  If the
target is the reference model, the target's score is exchangeable with the m
reference scores, so its rank among them is uniform; Cramér–von Mises tests
the n ranks for uniformity (Kolmogorov–Smirnov is the baseline).

Ranks with ties (randomized probability integral transform).  With
:math:`L_i = \#\{j: s_{ij} < s_i\}` and :math:`E_i = \#\{j: s_{ij} = s_i\}`,

.. math::  r_i = \frac{L_i + U_i\,(E_i + 1)}{m + 1}, \qquad U_i \sim \mathrm{Uniform}[0, 1].

Under H0 the target is one of m + 1 exchangeable draws, so its position
among them is uniform on {0, …, m} (ties broken at random); adding
:math:`U_i` spreads each position over an interval of length 1/(m + 1),
making :math:`r_i` exactly Uniform[0, 1] even for heavily tied, discrete
scores.  (Written as (L + U·E)/m, without the target's own "+1", the rank is
uniform only approximately; we use the exact form.)
Without the randomization, tied scores pile ranks onto a few values and the
uniformity test rejects far more often than α (tested).

How much traffic is substituted (beyond the paper).  The paper's threat model
(§3) is a mixture: each answer comes from the claimed model with probability
1 − q and from a substitute with probability q.  With the audit's prompts a
random sample of the traffic, the ranks are i.i.d. with CDF

.. math::  F = (1 - q)\,U + q\,G, \qquad\text{so}\qquad \sup_t |F(t) - t| = q\,\sup_t |G(t) - t| \le q,

where U is the uniform CDF and G the (unknown) CDF of a substituted answer's
rank: whatever the substitute, a share q moves the rank CDF at most q away from
the diagonal.  F is continuous (the randomized ranks have a density), so the
Kolmogorov distance of the empirical CDF F_n from F has the distribution
``scipy.stats.kstwo(n)`` whatever F is; with c its 1 − α quantile,
:math:`\sup|F_n - F| \le c` with probability 1 − α, and then

.. math::  q \ge \sup_t |F(t) - t| \ge D_n - c, \qquad D_n = \sup_t |F_n(t) - t| \text{ (the KS statistic)}.

So :math:`\max(0, D_n - c)` is a lower confidence bound on q at level 1 − α,
valid without knowing the substitute (the DKW inequality gives the same with
:math:`c = \sqrt{\ln(2/\alpha) / 2n}`, slightly larger; we use the exact
quantile).  It is positive exactly when the KS test rejects at α, and it is
conservative by the factor :math:`\sup|G - U| \le 1`: a substitute whose
answers rank like the reference's hides from it, as from every rank test.
Its coverage is checked by simulation, also with a prompt-dependent share
q(x) (tests/test_uniformity.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import stats

from .._validation import check_choice, check_positive_int, check_probability, check_rng


@dataclass(frozen=True, eq=False)
class RUTResult:
    """Result of :func:`rank_uniformity_test`.

    Attributes
    ----------
    statistic, pvalue : float
        Cramér–von Mises (or KS, per ``method``) statistic and p-value of the
        ranks against Uniform[0, 1].
    ranks : ndarray of shape (n,)
        The randomized ranks r_i.
    ks_statistic, ks_pvalue : float
        The Kolmogorov–Smirnov baseline on the same ranks.
    n_prompts, n_reference : int
    method : str
    share_lower_bound : float
        Lower confidence bound on the share q of answers that did not come
        from the reference model (module docstring), at ``confidence_level``.
    confidence_level : float
    """

    statistic: float
    pvalue: float
    ranks: np.ndarray = field(repr=False)
    ks_statistic: float
    ks_pvalue: float
    n_prompts: int
    n_reference: int
    method: str
    share_lower_bound: float = 0.0
    confidence_level: float = 0.95


def randomized_ranks(target_scores, reference_scores, *, rng=None) -> np.ndarray:
    """The randomized ranks r_i of the module docstring."""
    target, reference = _scores_iv(target_scores, reference_scores)
    rng = check_rng(rng)
    less = (reference < target[:, None]).sum(axis=1)
    equal = (reference == target[:, None]).sum(axis=1)
    uniform = rng.random(len(target))
    return (less + uniform * (equal + 1)) / (reference.shape[1] + 1)


def substituted_share_bound(ks_statistic, n, *, confidence_level: float = 0.95):
    r"""Lower confidence bound on the substituted share q from the ranks' KS statistic (module docstring).

    Parameters
    ----------
    ks_statistic : float or array_like
        :math:`D_n = \sup_t |F_n(t) - t|` of n randomized ranks.
    n : int
        Number of ranks.
    confidence_level : float
        1 − α; the bound is below the true q with at least this probability.

    Returns
    -------
    float or ndarray
        :math:`\max(0, D_n - c)`, c the ``confidence_level`` quantile of ``scipy.stats.kstwo(n)``.
    """
    n = check_positive_int(n, "n")
    confidence_level = check_probability(confidence_level, "confidence_level")
    bound = np.maximum(0.0, np.asarray(ks_statistic, dtype=np.float64) - _ks_quantile(confidence_level, n))
    return float(bound) if bound.ndim == 0 else bound


@lru_cache(maxsize=256)
def _ks_quantile(confidence_level: float, n: int) -> float:
    # scipy inverts kstwo's exact CDF by root finding (≈ 2 ms, 40 % of a rank_uniformity_test); a calibration
    # run asks for the same (level, n) thousands of times.  The same float, computed once.
    return stats.kstwo.ppf(confidence_level, n)


def rank_uniformity_test(target_scores, reference_scores, *, method: str = "cvm", confidence_level: float = 0.95,
                         rng=None) -> RUTResult:
    """Test whether target responses rank like reference responses.

    Parameters
    ----------
    target_scores : array_like of shape (n,)
        Score of the target's response to prompt i (computed by the reference model).
    reference_scores : array_like of shape (n, m)
        Scores of m reference responses to prompt i.
    method : {"cvm", "ks"}
        Uniformity test: Cramér–von Mises (the paper's choice) or Kolmogorov–Smirnov.
    confidence_level : float
        Level of :attr:`RUTResult.share_lower_bound` (1 − α).
    rng : Generator, int or None
        For the tie-breaking uniforms U_i.

    Returns
    -------
    RUTResult
    """
    method = check_choice(method, "method", ("cvm", "ks"))
    confidence_level = check_probability(confidence_level, "confidence_level")
    ranks = randomized_ranks(target_scores, reference_scores, rng=rng)
    cvm = stats.cramervonmises(ranks, "uniform")
    ks = stats.kstest(ranks, "uniform")
    statistic, pvalue = (cvm.statistic, cvm.pvalue) if method == "cvm" else (ks.statistic, ks.pvalue)
    bound = substituted_share_bound(ks.statistic, len(ranks), confidence_level=confidence_level)
    return RUTResult(float(statistic), float(min(max(pvalue, 0.0), 1.0)), ranks, float(ks.statistic),
                     float(ks.pvalue), len(ranks), np.shape(reference_scores)[1], method, bound, confidence_level)


def _scores_iv(target_scores, reference_scores):
    try:
        target = np.asarray(target_scores, dtype=np.float64)
        reference = np.asarray(reference_scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("`target_scores` and `reference_scores` must be numeric arrays.") from None
    if target.ndim != 1 or target.size < 2:
        raise ValueError(f"`target_scores` must be 1-D with one score per prompt (n >= 2); got shape {target.shape}.")
    if reference.ndim != 2 or reference.shape[1] < 1:
        raise ValueError(f"`reference_scores` must be 2-D of shape (n, m): m reference scores per prompt; "
                         f"got shape {reference.shape}.")
    if reference.shape[0] != target.shape[0]:
        raise ValueError(f"`reference_scores` must have one row per prompt: {target.shape[0]} target scores but "
                         f"{reference.shape[0]} rows.")
    if not (np.all(np.isfinite(target)) and np.all(np.isfinite(reference))):
        raise ValueError("`target_scores` and `reference_scores` must be finite (no NaN or infinity).")
    return target, reference
