"""The paper's reproduced experiments as JSON records, agreement sentences and command-line text.

Rauba, Wei & van der Schaar (ICML 2025): Table 2 (§4.1), Figs 1–2 (§4.2), Fig 3 (§4.3), appendix C.2–C.4
and §3.2's sample-size rule.  Every value of a record carries its ``source`` — "paper (printed)"
(:mod:`dbpa_core.paper.printed`, with its ``reference``), "reference run" (the shipped result files) or
"this project" — and every experiment has one agreement sentence per result it reproduces: where this
project agrees with the printed result, where not, and the measured reason.  The page, the command line
and the HTML report all use these, so they say the same thing.
"""

from __future__ import annotations

import numpy as np

from ..audit.experiments import BestModel
from ..paper import loaders as paper
from ..paper import printed as pr
from ..paper.appendix_c import AppendixResult, ChoiceGrid
from ..paper.design import ALLOWED_FPRS, ROCStudy
from ..paper.fig1 import Figs12
from ..paper.fig3 import AlignmentStudy
from ..paper.sample_size import SampleSizeTable
from ..paper.rut import RUTStudy
from ..paper.stability import StabilityStudy
from ..paper.table2 import PersonaTable
from ..stats.power import RULE_POWER_AT_63, TWO_SAMPLE_CONSTANT
from . import reproduction_tables as tables
from . import rut_study
from .formatting import at_floor, floor_value, format_percent, significance_stars
from .stability_report import stability_lines, stability_record


def _names(items) -> str:
    return ", ".join(items) or "none"


# -------------------------------------------------------------- agreement
def persona_agreement(result: PersonaTable, alpha: float = 0.05) -> str:
    """Table 2: this project's significant personas against the printed GPT-4 / GPT-3.5 columns and the file."""
    ours, file = set(result.significant(alpha)), set(result.significant(alpha, reported=True))
    printed = {m: set(pr.TABLE2.significant(m)) for m in tables.TABLE2_PRINTED_MODELS}
    ordered = [p for p in paper.PERSONAS if p in ours]
    medical = [p for p in paper.MEDICAL_PERSONAS if p in ours]
    covered = set().union(*printed.values()) <= ours
    doctor = result.rows[0]
    return (f"Printed, GPT-4 is significant for {_names(p for p in paper.PERSONAS if p in printed['GPT-4'])} and "
            f"GPT-3.5 for {_names(p for p in paper.PERSONAS if p in printed['GPT-3.5'])} (no medical persona in "
            f"either), and the reference run's file for {_names(p for p in paper.PERSONAS if p in file)}, which "
            f"matches neither printed column; this project (p < {alpha:g}) flags {_names(ordered)} — "
            f"{'every persona printed as significant, and ' if covered else ''}also the medical personas "
            f"{_names(medical)}, because each shipped persona arm answers a different, randomly drawn patient, a "
            f"change the permutation test detects, while one prompt split in two halves (the doctor row) gives "
            f"p = {doctor.pvalue:.2f}.")


def best_model_sentence(best: BestModel) -> str:
    """Fig 2's reading at one allowed FPR, to go inside a sentence: ``"at FPR ≤ 5 % the best is Phi-3-mini
    (TPR 48 %)"``, or why none is named (a tie, or no target flagged)."""
    bound = f"at FPR ≤ {format_percent(best.max_fpr)}"
    if best.tpr == 0:
        return f"{bound} no model flags any target, so none is best"
    if best.model is None:
        return f"{bound} {', '.join(best.tied)} tie at TPR {format_percent(best.tpr)}, so none is declared best"
    return f"{bound} the best is {best.model} (TPR {format_percent(best.tpr)})"


def best_model_reading(best: BestModel, *, alpha: float | None = None) -> str:
    """The banner of Fig 2's reading: :func:`best_model_sentence`, and for a named model what its TPR means,
    with both shares written out (``"it flags 48 % of the targets while flagging at most 5 % of the
    controls"``: "that share" twice read as 48 % both times in a user trial); ``alpha``, the p-value
    threshold that achieves it, where the page knows it."""
    sentence = best_model_sentence(best)
    sentence = sentence[0].upper() + sentence[1:]
    if best.model is None:
        return f"{sentence}."
    at = f"at α = {alpha:.3g} " if alpha is not None else ""
    return (f"{sentence}: {at}it flags {format_percent(best.tpr)} of the targets while flagging at most "
            f"{format_percent(best.max_fpr)} of the controls.")


