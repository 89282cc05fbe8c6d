"""Plotly figures of the OT stability search (:mod:`dbpa_core.stability`): they take a study and draw; they compute nothing.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .figures import LAYOUT, model_colour

#: Figure 1's subtitle size (px) and the top margin that holds title and subtitle above the plot area.
STABILITY_SUBTITLE_SIZE, STABILITY_TOP_MARGIN = 12, 90


def stability_figure(study, task: str, curve: str) -> go.Figure:
    """Figure 1 of the OT stability paper for one task: every model on one chart.

    ``curve="ratio"``: R against θ1/θ2 at r = 50 % (Fig. 1a/1c); ``"risk"``: R
    against r at θ1 = θ2 = 2 (Fig. 1b/1d); ``"ratio_high"``: the θ curve at
    r = 75 % (not in the paper).  ``study`` is a
    :class:`~dbpa_core.paper.stability.StabilityStudy`.  R = ∞ (no shift
    reaches r) cannot be plotted: those points sit on a dotted line above the
    finite values, marked ▲ and labelled ∞ on hover.
    """
    values = study.curves(task, curve)  # validates `curve`
    finite = values[np.isfinite(values)]
    ceiling = 1.15 * finite.max() if finite.size and finite.max() > 0 else 1.0
    x = list(study.risks if curve == "risk" else study.ratios)
    figure = go.Figure()
    for index, row in enumerate(study.task_rows(task)):
        colour, name = model_colour(index), html.escape(row.target)
        y = values[index]
        figure.add_trace(go.Scatter(x=x, y=np.where(np.isfinite(y), y, np.nan).tolist(), mode="lines+markers",
                                    name=name, legendgroup=name, line=dict(color=colour)))
        if np.isinf(y).any():
            figure.add_trace(go.Scatter(x=[v for v, r in zip(x, y) if np.isinf(r)], y=[ceiling] * int(np.isinf(y).sum()),
                                        mode="lines+markers", name=f"{name}: R = ∞", legendgroup=name,
                                        marker=dict(symbol="triangle-up", size=10, color=colour),
                                        line=dict(color=colour, dash="dot"), hovertemplate="R = ∞<extra></extra>"))
    if np.isinf(values).any():
        figure.add_hline(y=ceiling, line=dict(color="grey", dash="dot", width=1), annotation_text="∞: no shift reaches r",
                         annotation_position="top left")
    r = study.settings["r_high" if curve == "ratio_high" else "r"]
    # The constraint as a subtitle at 12 px in a taller top margin: as <sup> in the title it was ~8 px and sat on
    # the y axis's top tick label. Every chart of the figure gets the same margin, so side by side they align.
    title = dict(text=f"R against r at θ₁ = θ₂ = {study.settings['theta1=theta2']:g}" if curve == "risk" else
                 f"R against θ₁/θ₂ at r = {r * 100:.0f} %",
                 subtitle=dict(text="" if curve == "risk" else f"1/θ₁ + 1/θ₂ = {study.settings['c']:g}",
                               font=dict(size=STABILITY_SUBTITLE_SIZE)))
    figure.update_layout(title=title, xaxis_title="target error rate r" if curve == "risk" else
                         "θ₁ / θ₂<br>(rewriting ÷ re-weighting price)",
                         yaxis_title="R(β, r): cost of the cheapest shift", yaxis_rangemode="tozero",
                         xaxis_type="linear" if curve == "risk" else "log",
                         **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": STABILITY_TOP_MARGIN},
                            # The legend at the figure's foot, below the two-line x title: placed under the plot
                            # area (LAYOUT's y = -0.25) it overlapped that title once the top margin grew.
                            "legend": {**LAYOUT["legend"], "yref": "container", "y": 0, "yanchor": "bottom"}})
    if curve != "risk":  # plotly's log axis labels 0.2 and 0.5 as "2" and "5": name every tick in full
        ticks = [v for v in (0.1, 0.2, 0.5, 1, 2, 5, 10) if study.ratios.min() <= v <= study.ratios.max()]
        figure.update_xaxes(tickvals=ticks, ticktext=[f"{v:g}" for v in ticks])
    return figure
