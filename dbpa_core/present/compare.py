"""What ``dbpa compare`` and the "Across many prompts" page show of a compared log.

The per-prompt table sorted by q, one plain sentence per number, and the JSON record (top-level
``pvalue``, ``statistic`` and ``per_prompt``, the settings and the tool's version), all from one
:class:`~dbpa_core.audit.compare.CompareResult`.
"""

from __future__ import annotations

__all__ = ["compare_readings", "compare_record", "compare_table", "compare_theme_lines", "prompt_clouds", "theme_rows"]


def compare_table(result) -> list[dict]:
    """One row per tested prompt, sorted by q then p (most changed first).

    A flagged prompt's row also has ``themes`` (its significant themes, :func:`theme_rows`),
    ``themes_tested`` (the clusters its outputs formed) and ``what_changed`` (the sentences).
    """
    from dbpa_core.present.explanation_readings import read_explanation

    a, b = result.arms
    rows = []
    for p, r in zip(result.prompts, result.test.per_prompt):
        row = {"prompt": p.prompt, "prompt_id": p.prompt_id, "statistic": r.statistic, "effect_size": r.effect_size,
               "pvalue": r.pvalue, "qvalue": r.qvalue, "changed": bool(r.qvalue <= result.test.fdr),
               "k": {a: r.n_original, b: r.n_perturbed}}
        explanation = result.themes.get(p.prompt_id)
        if explanation is not None:
            row.update(themes=theme_rows(explanation, (a, b)), themes_tested=explanation.n_clusters,
                       what_changed=read_explanation(explanation, arms=(a, b)))
        rows.append(row)
    return sorted(rows, key=lambda row: (row["qvalue"], row["pvalue"]))


def theme_rows(explanation, arms) -> list[dict]:
    """The significant themes of one prompt (Benjamini–Hochberg across its themes), smallest q first."""
    a, b = arms
    return [{"terms": list(t.terms), "share": {a: t.share_x, b: t.share_y}, "count": {a: t.count_x, b: t.count_y},
             "pvalue": t.pvalue, "qvalue": t.qvalue, "example": t.examples[0] if t.examples else ""}
            for t in explanation.significant_themes]


def compare_theme_lines(result) -> list[str]:
    """What changed, for the terminal: per flagged prompt (most changed first), its themes' sentences."""
    rows = [row for row in compare_table(result) if "themes" in row]
    if not rows:
        return []
    found = sum(bool(row["themes"]) for row in rows)
    lines = [f"\nWhat changed — themes in the {len(rows)} flagged prompt(s) ({found} with a theme whose share "
             f"differs; Benjamini–Hochberg at {result.test.fdr:g} across each prompt's themes):"]
    for row in rows:
        prompt = " ".join(row["prompt"].split())
        lines.append(f"  q = {row['qvalue']:.3f}  {prompt[:70] + ('…' if len(prompt) > 70 else '')}")
        if row["themes"]:
            lines += [f"    {sentence.replace('*', '')}" for sentence in row["what_changed"]]
        else:
            lines.append(f"    no theme's share differs beyond chance (across its {row['themes_tested']} themes): "
                         "the change is spread over its outputs.")
    return lines