def _share_range(shares) -> str:
    """The smallest and largest of ``shares`` as percentages: ``"16 %–75 %"``."""
    return f"{format_percent(min(shares))}–{format_percent(max(shares))}"


def _floor_share(model, n_resamples) -> float:
    return float(np.mean([at_floor(p, n_resamples) for p in model.control_pvalues]))


def _name_echo(study: ROCStudy, alpha: float = 0.05) -> str:
    """Why AUC < 0.5 on the recorded cvd_nice models, as measured: the name echo, and no power for the targets."""
    from ..paper.cvd_roc import load_recording

    comparisons = [c for m in study.models for c in m.comparisons]
    names = [c for c in comparisons if not c.is_target and str(c.perturbed).startswith("name")]
    facts = [c for c in comparisons if not c.is_target and not str(c.perturbed).startswith("name")]
    targets = [c for c in comparisons if c.is_target]
    recording = load_recording()
    echo = [np.mean([("John" in text) for s in study.settings["seeds"]
                     for text in recording.answers[m.key, s, "original"]]) for m in study.models]

    def flagged(tests):
        return f"{sum(c.pvalue < alpha for c in tests)} of {len(tests)}"

    return (f"the name controls are flagged in {flagged(names)} tests, the model repeating the patient's name "
            f"('John' is in {_share_range(echo)} of its original answers), the facts outside the risk score in "
            f"{flagged(facts)} and the targets in {flagged(targets)}, about α: k = {study.settings['k']} gives no "
            "power for the targets here, which says nothing about whether these models follow NICE's thresholds")


def roc_agreement(study: ROCStudy) -> str:
    """Figs 1–2 on one setup: the printed best models (Fig 2) against this project's, with the reason."""
    aucs = [m.pooled.auc for m in study.models]
    bests = "; ".join(best_model_sentence(study.best_at(f)) for f in ALLOWED_FPRS)
    printed = f"Printed (Fig. 2), {pr.FIG2_BEST[0.01]} is best at an allowed FPR of 1 % and {pr.FIG2_BEST[0.05]} at 5 %"
    n_resamples = study.settings["n_resamples"]
    if study.setup == "shipped_paraphrases":
        floor = [_floor_share(m, n_resamples) for m in study.models]
        controls = [float((m.control_pvalues < 0.05).mean()) for m in study.models]
        at_the_floor = all(at_floor(float(m.target_pvalues.min()), n_resamples) for m in study.models)
        reason = (f"in every model the smallest target p-value is the floor 1/(B+1) = {floor_value(n_resamples)}, "
                  f"where {_share_range(floor)} of the controls also sit, so any α that flags a target "
                  "flags more than 1 % of the controls" if at_the_floor else
                  f"{_share_range(floor)} of the controls sit at the p-value floor 1/(B+1)")
        return (f"{printed}; on the paper's shipped responses with controls and targets tested against a shared "
                f"original, {sum(a > 0.5 for a in aucs)} of {len(aucs)} models have AUC above 0.5 "
                f"({min(aucs):.2f}–{max(aucs):.2f}) but {bests}: "
                f"{_share_range(controls)} of the paraphrase controls are significant at 0.05 and "
                f"{reason}; and the target (base) changes the patient and the prompt's format at once.")
    depends = study.best_depends_on_fpr()
    verdict = {True: "the best model does depend on the allowed FPR, as the paper found",
               False: "the same model is best at both, unlike the paper's example",
               None: "too few allowed FPRs have a declared best to say whether it depends on the FPR"}[depends]
    k, seeds = study.settings["k"], len(study.settings["seeds"])
    controls = [float((m.control_pvalues < 0.05).mean()) for m in study.models]
    targets = [float((m.target_pvalues < 0.05).mean()) for m in study.models]
    # AUC < 0.5 means controls got the smaller p-values: say so, with the shares that show it.
    reversed_ = sum(a < 0.5 for a in aucs)
    shares = (f"; at α = 0.05 the test flags {_share_range(controls)} of the controls and "
              f"{_share_range(targets)} of the targets"
              + (f", so in {reversed_} of {len(aucs)} models controls got the smaller p-values: {_name_echo(study)}"
                 if reversed_ else ""))
    return (f"{printed}; those models are not local, so in the paper's own setup (cvd_nice, 8 controls and 8 "
            f"targets, k = {k}, {seeds} seeds) on {_names(m.label for m in study.models)}, AUC is "
            f"{', '.join(f'{a:.2f}' for a in aucs)} and {bests}: {verdict}{shares}.")


