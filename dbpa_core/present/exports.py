"""Shareable outputs of an audit: JSON (everything), CSV (the table), HTML (for people who do not run code).

The HTML report is self-contained: plotly.js is inlined once, so it opens
with no network.  It carries the same figures as the app, the plain-language
readings and every setting.
"""

from __future__ import annotations

import datetime as _dt
import functools
import html
import importlib.metadata
import json
import platform
import re
from pathlib import Path

import numpy as np

from .._validation import redact, redact_mapping
from ..data.provenance import provenance_record
from .formatting import (discrepancy_symbol, format_number, format_pvalue, format_rut_pvalue, format_share,
                         significance_stars)
from .explanation_readings import (ARM_NAMES, read_explanation, read_explanation_method, read_representatives,
                                   read_themes_beside_test)
from .paper_readings import read_persona_grid
from .readings import (correction_name, decision, read_adjusted_decision, read_decision, read_family, read_sequential,
                       read_test, test_decision)
from .rut_readings import read_rut_decision, read_share_bound
from .tables import family_table

REPORT_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("audit_report.schema.json")
_PACKAGES = ("numpy", "scipy", "statsmodels", "numba", "sentence-transformers", "llama-cpp-python", "openai",
             "plotly")


def versions() -> dict:
    """The versions of this tool, Python and the packages behind a result (what every report records)."""
    return dict(_versions())


@functools.cache
def _versions() -> dict:
    # Read once per process: importlib.metadata scans site-packages (≈ 60 ms, on every download's record).
    from .. import __version__

    found = {"dbpa-explorer": __version__, "python": platform.python_version()}
    for package in _PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def family_record(family, *, name: str, settings: dict, explanations=None) -> dict:
    """The JSON report of a :class:`dbpa_core.audit.FamilyResult`.

    The test settings (k, B, seed, similarity, ω, correction, α) come from the
    family itself, so the record cannot disagree with the results it carries;
    ``settings`` adds where the outputs came from (sampler, embedder, …).
    ``explanations`` (one :class:`~dbpa_core.stats.explain.ChangeExplanation`
    per perturbation, in order) adds each one's ``explanation``.
    """
    adjusted = family.adjusted
    original = family.results[0].original
    perturbations = []
    for result, p_adjusted, reject in zip(family.results, adjusted.pvalues_adjusted, adjusted.reject):
        test = result.test
        perturbations.append({
            "id": result.perturbation_id or result.label, "label": result.label, "kind": result.kind,
            "prompt": result.perturbed.prompt, "system": result.perturbed.system, "model": result.perturbed.model,
            "statistic": test.statistic, "pvalue": test.pvalue, "pvalue_adjusted": float(p_adjusted),
            "reject": bool(reject), "decision": decision(float(p_adjusted), adjusted.alpha),
            "stars": significance_stars(float(p_adjusted)), "effect_size": test.effect_size,
            "standardized_effect": test.standardized_effect, "true_effect": result.true_effect,
            "n_original": test.n_original, "n_perturbed": test.n_perturbed, "n_resamples": test.n_resamples,
            "exact": test.exact, "warnings": list(test.warnings), "sample_ids": list(result.perturbed.sample_ids),
        })
    for entry, explanation in zip(perturbations, explanations or ()):
        entry["explanation"] = explanation_record(explanation, declared=entry["reject"])
    run = {**settings, **family.settings}
    if "seed" in run and "replicate" in run:
        # "Resample" draws replicate r: the seeds the sampler was given are not the sidebar seed alone.
        from ..audit.request import arm_seed

        run["sampler_seeds"] = {"original": arm_seed(run["seed"], perturbed=False, replicate=run["replicate"]),
                                "perturbed": arm_seed(run["seed"], perturbed=True, replicate=run["replicate"])}
    return {
        "dbpa_report_version": REPORT_VERSION,
        "name": name,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        # Settings are where a credential could slip in (a URL, a note): redacted at this boundary.
        "settings": redact_mapping({**run, "design": family.kind, "correction": adjusted.method,
                                    "correction_name": correction_name(adjusted.method), "alpha": adjusted.alpha}),
        "versions": versions(),
        "original": {"prompt": original.prompt, "system": original.system, "model": original.model,
                     "sample_ids": list(original.sample_ids)},
        "perturbations": perturbations,
        # What the replies said about themselves (served model, fingerprint, tokens): the run's actual cost.
        "provenance": provenance_record([original, *(r.perturbed for r in family.results)]),
        "summary": {"n_perturbations": len(perturbations), "n_rejected": adjusted.n_rejected,
                    "change_detected": bool(adjusted.n_rejected > 0), "correction": adjusted.method,
                    "alpha": adjusted.alpha},
    }


#: The column name of each discrepancy's statistic (``DBPAResult.discrepancy`` is the instance's repr).
STATISTIC_NAMES = {"JensenShannon": "ω", "Centroid": "centroid T", "MMD": "MMD", "Energy": "energy distance"}


def statistic_name(discrepancy: str) -> str:
    """The table's name for a statistic: "ω" for the paper's JSD, "centroid T" for the centroid distance, …"""
    return STATISTIC_NAMES.get(str(discrepancy).split("(")[0], "ω" if not discrepancy else "statistic")


