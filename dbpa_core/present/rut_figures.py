"""Plotly figures of the RUT: one audit's ranks (histogram, empirical CDF) and the RUT paper's experiments
(:mod:`dbpa_core.paper.rut`).  They take results and draw; they compute nothing.

Beside :mod:`dbpa_core.present.figures` (same layout and colours).
"""

from __future__ import annotations

import html
import textwrap

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..rut.scoring import SCORE_NAMES
from .figures import LAYOUT, MODEL_COLOURS, PERTURBED_COLOUR
from .formatting import format_percent
from .rut_study import AUC_DECIMALS

#: One colour and dash per method, the same in every chart.
METHOD_STYLE = {"rut": ("RUT (Cramér–von Mises)", "#d62728", "solid"),
                "mmd": ("MMD (Hamming kernel)", "#1f77b4", "dash"),
                "ks": ("KS (same ranks)", "#7f7f7f", "dot")}


def power_curves(curves: dict, labels: dict | None = None, *, columns: int = 3) -> go.Figure:
    """Power against the substituted share q: one panel per substitute, the three methods side by side.

    ``curves`` maps a substitute's name to its :class:`~dbpa_core.rut.power.PowerCurves`;
    ``labels`` its name to a title.
    """
    names = list(curves)
    labels = labels or {}
    rows = -(-len(names) // columns)
    first = next(iter(curves.values()))
    figure = make_subplots(rows=rows, cols=columns, shared_yaxes=True, vertical_spacing=0.2,
                           # wrapped: a long name over the right-hand column ran past the chart at 1024 px
                           subplot_titles=["<br>".join(textwrap.wrap(html.escape(labels.get(n, n)), 24))
                                           for n in names])
    for index, name in enumerate(names):
        c = curves[name]
        for method, (label, colour, dash) in METHOD_STYLE.items():
            figure.add_trace(go.Scatter(x=c.q, y=c.power[method], mode="lines+markers", line=dict(color=colour,
                                        dash=dash), marker=dict(size=5), name=label, legendgroup=method,
                                        showlegend=index == 0,
                                        hovertemplate=f"{label}<br>q = %{{x:.1f}}<br>power = %{{y:.3f}}"
                                                      f"<br>power AUC {c.power_auc[method]:.3f}<extra></extra>"),
                             row=index // columns + 1, col=index % columns + 1)
    figure.add_hline(y=first.alpha, line=dict(dash="dot", color="grey", width=1))
    figure.update_yaxes(range=[0, 1.05])
    # Short: three side by side at 1024 px ran into each other (the caption says what q is).
    figure.update_xaxes(title_text="share q substituted", row=rows)
    figure.update_yaxes(title_text="power", col=1)
    # Short enough for 1024 px; the settings (audits per q, n, m) are in the page's caption and the export.
    # The top margin leaves room for the two-line panel titles above the first row (under the figure's
    # title, which they overlapped with the default 50 px).
    figure.update_layout(title=f"Power against the share q (dotted: α = {first.alpha:g})",
                         height=300 * rows + 170, **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 110}})
    return figure


def power_auc_bars(curves: dict, labels: dict | None = None) -> go.Figure:
    """Power AUC of each method per substitute (the paper's Table 2a, on our substitutes), as horizontal bars.

    Horizontal: upright, six groups of three bars left ≈ 30 px a bar at 1024 px, where the Q8_0 group's
    labels ("0.051 0.031 0.049") ran into each other and the substitutes' names into their neighbours'.
    Lying down, every label has a row of its own and every name the axis' width.
    """
    labels = labels or {}
    names = list(curves)
    ticks = ["<br>".join(textwrap.wrap(html.escape(labels.get(n, n)), 20, break_long_words=False,
                                       break_on_hyphens=False)) for n in names]
    alpha = next(iter(curves.values())).alpha
    # Under the bars and their labels; a white halo round each label keeps the dotted line from running
    # through a value that sits at α (the Q8_0 group, whose power AUC is α: nothing detected).
    figure = go.Figure()
    figure.add_vline(x=alpha, line=dict(dash="dot", color="grey"), layer="below")
    for method, (label, colour, _) in METHOD_STYLE.items():
        values = [curves[n].power_auc[method] for n in names]
        figure.add_trace(go.Bar(y=ticks, x=values, orientation="h", name=label, marker_color=colour,
                                text=[f"{v:.{AUC_DECIMALS}f}" for v in values], textposition="outside",
                                textfont=dict(size=11, shadow="0 0 3px white"), cliponaxis=False,
                                hovertemplate=f"{label}<br>%{{y}}<br>power AUC %{{x:.{AUC_DECIMALS}f}}<extra></extra>"))
    # The line's meaning in the legend: an annotation on the line sat over the bars.
    figure.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(dash="dot", color="grey"),
                                name=f"{alpha:g}: power ≈ α at every q (nothing detected)"))
    figure.update_layout(barmode="group", title="Power AUC over q ∈ [0, 1] (1: detected at every share q > 0)",
                         xaxis_title="power AUC", xaxis_range=[0, 1.12], height=110 * len(names) + 200,
                         # The first substitute on top, as in the table below; the methods in the legend's order.
                         yaxis=dict(autorange="reversed", automargin=True), legend_traceorder="normal",
                         bargap=0.25, **{**LAYOUT, "legend": dict(orientation="h", yref="container", y=0.01,
                                                                  yanchor="bottom"),
                                         "margin": {**LAYOUT["margin"], "b": 120}})
    return figure