def alignment_agreement(result: AlignmentStudy, alpha: float = 0.05) -> str:
    """Fig 3: the printed different models (against GPT-4) against this project's and the file's (GPT-3.5)."""
    ours, file = result.differing(alpha), result.differing(alpha, reported=True)
    both = [m for m in pr.FIG3_DIFFERENT if m in ours]
    extra = [m for m in ours if m not in pr.FIG3_DIFFERENT]
    pmax = max(float(r.pvalues.mean()) for r in result.rows)
    seeds = sum(len(r.pvalues) for r in result.rows)
    reported = sum(r.n_significant(alpha, reported=True) for r in result.rows)
    # Short sentences, one claim each: read aloud on a projector, one 100-word sentence lost the room.
    return (f"Printed (§4.3): only {_names(pr.FIG3_DIFFERENT)} differ from {pr.FIG3_REFERENCE}. The shipped runs "
            f"hold no {pr.FIG3_REFERENCE} arm, only GPT-3.5 as the reference. Against it, this project flags "
            f"{_names(ours)}: the printed {_names(both)}, and also {_names(extra)}. Every open model's answers are "
            f"far from GPT-3.5's under MiniLM (mean p ≤ {pmax:.3f} over the seeds). The reference run's files find "
            f"{_names(file)} different in most seeds: their test (a bootstrap of pooled similarity values, per its "
            f"code) reached p ≤ {alpha:g} in {reported} of {seeds} model-seeds.")


def grid_agreement(grid: ChoiceGrid, alpha: float = 0.05) -> str:
    """C.2 / C.4: verdicts cell by cell against the printed table, and the persona pattern the paper states."""
    table = pr.TABLES[grid.table]
    printed = np.array([[table.value(p, c).significant for c in grid.choices] for p in grid.personas])
    ours = grid.pvalues < alpha
    same = int((printed == ours).sum())
    creative = [grid.personas.index(p) for p in paper.PERSONAS[4:]]
    medical = [grid.personas.index(p) for p in paper.MEDICAL_PERSONAS[1:]]
    higher = [c for j, c in enumerate(grid.choices)
              if grid.statistics[creative, j].mean() > grid.statistics[medical, j].mean()]
    doctor = grid.personas.index(paper.BASELINE_PERSONA)
    reason = (f"the paper compares each persona with baseline answers given without a role (§4.1), so its doctor "
              f"row is 'Act as a doctor' against those (the reference code seems to draw that baseline as a second "
              f"doctor arm, which the paper does not say) and is flagged by "
              f"{_names(c for j, c in enumerate(grid.choices) if printed[doctor, j])}; ours compares two halves "
              f"of the one shipped doctor arm, no role-free answers being shipped (flagged by "
              f"{_names(c for j, c in enumerate(grid.choices) if ours[doctor, j])}), and the other "
              "persona arms each answer another patient, which every choice here detects")
    if grid.table == "Table 4":
        reason += ("; the paper does not define Euclidean and Wasserstein (ours: the density-histogram distance "
                   "and W1 between P0 and P1, so magnitudes differ)")
    return (f"{grid.table}: this project gives the printed verdict (p < {alpha:g} or not) in {same} of "
            f"{printed.size} cells; the creative personas have the larger mean ω under {len(higher)} of "
            f"{len(grid.choices)} choices ({_names(higher)}), as the paper states for all; where verdicts differ, "
            f"{reason}.")


