"""The stability page's analysis, computed once per input and shared by every session (bounded).

Every curve and criterion of the page comes from one call: each setting's
criterion at the chosen risk level is computed once and read by both the
summary table and the "most sensitive samples" table (it was computed twice).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from dbpa_core.audit.request import EmbedderConfig

from .resources import embedder_for, store

#: Risk levels r of the R(r) curves and price ratios θ₁/θ₂ of the ratio curves.
RISKS = np.round(np.linspace(0, 1, 21), 2)
RATIOS = np.geomspace(0.05, 20, 15)


@dataclass(frozen=True, eq=False)
class StabilityView:
    """The recorded settings' data with their curves and criteria at one (cost, θ, r)."""

    data: dict
    curves: dict
    ratio_curves: dict
    criteria: dict  # setting → StabilityResult at r


@st.cache_data(max_entries=32, show_spinner="Embedding the recorded answers (first time only)…")
def stability_view(cost: str, theta: float, risk: float, embedder: EmbedderConfig, _key: str = "") -> StabilityView:
    from dbpa_core.stability.criterion import ratio_curve, stability_criterion, stability_curve
    from dbpa_core.stability.data import load_recorded_stability

    data = load_recorded_stability(embedder_for(embedder, _key), cost=cost, store=store())
    return StabilityView(
        data,
        {name: stability_curve(d.losses, d.costs, RISKS, theta1=theta, theta2=theta) for name, d in data.items()},
        {name: ratio_curve(d.losses, d.costs, risk, RATIOS, scale=theta) for name, d in data.items()},
        {name: stability_criterion(d.losses, d.costs, risk, theta1=theta, theta2=theta) for name, d in data.items()})
