"""Tests of dbpa_core.stability.criterion: the dual against a direct solution of the primal, limits, monotonicity."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from dbpa_core.stability.criterion import (COSTS, perturbation_costs, ratio_curve, stability_criterion, stability_curve)


def primal(losses, costs, r, theta1, theta2):
    """min θ1 Σ q d + θ2 KL(w ‖ uniform) s.t. Σ q ℓ ≥ r, q ≥ 0, Σ q = 1 (w_i = Σ_k q_ik), by SLSQP."""
    n, k = losses.shape

    def objective(q):
        q = q.reshape(n, k)
        w = q.sum(axis=1)
        kl = np.sum(np.where(w > 1e-300, w * np.log(np.maximum(w, 1e-300) * n), 0.0))
        return theta1 * np.sum(q * costs) + theta2 * kl

    constraints = [{"type": "eq", "fun": lambda q: q.sum() - 1},
                   {"type": "ineq", "fun": lambda q: (q.reshape(n, k) * losses).sum() - r}]
    best = np.inf
    rng = np.random.default_rng(0)
    for _ in range(8):  # a few starts: SLSQP is local (the problem is convex, this only guards numerics)
        start = rng.dirichlet(np.ones(n * k))
        found = minimize(objective, start, method="SLSQP", bounds=[(0, 1)] * (n * k), constraints=constraints,
                         options={"ftol": 1e-13, "maxiter": 2000})
        if found.success and (found.x.reshape(n, k) * losses).sum() >= r - 1e-7:
            best = min(best, found.fun)
    return best


def random_instance(seed, n=5, k=3):
    rng = np.random.default_rng(seed)
    losses = (rng.random((n, k)) < 0.35).astype(float)
    losses[:, 0] = rng.random(n) < 0.2
    costs = rng.random((n, k)) * 1.5
    costs[:, 0] = 0.0
    return losses, costs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("theta1", "theta2"), [(1.0, 1.0), (3.0, 0.5), (0.5, 2.0)])
def test_dual_equals_primal(seed, theta1, theta2):
    losses, costs = random_instance(seed)
    assert np.nanmax(losses, axis=1).max() > 0  # every seed's draw has a failing candidate (else the test is empty)
    for r in (0.3, 0.6, 0.9):
        dual = stability_criterion(losses, costs, r, theta1=theta1, theta2=theta2)
        if r <= dual.baseline_risk:
            assert dual.value == 0.0
            continue
        assert dual.value == pytest.approx(primal(losses, costs, r, theta1, theta2), rel=2e-4, abs=2e-6)


def test_reweighting_only_limit_is_bernoulli_kl():
    """θ1 → ∞: corruption is unaffordable; R = θ2·KL(Bern(r) ‖ Bern(baseline))."""
    losses, costs = random_instance(3, n=8)
    losses[:, 0] = [1, 0, 0, 1, 0, 0, 0, 0]
    p, r, theta2 = 0.25, 0.6, 0.7
    expected = theta2 * (r * np.log(r / p) + (1 - r) * np.log((1 - r) / (1 - p)))
    value = stability_criterion(losses, costs, r, theta1=1e7, theta2=theta2).value
    assert value == pytest.approx(expected, rel=1e-6)


def test_corruption_only_limit_is_a_fractional_knapsack():
    """θ2 → ∞: weights stay uniform; pay for the cheapest failing rewrites until the risk is r."""
    losses = np.array([[0, 1, 0], [0, 0, 1], [0, 1, 1], [1, 0, 0], [0, 0, 0]], float)
    costs = np.array([[0, .4, .1], [0, .9, .3], [0, .2, .5], [0, .3, .3], [0, .1, .1]])
    # failing costs: sample 4 already fails (0), then 0.2, 0.3, 0.4; sample 5 cannot fail
    r, theta1 = 0.7, 2.0  # mass 0.7 = 0.2 (free) + 0.2 (0.2) + 0.2 (0.3) + 0.1 (0.4)
    expected = theta1 * (0.2 * 0.2 + 0.2 * 0.3 + 0.1 * 0.4)
    value = stability_criterion(losses, costs, r, theta1=theta1, theta2=1e8).value
    assert value == pytest.approx(expected, rel=1e-5)


def test_monotone_in_r_and_zero_below_baseline():
    losses, costs = random_instance(11, n=12, k=4)
    losses[0, 0] = 1
    rs = np.linspace(0, 1, 21)
    values = stability_curve(losses, costs, rs)
    assert values[0] == 0.0 and np.all(np.diff(values) >= -1e-9)
    assert np.isfinite(values[-1])


def test_most_sensitive_distribution():
    losses = np.array([[0, 1], [0, 1], [0, 0]], float)
    costs = np.array([[0, 0.1], [0, 2.0], [0, 0.5]])
    result = stability_criterion(losses, costs, 0.6)
    assert result.choices[0] == 1  # the cheap failing rewrite is chosen
    assert result.weights.sum() == pytest.approx(1) and result.weights[0] > result.weights[2]


def test_unreachable_and_ratio_curve():
    losses = np.zeros((3, 2))
    costs = np.array([[0, 1.0]] * 3)
    assert stability_criterion(losses, costs, 0.5).value == np.inf
    losses, costs = random_instance(2, n=6)
    losses[0, 1] = 1
    curve = ratio_curve(losses, costs, 0.5, [0.1, 1, 10])
    assert curve.shape == (3,) and np.all(curve > 0)


def test_costs():
    rng = np.random.default_rng(0)
    originals = rng.normal(size=(2, 4))
    candidates = np.stack([np.stack([originals[i], -originals[i]]) for i in range(2)])
    matrix = perturbation_costs(originals, candidates, [10, 10], [[10, 20], [10, 5]], cost="cosine_length")
    assert matrix[:, 0].tolist() == [0, 0]
    assert matrix[0, 1] == pytest.approx(0, abs=1e-12)  # identical input, same length: no cost
    assert matrix[0, 2] == pytest.approx(2 + 0.5 * np.log(2))
    paper = perturbation_costs(originals, candidates, [10, 10], [[10, 20], [10, 5]])  # eq. (1), the default
    assert paper[0, 2] == pytest.approx(2 * 2) and paper[1, 2] == pytest.approx(2 * 2)
    assert set(COSTS) == {"paper", "cosine_length", "cosine"}
    custom = perturbation_costs(originals, candidates, [1, 1], [[1, 1], [1, 1]], cost=lambda *a: np.ones(2))
    assert custom[:, 1:].tolist() == [[1, 1], [1, 1]]


@pytest.mark.parametrize(("call", "match"), [
    (lambda: stability_criterion(np.zeros(3), np.zeros(3), 0.5), "`losses` must be 2-D"),
    (lambda: stability_criterion(np.zeros((2, 2)), np.zeros((2, 3)), 0.5), "`costs` must have the shape"),
    (lambda: stability_criterion(np.zeros((2, 2)), np.ones((2, 2)), 0.5), r"`costs\[:, 0\]` must be 0"),
    (lambda: stability_criterion(np.full((2, 2), 0.5), np.zeros((2, 2)), 0.5), "must be 0/1"),
    (lambda: stability_criterion(np.zeros((2, 2)), np.array([[0, -1], [0, 1.0]]), 0.5), "`costs` must be >= 0"),
    (lambda: stability_criterion(np.zeros((2, 2)), np.zeros((2, 2)), 1.5), "`r` must be a risk"),
    (lambda: stability_criterion(np.zeros((2, 2)), np.zeros((2, 2)), 0.5, theta1=0), "`theta1`"),
    (lambda: perturbation_costs(np.zeros((1, 2)), np.zeros((1, 1, 2)), [1], [[1]], cost="l2"), "`cost` must be one of"),
])
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