def cost_agreement(result: AppendixResult) -> str:
    """C.3: Table 5 recomputed, and its token assumption against the measured count."""
    costs = result.costs
    exact = all(abs(r.cents[m] - pr.TABLE5.value(str(r.perturbations), m).value) < 1e-9
                and r.tokens == pr.TABLE5.value(str(r.perturbations), "tokens").value
                for r in costs.rows for m in costs.models)
    return (f"Table 5: {'every cell is' if exact else 'not every cell is'} reproduced from assets/pricing.yaml at "
            f"{costs.tokens_per_perturbation:,} tokens per perturbation, the count its Total Tokens column uses, "
            f"although its text says {pr.TABLE5_STATED_TOKENS_PER_PERTURBATION} (a tenth of every printed cost); "
            f"measured, a perturbation embeds its k = {costs.k} answers of ≈ {costs.tokens_per_answer:.0f} tokens "
            f"(the shipped persona answers) = {costs.measured_tokens_per_perturbation:,.0f} tokens, "
            f"{costs.undercount(costs.tokens_per_perturbation):.1f}× the table's count.")


def sample_size_agreement(result: SampleSizeTable) -> str:
    """§3.2: the rule has no printed table to agree with; what it says about the paper's k."""
    d = result.detectable
    measured = RULE_POWER_AT_63
    return (f"§3.2 prints the rule, not a table, and only up to a constant (2 here: the two-sample z-test's normal "
            f"approximation, ω as Cohen's d); at the paper's k = {result.k_paper} the z-test would detect effects "
            f"ω ≥ {d[1]:.2f} (Cohen's d) for one perturbation and ≥ {d[8]:.2f} with Bonferroni over Table 2's 8 "
            f"personas ({format_percent(result.power)} power, α = {result.alpha:g}). It is the paper's z-test "
            f"approximation, not DBPA's power: at its k = 63 for d = 0.5 (80 % planned), DBPA with the paper's ω "
            f"(the JS distance) found a normal shift in {format_percent(measured['js_distance', 1])} of simulated "
            f"audits in 1-D and {format_percent(measured['js_distance', 16])} in 16-D (the energy distance in 1-D: "
            f"{format_percent(measured['energy', 1])}); plan DBPA from a pilot with plan_sample_size. Table 2's "
            "printed ω are JS distances, not Cohen's d, so the rule cannot be checked against them.")


def agreement(result) -> list[str]:
    """The agreement sentences of a reproduced experiment (one per result it reproduces)."""
    if isinstance(result, PersonaTable):
        return [persona_agreement(result)]
    if isinstance(result, Figs12):
        return [roc_agreement(study) for study in result.studies]
    if isinstance(result, AlignmentStudy):
        return [alignment_agreement(result)]
    if isinstance(result, AppendixResult):
        return [grid_agreement(result.omega), cost_agreement(result), grid_agreement(result.similarity)]
    if isinstance(result, SampleSizeTable):
        return [sample_size_agreement(result)]
    raise ValueError(f"`result` must be a reproduced experiment; got {type(result).__name__}.")


# ---------------------------------------------------------------- records
def _printed(value: pr.PrintedValue, **fields) -> dict:
    return {"source": pr.PRINTED, "reference": value.reference, "value": value.value, "stars": value.stars,
            **fields}


def _persona_rows(result: PersonaTable) -> list[dict]:
    rows = []
    for r in result.rows:
        rows.append({"table": "Table 2", "item": r.persona, "kind": r.kind, "source": pr.THIS_PROJECT,
                     "statistic": r.statistic, "jsd_bits": r.jsd_bits, "pvalue": r.pvalue,
                     "stars": significance_stars(r.pvalue), "n_original": r.test.n_original,
                     "n_perturbed": r.test.n_perturbed, "note": r.note})
        rows.append({"table": "Table 2", "item": r.persona, "kind": r.kind, "source": pr.REFERENCE_RUN,
                     "statistic": r.reported_statistic, "pvalue": r.reported_pvalue,
                     "stars": significance_stars(r.reported_pvalue), "file": "personas/cvd_guidelines_results.json"})
        rows += [_printed(pr.TABLE2.value(r.persona, m), table="Table 2", item=r.persona, kind=r.kind, model=m)
                 for m in tables.TABLE2_PRINTED_MODELS]
    return rows