def family_frame(family):
    """The family's table (a DataFrame): the one the app shows and the CSV holds.

    The simulated model's true effects are a column only when every perturbation has one.  A sequential
    family has a "samples per arm" column: each perturbation stops on its own, and a CSV without it read like
    a run at the largest k (trial 5).
    """
    results = family.results
    known = all(r.true_effect is not None for r in results)
    table = family_table([r.label for r in results], [r.kind for r in results], [r.test.statistic for r in results],
                         [r.test.pvalue for r in results], family.adjusted,
                         true_effects=[r.true_effect for r in results] if known else None)
    if any(r.test.kind == "sequential" for r in results):
        table.insert(2, "samples per arm", [r.test.n_per_arm for r in results])
    # "ω" is the paper's JSD statistic; a family tested with another discrepancy names its own (a CSV column
    # "ω" held the centroid distance T, issue 45).
    names = {statistic_name(getattr(r.test, "discrepancy", "")) for r in results}
    if names != {"ω"}:
        table = table.rename(columns={"ω": names.pop() if len(names) == 1 else "statistic"})
    fixed = all(r.test.kind != "sequential" for r in results)  # a sequential p has no single floor
    floors = {(r.test.n_resamples, r.test.exact) for r in results} if fixed else set()
    if len(floors) == 1:
        # One permutation floor for the whole p column: on screen a p at it reads "≤ 0.001" as on the card
        # (present.formatting.people_formatters); the CSV keeps the number.
        table.attrs["pvalue_floor"] = floors.pop()
    return table


def _p_equals(test) -> str:
    """``"= 0.012"``, or ``"≤ 0.001"`` for a permutation p-value at its floor 1/(B+1)."""
    if test.kind == "sequential":
        return f"= {format_pvalue(test.pvalue)}"
    shown = format_pvalue(test.pvalue, test.n_resamples, exact=test.exact)
    return shown if shown.startswith("≤") else f"= {shown}"


def alignment_table(family):
    """The alignment family's table (a DataFrame): each model's ω, p, adjusted p, decision, and whether it is
    aligned with the reference (:func:`dbpa_core.audit.experiments.aligned`)."""
    from ..audit.experiments import aligned

    table = family_frame(family).rename(columns={"perturbation": "model", "ω": "ω (JSD)"})
    if not any(table["kind"]):  # models have no control/target kind: an empty column only takes room
        table = table.drop(columns=["kind"])
    # Not rejecting is not evidence of alignment (a small k cannot tell real from synthetic text): say only that.
    table["aligned with reference"] = ["no difference shown at this k" if same else "no (differs)"
                                       for same in aligned(family)]
    return table


def family_csv(family, record: dict | None = None) -> str:
    """The family's table as CSV; with its ``record`` (:func:`family_record`), the record's settings follow
    the table's columns (:func:`~dbpa_core.present.csv_inputs.with_inputs`), so the CSV says what produced it."""
    from .csv_inputs import family_inputs, with_inputs

    table = family_frame(family)
    return frame_csv(table if record is None else with_inputs(table, family_inputs(record)))


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


