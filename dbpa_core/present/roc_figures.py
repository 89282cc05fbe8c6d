"""Plotly figures of detection rates: ROC curves over the allowed false-positive rate, TPR/FPR over α (paper Figs 1–2).

They take result objects and draw; they compute nothing (same layout and colours as :mod:`dbpa_core.present.figures`).
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .figures import LAYOUT, model_colour
from .formatting import format_percent


def roc_curves(curves: dict, *, max_fpr: float | None = None, best: str | None = None,
               auc_label: str = "AUC") -> go.Figure:
    """ROC curves of several models/settings; ``curves`` maps a name to an ROCResult (one colour per model).

    ``auc_label`` names the AUC in the legend (``"pooled AUC"`` where a table beside it averages per-seed AUCs).
    """
    figure = go.Figure()
    for index, (name, roc) in enumerate(curves.items()):
        width = 5 if name == best else 2
        figure.add_trace(go.Scatter(x=np.concatenate([[0], roc.fpr]), y=np.concatenate([[0], roc.tpr]),
                                    mode="lines+markers", line=dict(width=width, shape="hv", color=model_colour(index)),
                                    name=f"{name} ({auc_label} {roc.auc:.2f})" + (" ★ best" if name == best else "")))
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dot", color="grey"),
                                name="chance"))
    if max_fpr is not None:
        # The label at the bottom: at the top it sat under the TPR = 1 line of a perfect curve (trial 8).
        figure.add_vline(x=max_fpr, line=dict(color="black", dash="dash"),
                         annotation_text=f"allowed FPR {format_percent(max_fpr)}", annotation_position="bottom right")
    figure.update_layout(title="TPR against FPR as α sweeps from 0 to 1", xaxis_title="false-positive rate",
                         yaxis_title="true-positive rate", xaxis_range=[-0.02, 1.02], yaxis_range=[-0.02, 1.02],
                         **LAYOUT)
    return figure


def best_model_bars(curves: dict, bests: dict, *, title: str = "TPR at each allowed FPR (paper Fig. 2)"
                    ) -> go.Figure:
    """Fig. 2: each model's TPR at each allowed FPR, the best model's bar outlined in black.

    ``curves`` maps a model to its ROCResult; ``bests`` maps an allowed FPR to the best model's name, or None
    when none is declared (a tie, or no model flags a target): then no bar is outlined at that FPR.
    """
    figure = go.Figure()
    names = [html.escape(str(name)) for name in curves]
    for max_fpr, best in bests.items():
        tprs = [roc.tpr_at_fpr(max_fpr)[0] for roc in curves.values()]
        figure.add_trace(go.Bar(x=names, y=tprs, name=f"allowed FPR {format_percent(max_fpr)}",
                                text=[format_percent(t) for t in tprs], textposition="outside", cliponaxis=False,
                                marker_line=dict(color=["black" if n == best else "rgba(0,0,0,0)" for n in curves],
                                                 width=3)))
    figure.update_layout(title=title, yaxis_title="true-positive rate", yaxis_range=[0, 1.1], barmode="group",
                         **LAYOUT)
    return figure


def rates_over_alpha(curves: dict) -> go.Figure:
    """FPR(α) and TPR(α) per model (paper Fig. 1): one colour per model, TPR solid, FPR dashed.

    The dotted line y = α is what a calibrated test's FPR follows; log-scaled α
    ticks are labelled with plain numbers.
    """
    figure = go.Figure()
    for index, (name, roc) in enumerate(curves.items()):
        colour = model_colour(index)
        figure.add_trace(go.Scatter(x=roc.thresholds, y=roc.tpr, mode="lines", line=dict(shape="hv", color=colour),
                                    name=f"TPR {name}", legendgroup=name))
        figure.add_trace(go.Scatter(x=roc.thresholds, y=roc.fpr, mode="lines", legendgroup=name,
                                    line=dict(shape="hv", dash="dash", color=colour), name=f"FPR {name}"))
    ticks = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1]
    figure.add_trace(go.Scatter(x=ticks, y=ticks, mode="lines", line=dict(dash="dot", color="black"),
                                name="y = α (a calibrated FPR)"))
    figure.update_layout(title="Detection rates over the significance level α", xaxis_title="α (log scale)",
                         yaxis_title="rate", yaxis_range=[-0.02, 1.02],
                         xaxis=dict(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks]), **LAYOUT)
    return figure