def setup_record(study: ROCStudy) -> dict:
    """One setup of Figs 1–2 as JSON: ``design``, per model ``auc``, ``tpr_at_fpr``, ``design``, ``source``; the
    reference run's rows; the best model per allowed FPR; settings and the agreement sentence."""
    def best(f):
        b = study.best_at(f)
        return {"source": pr.THIS_PROJECT, "max_fpr": f, "model": b.model, "tpr": b.tpr, "tied": list(b.tied)}

    models = [{"model": m.label, "key": m.key, "source": pr.THIS_PROJECT, "design": study.design,
               "auc": m.pooled.auc, "auc_mean": m.auc_mean, "auc_sd": m.auc_sd, "aucs": m.aucs.tolist(),
               "tpr_at_fpr": {f"{f:g}": m.tpr_at_fpr(f) for f in ALLOWED_FPRS},
               "n_controls": m.pooled.n_controls, "n_targets": m.pooled.n_targets,
               "control_rejection_rate_0.05": float((m.control_pvalues < 0.05).mean()),
               "target_rejection_rate_0.05": float((m.target_pvalues < 0.05).mean())} for m in study.models]
    reference = [{"model": m.label, "source": pr.REFERENCE_RUN, "test": "base (original) vs each paraphrase",
                  "rejection_rate_0.05": float((m.reported_pvalues < 0.05).mean())}
                 for m in study.models if m.reported_pvalues is not None]
    return {"setup": study.setup, "design": study.design, "models": models, "reference_run": reference,
            "best": [best(f) for f in ALLOWED_FPRS], "settings": study.settings, "agreement": roc_agreement(study)}


def _grid_rows(grid: ChoiceGrid) -> list[dict]:
    table = pr.TABLES[grid.table]
    rows = []
    for i, persona in enumerate(grid.personas):
        for j, choice in enumerate(grid.choices):
            p = float(grid.pvalues[i, j])
            rows.append({"table": grid.table, "item": persona, "choice": choice, "source": pr.THIS_PROJECT,
                         "statistic": float(grid.statistics[i, j]), "pvalue": p, "stars": significance_stars(p)})
            rows.append(_printed(table.value(persona, choice), table=grid.table, item=persona, choice=choice))
    return rows


