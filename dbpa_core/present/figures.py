"""Plotly figure builders.  They take result objects and draw; they compute nothing.

Model outputs appear in hover labels, where Plotly renders a subset of HTML:
every output text is escaped so that it is shown as text, never as markup.
"""

from __future__ import annotations

import html
import textwrap

import numpy as np
import plotly.graph_objects as go

ORIGINAL_COLOUR = "#1f77b4"
PERTURBED_COLOUR = "#d62728"
NULL_COLOUR = "#9aa5b1"
TAIL_COLOUR = "#f28e2b"
LAYOUT = dict(template="plotly_white", margin=dict(l=40, r=20, t=50, b=40), legend=dict(orientation="h", y=-0.15))


def hover_text(text: str, width: int = 70, max_lines: int = 8) -> str:
    """An output as safe hover text: HTML-escaped, wrapped, shortened."""
    lines = textwrap.wrap(text or "(empty output)", width=width)
    if len(lines) > max_lines:
        lines = lines[:max_lines] + ["…"]
    return "<br>".join(html.escape(line) for line in lines)


def output_clouds(coordinates: np.ndarray, arm_sizes: tuple[int, int], texts, *, labels=("original x", "perturbed x′"),
                  method: str = "PCA") -> go.Figure:
    """2-D scatter of both arms' outputs with their centroids.

    Parameters
    ----------
    coordinates : (k0 + k1, 2) projection (original arm first)
    arm_sizes : (k0, k1)
    texts : the k0 + k1 output texts, for hover
    """
    k0, _ = arm_sizes
    figure = go.Figure()
    for arm, (rows, colour, label) in enumerate(((slice(0, k0), ORIGINAL_COLOUR, labels[0]),
                                                  (slice(k0, None), PERTURBED_COLOUR, labels[1]))):
        points = coordinates[rows]
        arm_texts = list(texts)[rows]
        figure.add_trace(go.Scatter(
            x=points[:, 0], y=points[:, 1], mode="markers", name=label,
            marker=dict(color=colour, size=9, opacity=0.75, line=dict(width=0.5, color="white")),
            customdata=np.arange(len(points)) + (0 if arm == 0 else k0),
            hovertext=[f"<b>{html.escape(label)}</b> #{i}<br>{hover_text(t)}" for i, t in enumerate(arm_texts)],
            hoverinfo="text",
        ))
        centre = points.mean(axis=0)
        figure.add_trace(go.Scatter(x=[centre[0]], y=[centre[1]], mode="markers", name=f"centroid of {label}",
                                    marker=dict(symbol="x", size=16, color=colour, line=dict(width=3, color=colour)),
                                    hoverinfo="name"))
    figure.update_layout(title=f"Outputs in 2-D ({method} projection)", xaxis_title=f"{method} 1",
                         yaxis_title=f"{method} 2", **LAYOUT)
    return figure


def null_histogram(result, *, shown: int | None = None, label: str = "ω") -> go.Figure:
    """The permutation null distribution with T_obs marked and the tail ≥ T_obs shaded.

    ``shown`` draws only the first resamples (to watch the null build up).
    """
    null = np.asarray(result.null_distribution)
    if shown is not None:
        null = null[: max(1, int(shown))]
    observed = result.statistic
    tail = null >= observed if result.alternative != "less" else null <= observed
    bins = dict(start=float(min(null.min(), observed)), end=float(max(null.max(), observed)) * 1.0001 + 1e-12,
                size=(float(max(null.max(), observed) - min(null.min(), observed)) or 1.0) / 40)
    figure = go.Figure()
    figure.add_trace(go.Histogram(x=null[~tail], xbins=bins, name="null (re-split)", marker_color=NULL_COLOUR))
    figure.add_trace(go.Histogram(x=null[tail], xbins=bins, name="as or more extreme", marker_color=TAIL_COLOUR))
    figure.add_vline(x=observed, line=dict(color="black", width=3, dash="dash"),
                     annotation_text=f"T_obs = {observed:.4g}", annotation_position="top")
    figure.update_layout(barmode="stack", title=f"Permutation null of {label} ({len(null)} re-splits)",
                         xaxis_title=label, yaxis_title="count", **LAYOUT)
    return figure


