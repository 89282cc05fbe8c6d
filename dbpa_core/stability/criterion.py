r"""Optimal-transport stability criterion (Liu, Li, Cui & Blanchet).

How large a distributional perturbation — corrupting inputs (rewriting a
question) *and* re-weighting sub-populations — does it take to push a model's
risk up to a threshold r?  With n evaluation samples ẑ_i, each with K
candidate perturbations x_ik (k = 0 is the unperturbed input, cost 0), a 0/1
loss ℓ_ik and a perturbation cost d_ik, the criterion is

.. math::

    R(\beta, r) = \min_{Q}\ \theta_1\,\mathbb E_Q[d] + \theta_2\,\mathrm{KL}(Q_{\hat Z} \,\|\, P_0)
    \quad\text{s.t.}\quad \mathbb E_Q[\ell] \ge r ,

whose dual (the paper's eq. for R(β, r)) is a one-dimensional concave problem,

.. math::

    R(\beta, r) = \sup_{h \ge 0}\; h r - \theta_2 \log \mathbb E_{P_0}
        \exp\!\big(\ell_{h,\theta_1}(\hat Z) / \theta_2\big),
    \qquad \ell_{h,\theta_1}(\hat z_i) = \max_k\, h\,\ell_{ik} - \theta_1 d_{ik}.

A large R means stable: the model only fails that often under a costly
shift.  θ1 prices corruption, θ2 prices re-weighting; θ1 → ∞ leaves only
re-weighting (R = θ2·KL(Bernoulli(r) ‖ Bernoulli(baseline risk))), θ2 → ∞ only
corruption (a fractional knapsack of the cheapest failing rewrites).  The most
sensitive distribution puts weight w_i* ∝ exp(ℓ_{h*,θ1}(ẑ_i)/θ2) on sample i
with its arg-max rewrite.

The cost d is a documented, swappable function (:data:`COSTS`).  The paper
writes it with cosine *similarity*; a transport cost must be small for small
changes and zero for no change, so the default is the cosine *distance*
1 − cos(e(x), e(x̂)) plus a token-length term |log(len x / len x̂)|·λ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from .._validation import check_positive_float


def cosine_length_cost(original_embedding, candidate_embeddings, original_length, candidate_lengths,
                       *, length_weight: float = 0.5) -> np.ndarray:
    """Default cost: (1 − cosine similarity) + λ·|log(length ratio)|; 0 for an identical input."""
    original = np.asarray(original_embedding, dtype=np.float64)
    candidates = np.asarray(candidate_embeddings, dtype=np.float64)
    cosine = candidates @ original / (np.linalg.norm(candidates, axis=1) * np.linalg.norm(original))
    ratio = np.log(np.maximum(np.asarray(candidate_lengths, dtype=float), 1) / max(float(original_length), 1))
    return np.maximum(1.0 - np.clip(cosine, -1, 1), 0.0) + length_weight * np.abs(ratio)


def cosine_cost(original_embedding, candidate_embeddings, original_length, candidate_lengths) -> np.ndarray:
    """Cosine distance only (no length term)."""
    return cosine_length_cost(original_embedding, candidate_embeddings, original_length, candidate_lengths,
                              length_weight=0.0)


#: name → cost function (original_embedding, candidate_embeddings, original_length, candidate_lengths) → (K,)
COSTS: dict[str, Callable] = {"cosine_length": cosine_length_cost, "cosine": cosine_cost}


@dataclass(frozen=True, eq=False)
class StabilityResult:
    """Result of :func:`stability_criterion`.

    Attributes
    ----------
    value : float
        R(β, r); 0 when the baseline risk already reaches r, inf when no
        perturbation can reach it.
    h : float
        The maximising dual variable h*.
    weights : ndarray of shape (n,)
        The most sensitive distribution over samples, w_i*.
    choices : ndarray of int, shape (n,)
        The arg-max candidate of each sample (0 = unperturbed).
    baseline_risk : float
        Risk with no perturbation.
    max_risk : float
        The highest risk a perturbation can reach: 1 when any sample has a
        failing candidate (re-weighting can then move all mass onto such
        samples), else the baseline.
    r, theta1, theta2 : float
    """

    value: float
    h: float
    weights: np.ndarray = field(repr=False)
    choices: np.ndarray = field(repr=False)
    baseline_risk: float
    max_risk: float
    r: float
    theta1: float
    theta2: float


def _problem_iv(losses, costs):
    losses = np.asarray(losses, dtype=np.float64)
    costs = np.asarray(costs, dtype=np.float64)
    if losses.ndim != 2 or losses.shape[1] < 1 or losses.shape[0] < 1:
        raise ValueError(f"`losses` must be 2-D (n samples, K candidates; column 0 = unperturbed); "
                         f"got shape {losses.shape}.")
    if costs.shape != losses.shape:
        raise ValueError(f"`costs` must have the shape of `losses` {losses.shape}; got {costs.shape}.")
    present = ~np.isnan(costs)
    if not np.all(present[:, 0]) or np.any(costs[:, 0] != 0):
        raise ValueError("`costs[:, 0]` must be 0: column 0 is the unperturbed input.")
    if np.any(np.isnan(losses) != ~present):
        raise ValueError("`losses` and `costs` must mark the same missing candidates (NaN).")
    if np.any(costs[present] < 0):
        raise ValueError("`costs` must be >= 0 (a perturbation cannot have negative cost).")
    if not np.all(np.isin(losses[present], (0.0, 1.0))):
        raise ValueError("`losses` must be 0/1 (1 = the model fails on that input).")
    return losses, costs, present


def _tilted(h, losses, costs, present, theta1, theta2):
    scores = np.where(present, h * np.nan_to_num(losses) - theta1 * np.nan_to_num(costs), -np.inf)
    best = scores.max(axis=1)
    choices = scores.argmax(axis=1)
    log_mean = logsumexp(best / theta2) - np.log(len(best))
    return best, choices, log_mean


def stability_criterion(losses, costs, r: float, *, theta1: float = 1.0, theta2: float = 1.0) -> StabilityResult:
    """R(β, r) by its dual, a concave maximisation over h ≥ 0.

    Parameters
    ----------
    losses : array_like of shape (n, K)
        0/1 loss of sample i under candidate k (column 0: unperturbed); NaN
        marks a missing candidate.
    costs : array_like of shape (n, K)
        Perturbation cost d(x_ik, x̂_i) ≥ 0; column 0 must be 0.
    r : float
        Risk threshold in [0, 1].
    theta1, theta2 : float
        Prices of corruption and of re-weighting (> 0).

    Returns
    -------
    StabilityResult
    """
    losses, costs, present = _problem_iv(losses, costs)
    theta1 = check_positive_float(theta1, "theta1")
    theta2 = check_positive_float(theta2, "theta2")
    r = float(r)
    if not 0 <= r <= 1:
        raise ValueError(f"`r` must be a risk in [0, 1]; got {r}.")
    baseline = float(losses[:, 0].mean())
    can_fail = np.nanmax(losses, axis=1) == 1
    max_risk = 1.0 if can_fail.any() else baseline
    n = losses.shape[0]

    def result(value, h):
        best, choices, _ = _tilted(h, losses, costs, present, theta1, theta2)
        weights = np.exp((best - best.max()) / theta2)
        return StabilityResult(value, h, weights / weights.sum(), choices, baseline, max_risk, r, theta1, theta2)

    if r <= baseline:
        return result(0.0, 0.0)
    if not can_fail.any():  # no candidate makes the model fail: no finite shift reaches r
        return StabilityResult(float("inf"), float("inf"), np.full(n, 1 / n), np.zeros(n, dtype=int), baseline,
                               max_risk, r, theta1, theta2)
    if r >= 1.0:
        # The limit h → ∞: all mass on samples that can fail, each with its
        # cheapest failing rewrite, re-weighted by a Gibbs distribution.
        cheapest = np.where(present & (losses == 1), costs, np.inf).min(axis=1)[can_fail]
        value = -theta2 * (logsumexp(-theta1 * cheapest / theta2) - np.log(n))
        weights = np.zeros(n)
        weights[can_fail] = np.exp(-theta1 * (cheapest - cheapest.min()) / theta2)
        choices = np.where(present & (losses == 1), costs, np.inf).argmin(axis=1)
        return StabilityResult(float(value), float("inf"), weights / weights.sum(), np.where(can_fail, choices, 0),
                               baseline, max_risk, r, theta1, theta2)

    def negative_dual(h):
        return -(h * r - theta2 * _tilted(h, losses, costs, present, theta1, theta2)[2])

    # Bracket the maximiser: the derivative r − E_w(h)[ℓ] turns negative once
    # the tilted risk exceeds r, which happens for some finite h since r < 1.
    upper = 1.0
    while -negative_dual(2 * upper) > -negative_dual(upper) and upper < 1e12:
        upper *= 2
    upper *= 2
    found = minimize_scalar(negative_dual, bounds=(0.0, upper), method="bounded",
                            options={"xatol": 1e-12 * max(1.0, upper), "maxiter": 500})
    h = float(found.x)
    value = max(0.0, -float(found.fun), -negative_dual(0.0))
    return result(value, h)


def stability_curve(losses, costs, r_values, *, theta1: float = 1.0, theta2: float = 1.0) -> np.ndarray:
    """R(β, r) for each r (non-decreasing in r)."""
    return np.array([stability_criterion(losses, costs, r, theta1=theta1, theta2=theta2).value for r in r_values])


def ratio_curve(losses, costs, r: float, ratios, *, scale: float = 1.0) -> np.ndarray:
    """R at fixed r against θ1/θ2 (θ1 = scale·√ratio, θ2 = scale/√ratio)."""
    return np.array([stability_criterion(losses, costs, r, theta1=scale * np.sqrt(q), theta2=scale / np.sqrt(q)).value
                     for q in ratios])


def perturbation_costs(original_embeddings, candidate_embeddings, original_lengths, candidate_lengths,
                       *, cost: str | Callable = "cosine_length") -> np.ndarray:
    """The (n, K + 1) cost matrix, column 0 = 0 (unperturbed).

    Parameters
    ----------
    original_embeddings : (n, dim)
    candidate_embeddings : (n, K, dim)
    original_lengths : (n,) token counts
    candidate_lengths : (n, K) token counts
    cost : name in :data:`COSTS` or a callable with the same signature
    """
    if isinstance(cost, str) and cost not in COSTS:
        raise ValueError(f"`cost` must be one of {', '.join(COSTS)} or a callable; got {cost!r}.")
    function = COSTS[cost] if isinstance(cost, str) else cost
    originals = np.asarray(original_embeddings, dtype=np.float64)
    candidates = np.asarray(candidate_embeddings, dtype=np.float64)
    n, k = candidates.shape[:2]
    matrix = np.zeros((n, k + 1))
    for i in range(n):
        matrix[i, 1:] = function(originals[i], candidates[i], original_lengths[i], candidate_lengths[i])
    return matrix
