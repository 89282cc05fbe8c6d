"""Lan–DeMets α-spending for the group-sequential DBPA test (:mod:`dbpa_core.stats.sequential`): how much of
α each look may spend, and whether any look can reject at all (Lan & DeMets 1983)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from .. import _validation as v


SPENDING = ("pocock", "obrien_fleming")


SPENDING_LABELS = {"pocock": "Pocock-type", "obrien_fleming": "O'Brien–Fleming-type"}


def alpha_spent(t, alpha: float, spending: str = "pocock"):
    r"""The Lan–DeMets α-spending function at information time ``t`` ∈ [0, 1].

    ``"pocock"``: α·ln(1 + (e − 1)·t); ``"obrien_fleming"``:
    2 − 2Φ(z_{1−α/2}/√t).  Both are 0 at t = 0 and α at t = 1.
    """
    alpha = v.check_probability(alpha, "alpha")
    spending = v.check_choice(spending, "spending", SPENDING)
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    if spending == "pocock":
        return alpha * np.log1p((math.e - 1.0) * t)
    # 2 − 2Φ(z/√t) = erfc(z/√(2t)), exact in the far tail where 1 − Φ would round to 0.
    z = NormalDist().inv_cdf(1 - alpha / 2)
    spent = [math.erfc(z / math.sqrt(2 * s)) if s > 0 else 0.0 for s in t.ravel()]
    return np.reshape(spent, t.shape)


def budget_warning(alpha: float, *, k_max: int, batch_size: int, n_resamples: int,
                   spending: str = "pocock") -> str | None:
    """A warning when no look of a sequential test can reject (None when one can).

    Look i rejects only when the α spent by then gives at least one of the B + 1 paths:
    ⌊α(t_i)(B + 1)⌋ ≥ 1.  With α(1)·(B + 1) < 1 — a small B, or a small α such as α/m for many
    perturbations — no look ever can, and the test would draw all k_max outputs to say nothing.
    """
    looks = [min(n, k_max) / k_max for n in range(batch_size, k_max + batch_size, batch_size)]
    budgets = [math.floor(float(alpha_spent(t, alpha, spending)) * (n_resamples + 1) + 1e-9) for t in looks]
    if budgets[-1] >= 1:
        return None
    return (f"No look can reject: α = {alpha:.3g} spent over B + 1 = {n_resamples + 1:,} re-split paths allows "
            f"⌊α·(B + 1)⌋ = 0 of them to cross the boundary, so the test draws all {k_max} outputs per arm and "
            f"cannot find a change. Use B ≥ {math.ceil(1 / alpha) - 1:,}.")
