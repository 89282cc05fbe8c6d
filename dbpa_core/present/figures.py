"""Plotly figure builders.  They take result objects and draw; they compute nothing.

Model outputs appear in hover labels, where Plotly renders a subset of HTML:
every output text is escaped so that it is shown as text, never as markup.
"""

from __future__ import annotations

import html
import textwrap

import numpy as np
import plotly.graph_objects as go

from .formatting import format_number, format_pvalue, p_relation

ORIGINAL_COLOUR = "#1f77b4"
PERTURBED_COLOUR = "#d62728"
NULL_COLOUR = "#9aa5b1"
TAIL_COLOUR = "#f28e2b"
#: Models side by side: the i-th model of a page has the i-th colour in every chart (Plotly's D3 palette
#: without blue and red, which mean "original" and "perturbed" here, then the darker shades of D3's
#: category20b): sixteen colours, so the paper's nine models never share one on a chart (issue 29).
MODEL_COLOURS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#ff7f0e", "#7f7f7f",
                 "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354")
#: The legend sits well below the x-axis title (at y = -0.15 it covered "PCA 1", issue 29).
LAYOUT = dict(template="plotly_white", margin=dict(l=40, r=20, t=50, b=40),
              legend=dict(orientation="h", y=-0.25, yanchor="top"))


def hover_text(text: str, width: int = 70, max_lines: int = 8) -> str:
    """An output as safe hover text: HTML-escaped, wrapped, shortened."""
    lines = textwrap.wrap(text or "(empty output)", width=width)
    if len(lines) > max_lines:
        lines = lines[:max_lines] + ["…"]
    return "<br>".join(html.escape(line) for line in lines)


