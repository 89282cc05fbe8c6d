"""Tables and Plotly figures of a "What changed" account (:func:`dbpa_core.explain_change`).

They take a :class:`~dbpa_core.stats.explain.ChangeExplanation` (and, for the
cloud, a 2-D projection made by :mod:`dbpa_core.present.projection`) and
draw; they compute nothing.  Only themes significant after
Benjamini–Hochberg get a colour of their own: the others are drawn in grey
and labelled "not significant", so a chance grouping never looks like a
finding.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .figures import LAYOUT, ORIGINAL_COLOUR, PERTURBED_COLOUR, hover_text
from .explanation_readings import ARM_NAMES, theme_name
from .formatting import format_pvalue, format_share

#: Colours of significant themes, in order of q (Plotly's Dark2, without the blue and red of the arms).
THEME_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")
NOT_SIGNIFICANT_COLOUR = "#c7c7c7"
#: Marker of each arm in the cloud (x, y): the colour is the theme's.
ARM_SYMBOLS = ("circle", "diamond")


def _ordered(explanation):
    """Themes as tables and bars list them: significant first (smallest q), then by size."""
    return sorted(explanation.themes, key=lambda t: (not t.significant, t.qvalue, -(t.count_x + t.count_y),
                                                     t.cluster))


def theme_colours(explanation) -> dict[int, str]:
    """cluster → colour: one of :data:`THEME_COLOURS` per significant theme, grey for the rest."""
    colours = {t.cluster: NOT_SIGNIFICANT_COLOUR for t in explanation.themes}
    for i, theme in enumerate(explanation.significant_themes):
        colours[theme.cluster] = THEME_COLOURS[i % len(THEME_COLOURS)]
    return colours


def themes_table(explanation, *, arms=ARM_NAMES):
    """The themes as a pandas DataFrame, significant first.

    Columns: theme (its words), the share of each arm's outputs (%), outputs
    in the theme, p, q (Benjamini–Hochberg), whether it is significant at the
    explanation's FDR, and its most typical output.
    """
    import pandas as pd

    rows = [{
        "theme": theme_name(t, n_terms=5),
        # Percentages as measured (the CSV's; 0.4 stays 0.4, not 0; four decimals, so rounding them again for
        # the screen gives the sentences' whole percentage): :func:`shown_share` writes them as the sentences do.
        f"{arms[1]} (%)": round(100 * t.share_y, 4),
        f"{arms[0]} (%)": round(100 * t.share_x, 4),
        "outputs": t.count_x + t.count_y,
        "p": t.pvalue,
        "q (BH)": t.qvalue,
        f"significant (FDR {explanation.fdr:g})": "yes" if t.significant else "no",
        "typical output": t.examples[0] if t.examples else "",
    } for t in _ordered(explanation)]
    return pd.DataFrame(rows)


def shown_share(percent: float) -> str:
    """A share of :func:`themes_table` (in %) as the screen's table writes it under its "(%)" header: the
    sentences' whole percentage, "<1" and ">99" where rounding would claim none or all of the outputs."""
    return format_share(percent / 100).removesuffix(" %")


def representatives_table(explanation, *, arms=ARM_NAMES):
    """The representative outputs of each arm as a pandas DataFrame (arm, rank, witness, output)."""
    import pandas as pd

    rows = [{"arm": name, "rank": rank + 1, "witness": witness, "output": text}
            for key, name in zip(("x", "y"), arms)
            for rank, (witness, text) in enumerate(zip(explanation.representative[key].witness,
                                                       explanation.representative[key].texts))]
    return pd.DataFrame(rows, columns=["arm", "rank", "witness", "output"])


def theme_shares(explanation, *, arms=ARM_NAMES) -> go.Figure:
    """Share of each arm's outputs in each theme, side by side; significant themes starred with their q."""
    themes = _ordered(explanation)[::-1]  # Plotly draws the first category at the bottom

    def label(theme):
        mark = f"★ q = {format_pvalue(theme.qvalue)}" if theme.significant else "not significant"
        return f"{html.escape(theme_name(theme))}<br><span style='font-size:11px'>{mark}</span>"

    labels = [label(t) for t in themes]
    figure = go.Figure()
    for key, name, colour in (("share_x", arms[0], ORIGINAL_COLOUR), ("share_y", arms[1], PERTURBED_COLOUR)):
        shares = [getattr(t, key) for t in themes]
        figure.add_trace(go.Bar(
            y=labels, x=[100 * s for s in shares], orientation="h", name=f"{name} outputs", marker_color=colour,
            text=[format_share(s) for s in shares], textposition="outside", hoverinfo="name+text",
            cliponaxis=False,  # "100 %" beside a full bar stays whole in a narrow column
        ))
    # Two title lines and the legend at the foot of the figure (below the axis title): nothing is cut or
    # overlaps in half of a 1024 px page.
    layout = {**LAYOUT, "legend": dict(orientation="h", yref="container", y=0, yanchor="bottom"),
              "margin": dict(LAYOUT["margin"], t=70, b=90)}
    figure.update_layout(title=f"Themes: share of each arm's outputs<br><sup>★ significant at FDR "
                               f"{explanation.fdr:g}</sup>",
                         barmode="group", xaxis_title="share of the arm's outputs (%)",
                         height=max(340, 160 + 70 * len(themes)), **layout)
    figure.update_xaxes(range=[0, 118])
    return figure


def theme_cloud(coordinates, explanation, texts, *, arms=ARM_NAMES, method: str = "PCA") -> go.Figure:
    """The outputs in 2-D, coloured by theme (grey: not significant), circles for arm x, diamonds for arm y.

    Parameters
    ----------
    coordinates : array of shape (k0 + k1, 2)
        A projection of the pooled embeddings, arm x first (as in the explanation).
    explanation : ChangeExplanation
    texts : sequence of str
        The k0 + k1 pooled outputs, for hover.
    arms : (str, str)
        Names of arm x and arm y.
    method : str
        The projection's name, for the axes.
    """
    coordinates = np.asarray(coordinates)
    texts = list(texts)
    colours = theme_colours(explanation)
    by_cluster = {t.cluster: t for t in explanation.themes}
    k0 = explanation.n_x
    figure = go.Figure()
    for theme in _ordered(explanation):
        members = np.flatnonzero(explanation.labels == theme.cluster)
        status = f"q = {format_pvalue(theme.qvalue)}" if theme.significant else "not significant"
        for arm, rows in enumerate((members[members < k0], members[members >= k0])):
            if not len(rows):
                continue
            figure.add_trace(go.Scatter(
                x=coordinates[rows, 0], y=coordinates[rows, 1], mode="markers",
                name=f"{theme_name(by_cluster[theme.cluster])} ({status})", legendgroup=str(theme.cluster),
                showlegend=arm == 0 or not np.any(members < k0),
                marker=dict(color=colours[theme.cluster], symbol=ARM_SYMBOLS[arm], size=9, opacity=0.85,
                            line=dict(width=0.5, color="white")),
                customdata=rows,
                hovertext=[f"<b>{html.escape(arms[arm])}</b> #{i - (k0 if arm else 0)} · theme "
                           f"<i>{html.escape(theme_name(theme))}</i> ({status})<br>{hover_text(texts[i])}"
                           for i in rows],
                hoverinfo="text",
            ))
    figure.update_layout(title=f"Outputs by theme ({method})<br><sup>● {html.escape(arms[0])}, "
                               f"◆ {html.escape(arms[1])}</sup>", xaxis_title=f"{method} 1",
                         yaxis_title=f"{method} 2", **{**LAYOUT, "margin": dict(LAYOUT["margin"], t=70)})
    return figure
