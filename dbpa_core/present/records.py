"""JSON-ready records of results (the ``report.json`` side of the exports)."""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import platform
from pathlib import Path

import numpy as np

from .._validation import redact, redact_mapping
from ..data.provenance import provenance_record
from .formatting import discrepancy_symbol, format_rut_pvalue, significance_stars
from .explanation_readings import (ARM_NAMES, read_explanation, read_explanation_method, read_representatives,
                                   read_themes_beside_test)
from .paper_readings import read_persona_grid
from .readings import correction_name, decision, read_sequential
from .rut_readings import read_rut_decision, read_share_bound


def result_to_dict(result, **context) -> dict:
    """A JSON-ready record of a :class:`~dbpa_core.stats.permutation.DBPAResult` and its context."""
    record = {
        "statistic": result.statistic, "pvalue": result.pvalue, "effect_size": result.effect_size,
        "standardized_effect": result.standardized_effect, "n_original": result.n_original,
        "n_perturbed": result.n_perturbed, "n_resamples": result.n_resamples, "exact": result.exact,
        "similarity": result.similarity, "discrepancy": result.discrepancy, "alternative": result.alternative,
        "warnings": list(result.warnings), "stars": significance_stars(result.pvalue),
        "null_distribution": np.asarray(result.null_distribution).tolist(),
    }
    if result.kind == "sequential":
        # A sequential test decides by its boundary (its stage-wise p against the α spent so far): the record
        # says so and carries the plan and the looks, which a fixed-k record has no place for (trial 7).
        record.update({
            "design": "sequential", "pvalue_kind": "stage-wise ordering p-value at the stop",
            "reject": bool(result.reject), "stopped": result.stopped, "n_per_arm": result.n_per_arm,
            "k_max": result.k_max, "batch_size": result.batch_size, "spending": result.spending,
            "futility": result.futility, "alpha_spent_over_looks": result.alpha,
            "looks": [{"n_per_arm": look.n_per_arm, "statistic": look.statistic,
                       "boundary": None if np.isinf(look.boundary) else look.boundary, "pvalue": look.pvalue,
                       "alpha_spent": look.alpha_spent} for look in result.looks],
            "reading": read_sequential(result)})
    record.update(context)
    return record


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