def json_default(value):
    """``json.dumps``'s ``default`` for numpy values (scalars and arrays), so records serialise exactly."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")



def rut_record(result, scores, *, alpha: float, score: str, target: str, settings: dict | None = None,
               beside: dict | None = None) -> dict:
    """The JSON record of a rank-uniformity audit (:class:`~dbpa_core.rut.uniformity.RUTResult`).

    ``scores`` is the :class:`~dbpa_core.rut.data.AuditScores` the test ran on;
    ``target`` names the audited system and where its responses came from; ``beside`` other tests run on
    the same audit (``{"mmd": {...}}``), kept out of ``settings``, which holds only inputs.
    """
    return {**(beside or {}),
        "test": "rank-based uniformity test (Zhu et al., ICLR 2026)", "method": result.method,
        # A target named by its endpoint could carry a URL's password: redacted at this boundary.
        "target": redact(target), "score": score, "alpha": alpha,
        "statistic": result.statistic, "pvalue": result.pvalue, "pvalue_display": format_rut_pvalue(result.pvalue),
        "decision": decision(result.pvalue, alpha), "reading": read_rut_decision(result.pvalue, alpha),
        "ks_statistic": result.ks_statistic, "ks_pvalue": result.ks_pvalue,
        "share_lower_bound": result.share_lower_bound, "confidence_level": result.confidence_level,
        "share_reading": read_share_bound(result.share_lower_bound, result.confidence_level),
        "n_prompts": result.n_prompts, "n_reference": result.n_reference,
        "prompts": list(scores.prompts), "dropped_prompts": list(scores.dropped),
        "ranks": np.asarray(result.ranks).tolist(), "target_scores": np.asarray(scores.target_scores).tolist(),
        "settings": redact_mapping(settings or {}), "versions": versions(),
    }


def rates_record(comparison, max_fpr: float, *, settings: dict | None = None) -> dict:
    """The JSON record of a live TPR/FPR run (:class:`~dbpa_core.audit.experiments.RatesComparison`).

    ``models`` holds each model's row of the summary at ``max_fpr``; ``settings`` the comparison's own
    (scenarios, replicates, k, B, similarity, ω, seed) after ``settings`` (the sampler and embedder).
    """
    rows = comparison.summary(max_fpr).to_dict(orient="records")
    return {"test": "TPR/FPR of controls and targets (paper Figs 1–2)", "max_fpr": max_fpr, "models": rows,
            "settings": redact_mapping({**(settings or {}), **comparison.settings}), "versions": versions()}


def persona_record(grid, *, settings: dict | None = None, synthetic=()) -> dict:
    """The JSON record of a live persona study (:class:`~dbpa_core.audit.experiments.PersonaGrid`).

    ``rows`` holds the table the screen shows (persona, kind, the statistic and p per model), ``readings``
    its sentences and ``settings`` the grid's own (k, B, similarity, ω, seed) after ``settings`` (each
    model's sampler, the embedder); p-values and stars are unadjusted, as in the paper's Table 2;
    ``synthetic`` names the simulated models (:func:`~dbpa_core.present.paper_readings.read_persona_grid`).
    """
    table = grid.table(statistic_label=discrepancy_symbol(grid.discrepancy))
    return {"test": "persona study (paper Table 2)", "discrepancy": grid.discrepancy,
            "stars": "unadjusted: * p < 0.05, ** p < 0.01, *** p < 0.001 (as the paper's Table 2)",
            "rows": table.to_dict(orient="records"), "readings": read_persona_grid(grid, synthetic=synthetic),
            "settings": redact_mapping({**(settings or {}), **grid.settings}), "versions": versions()}


def explanation_record(explanation, *, arms=ARM_NAMES, declared: bool | None = None) -> dict:
    """The JSON record of a :class:`~dbpa_core.stats.explain.ChangeExplanation` (key ``explanation`` of reports).

    ``themes`` (one per cluster, in cluster order) and ``representative``
    (``{"x": [...], "y": [...]}``, arm x the original) carry every number;
    ``readings`` the sentences the app shows, so a report reads the same;
    ``labels`` the theme of each pooled output (arm x first).  ``declared`` is
    the DBPA test's decision on the same two arms: where it declared no change
    and themes were found, the readings say so as the page does
    (:func:`~dbpa_core.present.explanation_readings.read_themes_beside_test`).
    """
    themes = [{
        "cluster": t.cluster, "terms": list(t.terms), "count_x": t.count_x, "count_y": t.count_y,
        "share_x": t.share_x, "share_y": t.share_y, "pvalue": t.pvalue, "qvalue": t.qvalue,
        "significant": t.significant, "examples": list(t.examples), "example_indices": list(t.example_indices),
    } for t in explanation.themes]
    representative = {key: [{"index": i, "text": text, "witness": w}
                            for i, text, w in zip(rep.indices, rep.texts, rep.witness)]
                      for key, rep in explanation.representative.items()}
    return {
        "arms": {"x": arms[0], "y": arms[1]}, "themes": themes, "representative": representative,
        "n_clusters": explanation.n_clusters, "rule": explanation.rule, "candidates": list(explanation.candidates),
        "silhouettes": [None if np.isnan(s) else s for s in explanation.silhouettes],
        "n_x": explanation.n_x, "n_y": explanation.n_y, "n_resamples": explanation.n_resamples,
        "exact": explanation.exact,
        "fdr": explanation.fdr, "correction": explanation.correction, "witness_bandwidth": explanation.bandwidth,
        "labels": np.asarray(explanation.labels).tolist(),
        "readings": [read_explanation_method(explanation), *read_explanation(explanation, arms=arms),
                     *filter(None, [read_themes_beside_test(explanation, declared=declared)]),
                     read_representatives(arms=arms)],
    }


#: A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection"; the
#: full-width forms too, which some spreadsheets read as their ASCII twins).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_safe(value):
    """``value`` for a CSV cell: a text a spreadsheet would run as a formula gets a leading apostrophe.

    OWASP's rule: a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
    (after any spaces) is prefixed with ``'``, so it is shown as text; a plain number written as
    text (``-0.5``) is left as it is.  Numbers, booleans and missing values are not texts and pass.
    """
    if not isinstance(value, str):
        return value
    start = value.lstrip(" ")
    if start.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value.strip()):
        return "'" + value
    return value


def frame_csv(frame) -> str:
    """A table as CSV with every cell and column name through :func:`csv_safe`: the one way every CSV
    the project writes (the command line's results.csv, the app's downloads) is made."""
    safe = frame.map(csv_safe)
    safe.columns = [csv_safe(str(column)) for column in safe.columns]
    # CRLF rows (RFC 4180): a cell holding a lone carriage return is then quoted, so it cannot split its row.
    return safe.to_csv(index=False, lineterminator="\r\n")


def explanation_csv(explanation, *, arms=ARM_NAMES) -> str:
    """The themes table as CSV, every text cell safe to open in a spreadsheet (:func:`frame_csv`)."""
    from .explanation import themes_table

    return frame_csv(themes_table(explanation, arms=arms))


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