def prompt_clouds(panels, arms, *, method: str = "PCA"):
    """Small multiples: each panel one prompt's outputs in 2-D, arm a as circles, arm b as diamonds.

    Parameters
    ----------
    panels : sequence of (title, coordinates, k0, texts)
        At most 6; a title's lines are separated by "\\n"; ``coordinates`` (k0 + k1, 2) is a projection of that prompt's own pooled vectors, arm a
        first; ``texts`` its outputs for hover.
    arms : (str, str)
    method : str
        The projection's name, for the caption of the axes.
    """
    import html

    import numpy as np
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from .figures import LAYOUT, ORIGINAL_COLOUR, PERTURBED_COLOUR

    panels = list(panels)[:6]
    columns = min(3, max(1, len(panels)))
    rows = -(-len(panels) // columns) or 1
    figure = make_subplots(rows=rows, cols=columns, subplot_titles=["<br>".join(map(html.escape, t.split("\n")))
                                                                 for t, *_ in panels],
                           horizontal_spacing=0.06, vertical_spacing=0.2)
    for i, (_, coordinates, k0, texts) in enumerate(panels):
        coordinates = np.asarray(coordinates)
        for arm, (part, colour, symbol) in enumerate(((slice(0, k0), ORIGINAL_COLOUR, "circle"),
                                                      (slice(k0, None), PERTURBED_COLOUR, "diamond"))):
            shown = [html.escape(" ".join(t.split())[:160]) for t in list(texts)[part]]
            figure.add_trace(go.Scatter(
                x=coordinates[part, 0], y=coordinates[part, 1], mode="markers", name=arms[arm],
                legendgroup=arms[arm], showlegend=i == 0, marker=dict(color=colour, symbol=symbol, size=9),
                text=shown, hovertemplate="%{text}<extra>" + html.escape(arms[arm]) + "</extra>"),
                row=i // columns + 1, col=i % columns + 1)
    figure.update_xaxes(showticklabels=False, title_text=None)
    figure.update_yaxes(showticklabels=False, title_text=None)
    figure.update_annotations(font_size=11)
    layout = {**LAYOUT, "legend": dict(orientation="h", yref="container", y=0, yanchor="bottom"),
              "margin": dict(LAYOUT["margin"], t=110, b=60)}
    figure.update_layout(title=f"The most changed prompts' outputs, each in its own 2-D view ({method})",
                         height=140 + 290 * rows, **layout)
    return figure


def compare_readings(result) -> list[str]:
    """Plain sentences: the verdict, what p means, the effect, and where it moved."""
    from ..stats.discrepancy import get_discrepancy
    from .formatting import format_percent, format_pvalue
    from .readings import read_effect

    test, request = result.test, result.request
    a, b = result.arms
    m = test.n_prompts
    label = get_discrepancy(request.discrepancy).label
    shown = format_pvalue(test.pvalue, test.n_resamples, exact=test.exact)
    shown = shown if shown.startswith("≤") else f"= {shown}"
    floor = _smallest_pvalue(test)
    if result.change:
        verdict = (f"Across {m} prompts, the outputs of {b!r} differ from those of {a!r} more than chance explains "
                   f"(p {shown}, α = {request.alpha:g}): a change is declared.")
    elif floor > request.alpha:  # out of reach, "within what chance produces" would read the floor as evidence
        verdict = (f"Across {m} prompts, no change is declared between {a!r} and {b!r} (p {shown}), and none could "
                   f"be: α = {request.alpha:g} is below the smallest p this test can give (see below).")
    else:
        verdict = (f"Across {m} prompts, the outputs of {b!r} are within what chance produces against {a!r} "
                   f"(p {shown}, α = {request.alpha:g}): no change is declared (which is not proof of none).")
    splits = "every joint split" if test.exact else f"{test.n_resamples:,} random re-splits"
    meaning = (f"p is the share of {splits} of each prompt's own outputs (never mixing prompts) whose mean "
               f"{label} is at least the observed one.")
    flagged = int(test.changed.sum())
    where = (f"{flagged} of {m} prompts are flagged changed on their own (Benjamini–Hochberg q ≤ {test.fdr:g}: "
             f"at most about {format_percent(test.fdr)} of flagged prompts would be false alarms)." if flagged else
             f"No single prompt is flagged on its own (q ≤ {test.fdr:g}); with few outputs per prompt the "
             "combined test sees what no single prompt can.")
    readings = [verdict, meaning, read_effect(test.effect_size, test.standardized_effect), where]
    if floor > request.alpha:
        readings.append(f"No p-value can reach α = {request.alpha:g} here: the smallest possible p is {floor:.3g}"
                        + (" (every joint split was counted: add outputs or prompts)." if test.exact else
                           f"; use B ≥ {int(1 / request.alpha)}."))
    if result.themes:
        found = sum(bool(e.significant_themes) for e in result.themes.values())
        readings.append(f"What changed was looked for in the {len(result.themes)} flagged prompt(s) only: "
                        f"{found} of them have a theme (a cluster of that prompt's outputs) whose share differs "
                        f"between the arms at FDR {test.fdr:g}; in the others the change is spread over the "
                        "outputs rather than one theme.")
    if result.left_out:
        readings.append(f"{len(result.left_out)} prompt(s) left out: fewer than 2 outputs in an arm.")
    return readings


def _smallest_pvalue(test) -> float:
    """The smallest p the test could give: 1/(B + 1) by random re-splits; by enumeration, the share of joint
    splits tied with the largest (a symmetric ω gives a split and its mirror the same value when k0 = k1, so
    2 + 2 outputs in each of 2 prompts reach no lower than 4/36, not 1/36)."""
    from ..stats.many import _pvalue

    if not test.exact:
        return 1 / (test.n_resamples + 1)
    return _pvalue(float(test.null_distribution.max()), test.null_distribution, True)


def compare_record(result) -> dict:
    """The JSON record: top-level ``pvalue``, ``statistic`` and a ``per_prompt`` list, the settings, the version."""
    from .. import __version__

    test, request = result.test, result.request
    return {
        "tool": "dbpa-explorer", "version": __version__, "kind": "compare",
        "pvalue": test.pvalue, "statistic": test.statistic, "effect_size": test.effect_size,
        "standardized_effect": test.standardized_effect, "change_detected": result.change,
        "n_prompts": test.n_prompts, "n_resamples": test.n_resamples, "exact": test.exact,
        "arms": list(result.arms), "per_prompt": compare_table(result),
        "left_out": list(result.left_out), "skipped_rows": result.log.skipped, "notes": list(result.log.notes),
        "warnings": list(test.warnings), "readings": compare_readings(result),
        "settings": {"files": list(request.paths), "from": request.fmt, "similarity": test.similarity,
                     "discrepancy": test.discrepancy, "n_resamples": request.n_resamples, "seed": request.seed,
                     "alpha": request.alpha, "fdr": request.fdr, "embedder": request.embedder,
                     "combined": "mean of the prompts' ω weighted by their across-arm pairs k0·k1",
                     "resampling": "within each prompt"},
    }