def reproduction_record(result) -> dict:
    """``{"experiment", "rows", "settings", "agreement", …}``: the JSON of the command line and the downloads.

    Every row carries ``source``; printed rows also their ``reference`` (table or section of the paper).
    ``fig1`` adds ``setups``: per setup its ``design`` and per model ``auc``, ``tpr_at_fpr`` (keys "0.01",
    "0.05"), ``design`` and ``source``.
    """
    if isinstance(result, PersonaTable):
        return {"experiment": "table2", "rows": _persona_rows(result), "settings": result.settings,
                "agreement": agreement(result)}
    if isinstance(result, Figs12):
        setups = {study.setup: setup_record(study) for study in result.studies}
        rows = [{"table": "Figs 1–2", "setup": s, **m} for s, setup in setups.items() for m in setup["models"]]
        rows += [{"table": "Figs 1–2", "setup": s, **m} for s, setup in setups.items() for m in setup["reference_run"]]
        rows += [{"table": "Fig. 2", "source": pr.PRINTED, "reference": pr.FINDINGS["fig2"].reference, "max_fpr": f,
                  "model": pr.FIG2_BEST[f], "quote": pr.FINDINGS["fig2"].quote} for f in ALLOWED_FPRS]
        return {"experiment": "fig1", "design": result.shipped.design, "setups": setups, "rows": rows,
                "settings": {s: setup["settings"] for s, setup in setups.items()}, "agreement": agreement(result)}
    if isinstance(result, AlignmentStudy):
        rows = []
        for r in result.rows:
            rows.append({"table": "Fig. 3", "item": r.label, "source": pr.THIS_PROJECT, "reference_model": "GPT-3.5",
                         "statistics": r.statistics.tolist(), "pvalues": r.pvalues.tolist(),
                         "statistic_mean": float(r.statistics.mean()), "statistic_sd": float(r.statistics.std()),
                         "n_significant": r.n_significant(), "differs": r.differs()})
            rows.append({"table": "Fig. 3", "item": r.label, "source": pr.REFERENCE_RUN, "reference_model": "GPT-3.5",
                         "statistics": r.reported_statistics.tolist(), "pvalues": r.reported_pvalues.tolist(),
                         "n_significant": r.n_significant(reported=True), "differs": r.differs(reported=True)})
            rows.append({"table": "Fig. 3", "item": r.label, "source": pr.PRINTED,
                         "reference": pr.FINDINGS["fig3"].reference, "reference_model": pr.FIG3_REFERENCE,
                         "differs": r.label in pr.FIG3_DIFFERENT})
        return {"experiment": "fig3", "rows": rows, "settings": result.settings, "agreement": agreement(result)}
    if isinstance(result, AppendixResult):
        rows = _grid_rows(result.omega) + _grid_rows(result.similarity)
        for r in result.costs.rows:
            for model in result.costs.models:
                rows.append({"table": "Table 5", "item": str(r.perturbations), "choice": model,
                             "source": pr.THIS_PROJECT, "tokens": r.tokens, "cents": r.cents[model]})
                rows.append(_printed(pr.TABLE5.value(str(r.perturbations), model), table="Table 5",
                                     item=str(r.perturbations), choice=model, unit="cents"))
        return {"experiment": "appendix", "rows": rows, "agreement": agreement(result),
                "settings": {"C.2": result.omega.settings, "C.4": result.similarity.settings,
                             "C.3": {"prices": "assets/pricing.yaml",
                                     "tokens_per_perturbation": result.costs.tokens_per_perturbation,
                                     "measured_tokens_per_perturbation": result.costs.measured_tokens_per_perturbation}}}
    if isinstance(result, SampleSizeTable):
        rows = [{"table": "§3.2", "item": f"m = {m}", "m": m, "family": label, "effect": e, "k": result.k[m, e],
                 "source": pr.THIS_PROJECT} for m, label in result.families.items() for e in result.effects]
        rows += [{"table": "§3.2", "item": f"m = {m}", "m": m, "k": result.k_paper, "detectable_effect": d,
                  "source": pr.THIS_PROJECT} for m, d in result.detectable.items()]
        rows.append({"table": "§3.2", "source": pr.PRINTED, "reference": pr.FINDINGS["sample_size"].reference,
                     "quote": pr.FINDINGS["sample_size"].quote})
        return {"experiment": "sample_size", "rows": rows, "agreement": agreement(result),
                "settings": {"alpha": result.alpha, "power": result.power, "constant": TWO_SAMPLE_CONSTANT,
                             "k_paper": result.k_paper}}
    if isinstance(result, RUTStudy):
        return rut_study.rut_study_record(result)
    if isinstance(result, StabilityStudy):
        return stability_record(result)
    raise ValueError(f"`result` must be a reproduced experiment; got {type(result).__name__}.")


def summary_lines(result) -> list[str]:
    """The plain-text tables and agreement sentences of a reproduced experiment (for the command line)."""
    def render(table):
        return table.to_string(index=False, float_format=lambda v: f"{v:.4g}")

    if isinstance(result, PersonaTable):
        lines = [render(tables.persona_frame(result, formatted=True))]
    elif isinstance(result, Figs12):
        lines = []
        for study in result.studies:
            lines += [f"Figs 1–2 on {tables.SETUP_NAMES[study.setup]} (design: {study.design}):",
                      render(tables.roc_frame(study))]
        lines.append(render(tables.best_model_frame(result)))
    elif isinstance(result, AlignmentStudy):
        lines = [render(tables.alignment_frame(result))]
    elif isinstance(result, AppendixResult):
        lines = ["C.2 (Table 4) choices of ω, persona vs doctor:", render(tables.grid_frame(result.omega)),
                 "C.3 (Table 5) embedding cost, US cents:", render(tables.cost_frame(result)),
                 "C.4 (Table 6) text similarities, ω = JS distance:", render(tables.grid_frame(result.similarity))]
    elif isinstance(result, SampleSizeTable):
        lines = ["§3.2 sample size per arm (α = 0.05, power 0.8, Bonferroni over m):",
                 render(tables.sample_size_frame(result))]
    elif isinstance(result, RUTStudy):
        return rut_study.summary_lines(result)  # the RUT paper: its own tables and findings
    elif isinstance(result, StabilityStudy):
        return stability_lines(result)  # the OT stability paper: its own tables and findings
    else:
        raise ValueError(f"`result` must be a reproduced experiment; got {type(result).__name__}.")
    return lines + ["Agreement with the paper:"] + [f"- {sentence}" for sentence in agreement(result)]
