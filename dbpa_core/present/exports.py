"""Shareable outputs of an audit: JSON (everything), CSV (the table), HTML (for people who do not run code).

The HTML report is self-contained: plotly.js is inlined once, so it opens
with no network.  It carries the same figures as the app, the plain-language
readings and every setting.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import re
from pathlib import Path

from .formatting import format_number, format_pvalue, format_share
from .readings import (correction_name, read_adjusted_decision, read_decision, read_family, read_sequential,
                       read_test, test_decision)
from .records import json_default, versions
from .tables import family_csv


def _p_equals(test) -> str:
    """``"= 0.012"``, or ``"≤ 0.001"`` for a permutation p-value at its floor 1/(B+1)."""
    if test.kind == "sequential":
        return f"= {format_pvalue(test.pvalue)}"
    shown = format_pvalue(test.pvalue, test.n_resamples, exact=test.exact)
    return shown if shown.startswith("≤") else f"= {shown}"


def _figure_html(figure) -> str:
    # plotly.js is inlined once in <head>, not per figure
    return figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False},
                          default_width="100%", default_height="420px")


def family_html(family, record: dict) -> str:
    """A self-contained HTML report of a family audit."""
    from .figures import discrepancy_bars, null_histogram

    adjusted = family.adjusted
    labels = [r.label for r in family.results]
    # A comparison of models against a reference (Alignment, paper Fig. 3) in its own words: the report read
    # "1 of 1 perturbation is declared …", "Original prompt", "If the perturbation changed nothing" (trial 7).
    reference = record["settings"].get("reference")
    noun, claim = (("model", "declared to answer differently from the reference") if reference else
                   ("perturbation", "declared to change the output distribution"))
    figures = [discrepancy_bars(labels, [r.test.statistic for r in family.results], adjusted.pvalues_adjusted,
                                alpha=adjusted.alpha, title=f"ω per {noun} (blue: significant after correction)")]
    figures += [null_histogram(r.test, label=f"ω · {r.label}") for r in family.results[:12]]
    summary = record["summary"]
    fixed = family.kind != "sequential"
    verdict = read_family(summary["n_rejected"], summary["n_perturbations"], summary["alpha"], summary["correction"],
                          noun=noun, claim=claim, n_resamples=family.results[0].test.n_resamples if fixed else None,
                          exact=fixed and family.results[0].test.exact)
    known = all(p["true_effect"] is not None for p in record["perturbations"])
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
            p["label"], p["kind"], *([format_share(p["true_effect"])] if known else []), format_number(p["statistic"]),
            format_pvalue(p["pvalue"], p["n_resamples"], exact=p["exact"]), format_pvalue(p["pvalue_adjusted"]),
            p["stars"], p["decision"])) + "</tr>"
        for p in record["perturbations"])
    sampler = record["settings"].get("sampler") or {}
    compared = record["settings"].get("models") or {}  # a comparison of models: each has its own sampler
    synthetic = (
        '<p class="verdict">Synthetic outputs: the simulated backend is not a language model. It writes made-up '
        "answers whose true effects are known by construction (the true-effect column), a teaching aid, not a "
        "finding about a real model.</p>" if isinstance(sampler, dict) and sampler.get("backend") == "simulated"
        else '<p class="verdict">Synthetic outputs: the simulated models are not language models; they write '
             "made-up answers, a teaching aid, not a finding about a real model.</p>"
        if any(isinstance(model, dict) and model.get("backend") == "simulated" for model in compared.values())
        else "")
    def reading(test) -> str:
        sentence = read_test(test)
        return sentence.replace("If the perturbation changed nothing", "If the two models answered alike") \
            if reference else sentence

    m = len(family.results)
    readings = "".join(
        f"<li><b>{html.escape(r.label)}</b>: {html.escape(reading(r.test))} "
        f"{html.escape(read_adjusted_decision(float(p), adjusted.alpha, adjusted.method, m, claim=claim))}</li>"
        for r, p in zip(family.results, adjusted.pvalues_adjusted))
    intro = (f"compares many answers of the reference model ({html.escape(str(reference))}) with many answers of "
             "each other model to the same prompt" if reference else
             "compares many outputs of the original prompt with many outputs of each perturbed prompt")
    settings = html.escape(json.dumps(record["settings"], indent=2, default=str))
    changes = "".join(explanation_html(p["explanation"], heading=f"What changed: {p['label']}")
                      for p in record["perturbations"] if p.get("explanation"))
    plots = "".join(f'<div class="figure">{_figure_html(f)}</div>' for f in figures)
    return _html_page(f"DBPA audit: {record['name']}", f"""