def similarity_histograms(result) -> go.Figure:
    """P0 (within the original arm) and P1 (across arms) as overlaid densities."""
    figure = go.Figure()
    figure.add_trace(go.Histogram(x=result.within_similarities, name="P0: within original", histnorm="probability density",
                                  opacity=0.6, marker_color=ORIGINAL_COLOUR, nbinsx=30))
    figure.add_trace(go.Histogram(x=result.across_similarities, name="P1: across arms", histnorm="probability density",
                                  opacity=0.6, marker_color=PERTURBED_COLOUR, nbinsx=30))
    figure.update_layout(barmode="overlay", title="Similarity distributions P0 and P1",
                         xaxis_title=f"similarity ({result.similarity})", yaxis_title="density", **LAYOUT)
    return figure


def roc_curves(curves: dict, *, max_fpr: float | None = None, best: str | None = None) -> go.Figure:
    """ROC curves of several models/settings; ``curves`` maps a name to an ROCResult."""
    figure = go.Figure()
    for name, roc in curves.items():
        width = 5 if name == best else 2
        figure.add_trace(go.Scatter(x=np.concatenate([[0], roc.fpr]), y=np.concatenate([[0], roc.tpr]),
                                    mode="lines+markers", line=dict(width=width, shape="hv"),
                                    name=f"{name} (AUC {roc.auc:.2f})" + (" ★ best" if name == best else "")))
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dot", color="grey"),
                                name="chance"))
    if max_fpr is not None:
        figure.add_vline(x=max_fpr, line=dict(color="black", dash="dash"), annotation_text=f"allowed FPR {max_fpr:g}")
    figure.update_layout(title="TPR against FPR as α sweeps from 0 to 1", xaxis_title="false-positive rate",
                         yaxis_title="true-positive rate", xaxis_range=[-0.02, 1.02], yaxis_range=[-0.02, 1.02],
                         **LAYOUT)
    return figure


def rates_over_alpha(curves: dict) -> go.Figure:
    """FPR(α) and TPR(α) per model (paper Fig. 1)."""
    figure = go.Figure()
    for name, roc in curves.items():
        figure.add_trace(go.Scatter(x=roc.thresholds, y=roc.tpr, mode="lines", line=dict(shape="hv"),
                                    name=f"TPR {name}"))
        figure.add_trace(go.Scatter(x=roc.thresholds, y=roc.fpr, mode="lines", line=dict(shape="hv", dash="dash"),
                                    name=f"FPR {name}"))
    figure.update_layout(title="Detection rates over the significance level α", xaxis_title="α",
                         yaxis_title="rate", xaxis_type="log", **LAYOUT)
    return figure


def power_curve(curve, *, target_power: float | None = None) -> go.Figure:
    """Simulated power against samples per arm, with 95 % intervals."""
    figure = go.Figure(go.Scatter(
        x=curve.sample_sizes, y=curve.power, mode="lines+markers", name="power",
        error_y=dict(type="data", symmetric=False, array=curve.ci_high - curve.power,
                     arrayminus=curve.power - curve.ci_low)))
    if target_power is not None:
        figure.add_hline(y=target_power, line=dict(dash="dash"), annotation_text=f"target {target_power:g}")
    figure.update_layout(title=f"Power at α = {curve.alpha:g} ({curve.n_trials} simulated audits per k)",
                         xaxis_title="samples per arm k", yaxis_title="power", yaxis_range=[0, 1.05], **LAYOUT)
    return figure


def discrepancy_bars(names, statistics, pvalues, *, alpha: float, title: str, label: str = "ω") -> go.Figure:
    """One bar of ω per model or perturbation, coloured by significance (paper Fig. 3)."""
    colours = [ORIGINAL_COLOUR if p <= alpha else NULL_COLOUR for p in pvalues]
    figure = go.Figure(go.Bar(x=list(statistics), y=[html.escape(str(n)) for n in names], orientation="h",
                              marker_color=colours, text=[f"p = {p:.3g}" for p in pvalues], textposition="outside",
                              cliponaxis=False))
    figure.update_layout(title=title, xaxis_title=label, yaxis=dict(autorange="reversed"),
                         **{**LAYOUT, "margin": dict(l=40, r=90, t=50, b=40)})
    return figure