def output_clouds(coordinates: np.ndarray, arm_sizes: tuple[int, int], texts, *, labels=("original x₀", "perturbed x₁"),
                  method: str = "PCA", axis_ranges=None) -> go.Figure:
    """2-D scatter of both arms' outputs with their centroids.

    Parameters
    ----------
    coordinates : (k0 + k1, 2) projection (original arm first)
    arm_sizes : (k0, k1)
    texts : the k0 + k1 output texts, for hover
    axis_ranges : ((x_min, x_max), (y_min, y_max)), optional
        Fixed axes, so that clouds growing sample by sample do not jump.
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
        if not len(points):  # an arm with no output yet (a draw followed live)
            continue
        centre = points.mean(axis=0)
        figure.add_trace(go.Scatter(x=[centre[0]], y=[centre[1]], mode="markers", name=f"centroid of {label}",
                                    marker=dict(symbol="x", size=16, color=colour, line=dict(width=3, color=colour)),
                                    hoverinfo="name"))
    # The legend (two rows of two) at the bottom of the figure, below the axis title: placed relative to the
    # plot it ran into "PCA 1" at 1600 px, where the plot is wider than tall.
    figure.update_layout(title=f"Outputs in 2-D ({method} projection)", xaxis_title=f"{method} 1",
                         yaxis_title=f"{method} 2",
                         **{**LAYOUT, "margin": {**LAYOUT["margin"], "b": 110},
                            "legend": dict(orientation="h", yref="container", y=0.01, yanchor="bottom")})
    if axis_ranges is not None:
        figure.update_layout(xaxis_range=list(axis_ranges[0]), yaxis_range=list(axis_ranges[1]))
    return figure


def _null_layout(null: np.ndarray, observed: float, n_bins: int = 40) -> dict:
    """Bins and x-range of a null histogram that stay readable when T_obs or a few re-splits are far out.

    Two breaks of the axis, each marked on the figure: when the observed
    statistic lies further beyond the null than the null's own width, the
    axis shows the null alone and T_obs as a marker at its edge; when a
    handful of re-splits (the top 0.5 %) reach far beyond the rest, they are
    counted in the last bar ("overflow") instead of stretching the axis until
    the null is one bar.
    """
    low, high = float(null.min()), float(null.max())
    body = float(np.quantile(null, 0.995))
    overflow = high - body > 2 * (body - low) > 0
    if overflow:
        high = body
    span = high - low or abs(observed) * 0.1 or 1.0
    far = observed > high + span or observed < low - span
    if not far:
        low, high = min(low, observed), max(high, observed)
        span = high - low or span
    edges = np.linspace(low, high + span * 1e-9, n_bins + 1)
    return {"edges": edges, "far": far, "overflow": overflow,
            "range": [low - 0.04 * span, high + (0.3 if far else 0.04) * span]}


def _null_counts(null: np.ndarray, observed: float, alternative: str, edges: np.ndarray):
    """Per-bin counts of re-splits less extreme than T_obs, and as or more extreme (the p-value's tail).

    Re-splits beyond the last edge are counted in the last bin (the overflow bar).
    """
    from ..stats.permutation import as_extreme

    tail = as_extreme(null, observed, alternative)  # the p-value's own rule (its tie tolerance included)
    shown = np.clip(null, edges[0], edges[-1] - (edges[-1] - edges[-2]) * 1e-6)
    return np.histogram(shown[~tail], edges)[0], np.histogram(shown[tail], edges)[0]


def null_histogram(result, *, shown: int | None = None, label: str = "ω", replay_frames: int = 0) -> go.Figure:
    """The permutation null distribution with T_obs marked and the tail ≥ T_obs in orange.

    Parameters
    ----------
    result : DBPAResult
    shown : int, optional
        Draw only the first ``shown`` re-splits.
    label : str
        Name of the statistic on the axis.
    replay_frames : int
        With n > 0, the figure carries n animation frames that add the
        re-splits in order (b = B/n, 2B/n, …, B), played in the browser with
        fixed axes and a "b = … / B" counter: the null builds up in place.
    """
    null = np.asarray(result.null_distribution, dtype=float)
    total = len(null) if shown is None else max(1, min(int(shown), len(null)))
    observed, alternative = float(result.statistic), result.alternative
    layout = _null_layout(null, observed)
    edges = layout["edges"]
    centres, width = (edges[:-1] + edges[1:]) / 2, float(edges[1] - edges[0])

    def bars(b: int) -> list[go.Bar]:
        rest, tail = _null_counts(null[:b], observed, alternative, edges)
        return [go.Bar(x=centres, y=rest, width=width, name="re-splits less extreme than the observed",
                       marker_color=NULL_COLOUR),
                go.Bar(x=centres, y=tail, width=width, name="as or more extreme (the p-value's share)",
                       marker_color=TAIL_COLOUR)]

    def title(b: int) -> str:
        from ..stats.permutation import as_extreme

        extreme = int(np.count_nonzero(as_extreme(null[:b], observed, alternative)))
        # "the observed", not T_obs: the home page's §04 calls the centroid distance T (trial 7 read three names)
        # Two lines: on one, the title was cut in half a 1024-px page's width (issue 45).
        return f"{label} null: {extreme:,} of {b:,}<br>re-splits {'≤' if alternative == 'less' else '≥'} the observed"

    figure = go.Figure(bars(total))
    peak = max(int(np.max(sum(_null_counts(null, observed, alternative, edges)))), 1)
    if layout["far"]:
        edge = layout["range"][1] if observed > edges[-1] else layout["range"][0]
        right = observed > edges[-1]
        # The label sits on the plot's side of the arrow (xanchor), so it is never cut by the chart's edge.
        figure.add_annotation(x=edge, y=peak * 0.55, ax=-30 if right else 30, ay=0,
                              xanchor="right" if right else "left",
                              text=f"observed = {format_number(observed)}<br>beyond every<br>re-split "
                                   "(axis broken)",
                              showarrow=True, arrowhead=2, arrowwidth=2, align="center",
                              bgcolor="white", bordercolor="black")
        figure.add_vline(x=edge, line=dict(color="black", width=3, dash="dash"))
    else:
        # The label reads towards the middle of the axis, so it is never cut by the chart's edge.
        middle = sum(layout["range"]) / 2
        figure.add_vline(x=observed, line=dict(color="black", width=3, dash="dash"),
                         annotation_text=f"observed = {format_number(observed)}",
                         annotation_position="top left" if observed > middle else "top right",
                         # off the dashed line by a few pixels, on a white ground over the bars: it stays legible
                         annotation_xshift=-4 if observed > middle else 4, annotation_bgcolor="rgba(255,255,255,0.8)")
    if layout["overflow"]:
        beyond = int(np.sum(null > edges[-1]))
        figure.add_annotation(x=centres[-1], y=peak * 0.3, text=f"last bar: + {beyond} re-splits<br>up to "
                              f"{float(null.max()):.3g}", showarrow=True, ax=-40, ay=-30, font=dict(size=11))
    figure.update_layout(barmode="stack", bargap=0, title=title(total), xaxis_title=label, title_font_size=14,
                         yaxis_title="re-splits", xaxis_range=layout["range"], yaxis_range=[0, peak * 1.15],
                         **LAYOUT)
    figure.update_layout(margin_t=70)  # room for the two-line title
    if replay_frames > 0:
        steps = sorted({max(1, round(len(null) * (i + 1) / replay_frames)) for i in range(replay_frames)})
        # A frame carries only what changes (the two bars' heights and the title): building full
        # traces for 20 frames costs most of a second of Plotly's validation on every rerun.
        figure.frames = [go.Frame(data=[go.Bar(y=counts) for counts in _null_counts(null[:b], observed, alternative,
                                                                                     edges)],
                                  traces=[0, 1], name=str(b), layout=dict(title_text=title(b))) for b in steps]
        play = dict(frame=dict(duration=250, redraw=True), transition=dict(duration=0), fromcurrent=False,
                    mode="immediate")
        figure.update_layout(
            showlegend=False,  # the caption names the colours; the controls sit below the axis
            updatemenus=[dict(type="buttons", showactive=False, x=0, y=-0.2, xanchor="left", yanchor="top",
                              buttons=[dict(label="▶ Watch the null build up", method="animate",
                                            args=[None, play])])],
            sliders=[dict(active=len(steps) - 1, x=0, len=1, y=-0.35, yanchor="top", pad=dict(t=0, b=0),
                          currentvalue=dict(prefix="b = ", suffix=f" / {len(null):,}", xanchor="right"),
                          steps=[dict(label=f"{b:,}", method="animate",
                                      args=[[str(b)], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                                                           transition=dict(duration=0))]) for b in steps])],
            height=520, margin=dict(l=40, r=20, t=70, b=150))
    return figure


def similarity_histograms(result) -> go.Figure:
    """P0 (within the original arm) and P1 (across arms) as overlaid densities."""
    # Binned here, 30 shared bins: the figure holds 60 bars, not the k² similarities (5,000 + 5,000 outputs
    # are 37 million values, which as Plotly's raw histogram data took gigabytes in the app and report.html).
    within = np.asarray(result.within_similarities, dtype=float)
    across = np.asarray(result.across_similarities, dtype=float)
    both = np.concatenate([within[np.isfinite(within)], across[np.isfinite(across)]])
    low, high = (float(both.min()), float(both.max())) if both.size else (0.0, 1.0)
    edges = np.linspace(low, high if high > low else low + 1e-9, 31)
    figure = go.Figure()
    for values, name, colour in ((within, "P0: within original", ORIGINAL_COLOUR),
                                 (across, "P1: across arms", PERTURBED_COLOUR)):
        density, _ = np.histogram(values[np.isfinite(values)], bins=edges, density=bool(values.size))
        figure.add_trace(go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=density, width=np.diff(edges), name=name,
                                opacity=0.6, marker_color=colour))
    figure.update_layout(barmode="overlay", bargap=0, title="Similarity distributions P0 and P1",
                         xaxis_title=f"similarity ({result.similarity})", yaxis_title="density", **LAYOUT)
    return figure


def model_colour(index: int) -> str:
    """The colour of the index-th model of a page, the same in every chart that lists the models in one order.

    Past the sixteenth model colours would repeat: an error, not a chart in which two models look alike.
    """
    if not 0 <= index < len(MODEL_COLOURS):
        raise ValueError(f"`index` {index}: a chart shows at most {len(MODEL_COLOURS)} models in distinct colours; "
                         "show fewer models at once.")
    return MODEL_COLOURS[index]


def log_axis(values) -> dict:
    """A log axis whose ticks are plain numbers (1–2–5 per decade while few), never Plotly's bare mantissas."""
    from .formatting import log_ticks

    parts = values if isinstance(values, (list, tuple)) else [values]  # ragged parts (paths, boundary) allowed
    positive = [float(v) for part in parts for v in np.ravel(np.asarray(part, dtype=float)) if np.isfinite(v) and v > 0]
    if not positive:
        return dict(type="log")
    ticks, labels = log_ticks(min(positive), max(positive))
    return dict(type="log", tickvals=ticks, ticktext=labels)


def power_curve(curve, *, target_power: float | None = None) -> go.Figure:
    """Simulated power against samples per arm, with 95 % intervals."""
    figure = go.Figure(go.Scatter(
        x=curve.sample_sizes, y=curve.power, mode="lines+markers", name="power",
        error_y=dict(type="data", symmetric=False, array=curve.ci_high - curve.power,
                     arrayminus=curve.power - curve.ci_low)))
    if target_power is not None:
        figure.add_hline(y=target_power, line=dict(dash="dash"), annotation_text=f"target {target_power:g}")
    # α to two significant digits, as the planner's captions write α/m ("0.0063", not "0.00625" above "0.0063")
    figure.update_layout(title=f"Power at α = {curve.alpha:.2g} ({curve.n_trials} simulated audits per k)",
                         xaxis_title="samples per arm k", yaxis_title="power", yaxis_range=[0, 1.05], **LAYOUT)
    return figure


def discrepancy_bars(names, statistics, pvalues, *, alpha: float, title: str, label: str = "ω",
                     pvalue_label: str = "adjusted p", n_resamples=None, exact=False) -> go.Figure:
    """One bar of ω per model or perturbation, coloured by significance (paper Fig. 3).

    Each bar is labelled with the p-value that decided its colour, named by ``pvalue_label`` (``"adjusted p"``
    after a correction, ``"p"`` when none), so the label matches the table column beside it.  Given the
    permutation tests' ``n_resamples`` (one B for every bar, or one per bar) and ``exact`` (likewise), a p at
    its floor 1/(B+1) reads ``"p ≤ 0.001"``, as the table writes it (:func:`format_pvalue`); without them
    (adjusted p-values) every p is written as it is.
    """
    pvalues = [float(p) for p in pvalues]
    floors = n_resamples if np.ndim(n_resamples) else [n_resamples] * len(pvalues)
    exacts = exact if np.ndim(exact) else [exact] * len(pvalues)
    if len(floors) != len(pvalues) or len(exacts) != len(pvalues):
        raise ValueError(f"`n_resamples` and `exact` must be one value or one per bar ({len(pvalues)}); got "
                         f"{len(floors)} and {len(exacts)}.")
    texts = [f"{pvalue_label} {p_relation(format_pvalue(p, b, exact=bool(e)))}"
             for p, b, e in zip(pvalues, floors, exacts)]
    colours = [ORIGINAL_COLOUR if p <= alpha else NULL_COLOUR for p in pvalues]
    figure = go.Figure(go.Bar(x=list(statistics), y=[html.escape(str(n)) for n in names], orientation="h",
                              marker_color=colours, text=texts, textposition="outside", cliponaxis=False))
    figure.update_layout(title=title, xaxis_title=label, yaxis=dict(autorange="reversed", automargin=True),
                         **{**LAYOUT, "margin": dict(l=40, r=130, t=50, b=40)})
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


def sequential_path(result, *, label: str = "ω", shown_resamples: int = 40) -> go.Figure:
    """A sequential test's ω after each batch against its boundary, and where it stopped.

    ``result`` is a :class:`~dbpa_core.stats.sequential.SequentialResult`.
    Grey lines are the first ``shown_resamples`` within-batch re-split paths
    (what ω does when nothing changed); the test rejects at the first look
    where ω exceeds the boundary.  Looks with no α to spend yet have no
    boundary point.
    """
    looks = result.looks
    n = [look.n_per_arm for look in looks]
    statistics = [look.statistic for look in looks]
    boundary = [look.boundary if np.isfinite(look.boundary) else None for look in looks]
    figure = go.Figure()
    for index, path in enumerate(np.asarray(result.null_paths)[:shown_resamples]):
        figure.add_trace(go.Scatter(x=n, y=path, mode="lines", line=dict(color=NULL_COLOUR, width=1), opacity=0.35,
                                    name="re-split paths (no change)", legendgroup="null", showlegend=index == 0,
                                    hoverinfo="skip"))
    figure.add_trace(go.Scatter(x=n, y=boundary, mode="lines+markers", name="boundary (reject above)",
                                line=dict(color="black", dash="dash"), connectgaps=False))
    figure.add_trace(go.Scatter(x=n, y=statistics, mode="lines+markers", name=f"observed {label}",
                                line=dict(color=PERTURBED_COLOUR, width=3),
                                customdata=[look.pvalue for look in looks],
                                hovertemplate="n = %{x} per arm<br>" + label + " = %{y:.4g}<br>stage-wise p = "
                                              "%{customdata:.3g}<extra></extra>"))
    stop = {"reject": "rejected H₀", "futility": "stopped: futility", "k_max": "reached k_max"}[result.stopped]
    figure.add_trace(go.Scatter(x=[n[-1]], y=[statistics[-1]], mode="markers", name=stop,
                                marker=dict(symbol="star", size=18, color=TAIL_COLOUR if result.reject else NULL_COLOUR,
                                            line=dict(width=1, color="black"))))
    figure.add_vline(x=result.k_max, line=dict(color="grey", dash="dot"), annotation_text=f"k_max = {result.k_max}")
    positive = all(value > 0 for value in statistics) and np.all(np.asarray(result.null_paths) > 0)
    figure.update_layout(title=f"Sequential test: {label} after each batch of {result.batch_size} per arm",
                         xaxis_title="samples per arm so far", yaxis_title=label,
                         yaxis=log_axis([statistics, np.asarray(result.null_paths), [b for b in boundary if b]])
                         if positive else dict(type="linear"), **LAYOUT)
    return figure