<p class="verdict">{html.escape(verdict)}</p>
<p>Distribution-based perturbation analysis (Rauba, Wei &amp; van der Schaar, ICML 2025) {intro}; a permutation
test says whether the difference is larger than chance. Created {html.escape(record['created'])}.</p>
<h2>{"Prompt" if reference else "Original prompt"}</h2><pre>{html.escape(record['original']['prompt'])}</pre>
{synthetic}
<h2>Results</h2><table><tr><th>{noun}</th><th>kind</th>{"<th>true effect (simulated)</th>" if known else ""}
<th>ω</th><th>p</th><th>adjusted p ({html.escape(correction_name(adjusted.method))})</th>
<th></th><th>decision</th></tr>{rows}</table>
<h2>What the numbers say</h2><ul>{readings}</ul>
{changes}
<h2>Figures</h2>{plots}
<h2>Settings</h2><pre>{settings}</pre>
<h2>Versions</h2><pre>{html.escape(json.dumps(record['versions'], indent=2))}</pre>""")


def result_html(test, record: dict, *, title: str, alpha: float, label: str = "ω") -> str:
    """A self-contained HTML report of one two-arm test and, when ``record`` has one, its "What changed".

    ``test`` is the :class:`~dbpa_core.stats.permutation.DBPAResult` (or
    sequential result) that ``record`` (:func:`~dbpa_core.present.records.result_to_dict`)
    describes; the report's figures and readings are the app's.
    """
    from .figures import null_histogram, sequential_path, similarity_histograms

    figures = ([sequential_path(test, label=label)] if test.kind == "sequential"
               else [null_histogram(test, label=label), similarity_histograms(test)])
    sequential = test.kind == "sequential"  # decided by its boundary, not by p against α: its own reading
    verdict = test_decision(test, alpha)
    stage_wise = " stage-wise" if sequential else ""
    readings = "".join(f"<li>{html.escape(sentence)}</li>" for sentence in (
        *((read_sequential(test),) if sequential else (read_test(test), read_decision(test.pvalue, alpha, n_resamples=test.n_resamples,
                                                                      exact=test.exact))),
        *test.warnings))
    changes = explanation_html(record["explanation"]) if record.get("explanation") else ""
    # The texts and the null are in the JSON; the settings here are what a reader checks.
    settings = {key: value for key, value in record.items()
                if key not in {"explanation", "null_distribution", "original_texts", "perturbed_texts"}}
    plots = "".join(f'<div class="figure">{_figure_html(f)}</div>' for f in figures)
    return _html_page(title, f"""
<p class="verdict">{html.escape(verdict)} · {label} = {format_number(test.statistic)} ·{stage_wise} p
{html.escape(_p_equals(test))}</p>
<p>Distribution-based perturbation analysis (Rauba, Wei &amp; van der Schaar, ICML 2025) compares many outputs
of one arm with many outputs of the other; a permutation test says whether the difference is larger than chance.
Created {html.escape(_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))}.</p>
<h2>What the numbers say</h2><ul>{readings}</ul>
{changes}
<h2>Figures</h2>{plots}
<h2>Settings</h2><pre>{html.escape(json.dumps(settings, indent=2, default=json_default))}</pre>
<h2>Versions</h2><pre>{html.escape(json.dumps(versions(), indent=2))}</pre>""")


def _html_page(title: str, body: str) -> str:
    """A self-contained HTML page: plotly.js inlined once in <head>, so it opens with no network."""
    from plotly.offline import get_plotlyjs

    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}
table{{border-collapse:collapse;width:100%}}td,th{{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left}}
pre{{background:#f6f6f6;padding:1em;white-space:pre-wrap}}.verdict{{font-size:1.2em;padding:.6em;background:#eef5ff}}
</style><script type="text/javascript">{get_plotlyjs()}</script></head><body>
<h1>{html.escape(title)}</h1>
{body}
</body></html>"""


def sections_html(title: str, intro: str, sections, settings: dict) -> str:
    """A self-contained HTML report of titled sections (the reproduction page's report).

    Parameters
    ----------
    title, intro : str
    sections : iterable of (heading, sentences, tables, figures)
        ``sentences``: plain readings; ``tables``: pandas DataFrames;
        ``figures``: Plotly figures.
    settings : dict
        Recorded verbatim at the end, with the package versions.
    """
    parts = [f'<p>{html.escape(intro)}</p>']
    for heading, sentences, tables, figures in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts += [f'<p class="verdict">{html.escape(s)}</p>' for s in sentences]
        parts += [table.to_html(index=False, float_format=lambda v: f"{v:.4g}", border=0) for table in tables]
        parts += [f'<div class="figure">{_figure_html(f)}</div>' for f in figures]
    parts.append(f"<h2>Settings</h2><pre>{html.escape(json.dumps(settings, indent=2, default=str))}</pre>")
    parts.append(f"<h2>Versions</h2><pre>{html.escape(json.dumps(versions(), indent=2))}</pre>")
    return _html_page(title, "\n".join(parts))


def write_reports(family, record: dict, folder: str | Path) -> dict[str, Path]:
    """Write report.json, results.csv and report.html into ``folder`` (all three or none)."""
    from ..data.files import write_report_files

    return write_report_files(folder, {"json": json.dumps(record, indent=2, default=json_default),
                                       "csv": family_csv(family, record), "html": family_html(family, record)})


_EMPHASIS = re.compile(r"[*]([^*]+)[*]")


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def explanation_html(record: dict, *, heading: str = "What changed") -> str:
    """An HTML section from an :func:`explanation_record`: its readings, the themes and the representatives."""
    arms = record["arms"]
    themes = sorted(record["themes"], key=lambda t: (not t["significant"], t["qvalue"]))
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
            ", ".join(t["terms"][:5]), format_share(t["share_y"]), format_share(t["share_x"]),
            format_pvalue(t["qvalue"]), "yes" if t["significant"] else "no", _shortened((t["examples"] or [""])[0],
                                                                                        300))) + "</tr>"
        for t in themes)
    examples = "".join(
        f"<h3>Most characteristic of the {html.escape(arms[key])} arm</h3><ol>"
        + "".join(f"<li><pre>{html.escape(_shortened(r['text'], 800))}</pre></li>"
                  for r in record["representative"][key]) + "</ol>"
        for key in ("x", "y"))
    # A theme's name is *emphasised* in the readings: italics here, not literal asterisks.
    readings = "".join("<li>" + _EMPHASIS.sub(r"<i>\1</i>", html.escape(sentence)) + "</li>"
                       for sentence in record["readings"])
    return (f"<h2>{html.escape(heading)}</h2><ul>{readings}</ul>"
            f"<table><tr><th>theme</th><th>{html.escape(arms['y'])}</th><th>{html.escape(arms['x'])}</th>"
            f"<th>q (BH)</th><th>significant</th><th>typical output</th></tr>{rows}</table>{examples}")