def score_selection_chart(selection: dict, labels: dict | None = None) -> go.Figure:
    """Mean AUROC (± 1 sd over trials) of each score function per substitute (the paper's Fig 2)."""
    labels = labels or {}
    figure = go.Figure()
    for index, (name, sel) in enumerate(selection.items()):
        figure.add_trace(go.Bar(x=[SCORE_NAMES.get(s, s) for s in sel.scores], y=sel.mean,
                                error_y=dict(type="data", array=sel.sd),
                                name=html.escape(labels.get(name, name)),
                                marker_color=MODEL_COLOURS[index % len(MODEL_COLOURS)]))
    figure.add_hline(y=0.5, line=dict(dash="dash", color="black"), annotation_text="0.5: no signal")
    first = next(iter(selection.values()))
    figure.update_layout(barmode="group", title=f"AUROC of each score ({len(first.aurocs)} trials × "
                                                f"{first.n_prompts} prompts)",
                         yaxis_title="AUROC (> 0.5: substitute higher)", yaxis_range=[0, 1],
                         **LAYOUT)
    return figure


def share_bound_curves(curves: dict, labels: dict | None = None) -> go.Figure:
    """The mean 95 % lower bound on the substituted share against the true share q (below the diagonal: valid)."""
    labels = labels or {}
    figure = go.Figure()
    for index, (name, c) in enumerate(curves.items()):
        figure.add_trace(go.Scatter(x=c.q, y=c.mean_share_bound, mode="lines+markers",
                                    name=html.escape(labels.get(name, name)),
                                    line=dict(color=MODEL_COLOURS[index % len(MODEL_COLOURS)])))
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dot", color="black"),
                                name="true share q"))
    level = format_percent(1 - next(iter(curves.values())).alpha)
    figure.update_layout(title=f"Lower bound on the substituted share ({level}), mean over audits",
                         xaxis_title="true share q", yaxis_title="lower bound", yaxis_range=[0, 1.02], **LAYOUT)
    return figure


def rank_histogram(result, bins: int = 10) -> go.Figure:
    """Histogram of the RUT ranks against the flat Uniform[0, 1] expectation."""
    figure = go.Figure(go.Histogram(x=result.ranks, xbins=dict(start=0, end=1, size=1 / bins), name="target ranks",
                                    marker_color=PERTURBED_COLOUR, opacity=0.8))
    figure.add_hline(y=len(result.ranks) / bins, line=dict(dash="dash", color="black"))
    # The line's meaning in the legend: written on the line, it sat over the bars.
    figure.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(dash="dash", color="black"),
                                name="expected if it is the reference model"))
    # The axis is the ranks' whole support, so an empty end reads as empty, not as off-screen.
    figure.update_layout(title="Ranks of the target's answers",
                         xaxis_title="rank r (0 lowest, 1 highest)",
                         xaxis_range=[0, 1], yaxis_title="prompts", **LAYOUT)
    return figure


def rank_ecdf(result) -> go.Figure:
    """Empirical CDF of the ranks against the diagonal (the uniform CDF)."""
    ranks = np.sort(result.ranks)
    heights = np.arange(1, len(ranks) + 1) / len(ranks)
    figure = go.Figure(go.Scatter(x=np.concatenate([[0], ranks, [1]]), y=np.concatenate([[0], heights, [1]]),
                                  mode="lines", line=dict(shape="hv", color=PERTURBED_COLOUR), name="ECDF of ranks"))
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dot", color="black"),
                                name="Uniform (H₀)"))
    figure.update_layout(title="ECDF of the ranks vs uniform", xaxis_title="r", xaxis_range=[0, 1],
                         yaxis_range=[0, 1.02], yaxis_title="share of prompts with rank ≤ r", **LAYOUT)
    return figure