def mean_sd_bars(labels, means, sds, highlighted, *, title: str, label: str = "ω",
                 highlight_name: str = "significant", other_name: str = "not significant") -> go.Figure:
    """Bars of a mean with ± sd error bars (over seeds), ``highlighted`` ones in blue (paper Fig. 3)."""
    colours = [ORIGINAL_COLOUR if h else NULL_COLOUR for h in highlighted]
    figure = go.Figure(go.Bar(x=[html.escape(str(name)) for name in labels], y=list(means), marker_color=colours,
                              error_y=dict(type="data", array=list(sds), visible=True),
                              hovertext=[highlight_name if h else other_name for h in highlighted]))
    figure.update_layout(title=title, yaxis_title=f"{label} (mean ± sd)", **LAYOUT)
    return figure


def persona_grid(statistics: np.ndarray, stars, rows, columns, *, label: str = "ω") -> go.Figure:
    """Heat map of ω for personas (rows) × models (columns), with significance stars (paper Table 2)."""
    text = [[f"{statistics[i, j]:.3f}{stars[i][j]}" for j in range(len(columns))] for i in range(len(rows))]
    figure = go.Figure(go.Heatmap(z=statistics, x=[html.escape(c) for c in columns], y=[html.escape(r) for r in rows],
                                  text=text, texttemplate="%{text}", colorscale="Blues", colorbar=dict(title=label)))
    figure.update_layout(title=f"{label} per persona and model (* p<0.05, ** p<0.01, *** p<0.001)",
                         yaxis=dict(autorange="reversed"), **LAYOUT)
    return figure


def rank_histogram(result, bins: int = 10) -> go.Figure:
    """Histogram of the RUT ranks against the flat Uniform[0, 1] expectation."""
    figure = go.Figure(go.Histogram(x=result.ranks, xbins=dict(start=0, end=1, size=1 / bins), name="target ranks",
                                    marker_color=PERTURBED_COLOUR, opacity=0.8))
    figure.add_hline(y=len(result.ranks) / bins, line=dict(dash="dash", color="black"),
                     annotation_text="expected if the API is the reference model")
    figure.update_layout(title="Where the target's responses rank among the reference model's",
                         xaxis_title="randomized rank r (0 = least typical score, 1 = most)",
                         yaxis_title="prompts", **LAYOUT)
    return figure


def rank_ecdf(result) -> go.Figure:
    """Empirical CDF of the ranks against the diagonal (the uniform CDF)."""
    ranks = np.sort(result.ranks)
    heights = np.arange(1, len(ranks) + 1) / len(ranks)
    figure = go.Figure(go.Scatter(x=np.concatenate([[0], ranks, [1]]), y=np.concatenate([[0], heights, [1]]),
                                  mode="lines", line=dict(shape="hv", color=PERTURBED_COLOUR), name="ECDF of ranks"))
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dot", color="black"),
                                name="Uniform (H₀)"))
    figure.update_layout(title="Empirical CDF of the ranks vs the uniform diagonal", xaxis_title="r",
                         yaxis_title="share of prompts with rank ≤ r", **LAYOUT)
    return figure


def substitution_power_curve(power) -> go.Figure:
    """RUT power (CvM, and the KS baseline) against the substitution probability q."""
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=power.q, y=power.power, mode="lines+markers",
                                name=f"Cramér–von Mises (AUC {power.auc:.2f})"))
    figure.add_trace(go.Scatter(x=power.q, y=power.power_ks, mode="lines+markers", line=dict(dash="dash"),
                                name=f"Kolmogorov–Smirnov (AUC {power.auc_ks:.2f})"))
    figure.add_hline(y=power.alpha, line=dict(dash="dot", color="grey"), annotation_text=f"α = {power.alpha:g}")
    figure.update_layout(title=f"Detection rate when a share q of answers comes from the other model "
                               f"({power.n_trials} simulated audits per q)",
                         xaxis_title="substitution probability q", yaxis_title="power", yaxis_range=[0, 1.05],
                         **LAYOUT)
    return figure


def stability_curves(curves: dict, x, *, x_title: str, title: str, log_x: bool = False) -> go.Figure:
    """R against r (or against θ1/θ2) for several models or settings."""
    figure = go.Figure()
    for name, values in curves.items():
        figure.add_trace(go.Scatter(x=list(x), y=list(values), mode="lines+markers", name=html.escape(name)))
    figure.update_layout(title=title, xaxis_title=x_title, yaxis_title="R(β, r): cost of the cheapest shift",
                         xaxis_type="log" if log_x else "linear", **LAYOUT)
    return figure
