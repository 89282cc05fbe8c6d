"""The reproduced experiments as tables, every column labelled with its source.

Three sources stand side by side (:mod:`dbpa_core.paper.printed`): **paper (printed)** — the paper's own
tables and text; **reference run** — the result files of the reference code shipped in ``assets/paper/``;
**this project** — what :mod:`dbpa_core.paper` computes.  A column is named ``"<quantity> · <source>"``.
The results compute nothing here.
"""

from __future__ import annotations

from ..paper import printed as pr
from ..paper.appendix_c import AppendixResult, ChoiceGrid
from ..paper.design import ALLOWED_FPRS, ROCStudy
from ..paper.fig1 import Figs12
from ..paper.fig3 import AlignmentStudy
from ..paper.sample_size import SampleSizeTable
from ..paper.table2 import PersonaTable
from .formatting import format_number, format_percent, format_pvalue, significance_stars

#: Table 2's printed columns set beside our GPT responses (the shipped persona answers are GPT's).
TABLE2_PRINTED_MODELS = ("GPT-4", "GPT-3.5")
#: The setups of Figs 1–2, as tables and readings name them.
SETUP_NAMES = {"shipped_paraphrases": "the paper's shipped paraphrases", "recorded_cvd": "recorded cvd_nice answers"}


def col(quantity: str, source: str) -> str:
    """A column name: the quantity and the source it comes from."""
    return f"{quantity} · {source}"


def _frame(columns: dict):
    import pandas as pd

    return pd.DataFrame(columns)


def stacked_frame(tables):
    """Every table an experiment shows, as one frame for its one CSV download.

    ``tables`` holds (title, frame) pairs in the order of the screen.  One table comes back as it is; several
    are stacked under a first column ``"table"`` naming each row's table, each keeping its own columns (empty
    where another table's column does not apply), so nothing on the screen is missing from the CSV (a user
    trial downloaded Appendix C's Table 4 alone while Tables 5 and 6 stood beside it).
    """
    import pandas as pd

    tables = list(tables)
    if not tables:
        raise ValueError("`tables` must hold at least one (title, frame) pair.")
    if len(tables) == 1:
        return tables[0][1]
    columns = ["table"] + list(dict.fromkeys(c for _, frame in tables for c in frame.columns))
    parts = [frame.assign(table=title).reindex(columns=columns).astype(object) for title, frame in tables]
    # empty text where a table has no such column: whole numbers that another table leaves empty stay "20"
    # (a column holding NaN is read as floats, "20.0", by every later step down to the CSV)
    return pd.concat(parts, ignore_index=True).fillna("")


# ------------------------------------------------------------------ Table 2
def persona_frame(result: PersonaTable, *, formatted: bool = False):
    """Table 2: per persona, this project's test, the reference run's file and the printed GPT-4 / GPT-3.5 cells.

    ``formatted=True`` writes our p-values for display (``"≤ 1/(B+1) = 0.001"`` at the floor).
    """
    rows = result.rows

    def shown(row):
        return format_pvalue(row.pvalue, row.test.n_resamples, exact=row.test.exact) if formatted else row.pvalue

    columns = {
        "persona": [r.persona for r in rows], "kind": [r.kind for r in rows],
        col("ω", pr.THIS_PROJECT): [r.statistic for r in rows],
        col("JSD bits", pr.THIS_PROJECT): [r.jsd_bits for r in rows],
        col("p", pr.THIS_PROJECT): [shown(r) for r in rows],
        col("stars", pr.THIS_PROJECT): [significance_stars(r.pvalue) for r in rows],
        col("ω", pr.REFERENCE_RUN): [r.reported_statistic for r in rows],
        col("p", pr.REFERENCE_RUN): [r.reported_pvalue for r in rows],
        col("stars", pr.REFERENCE_RUN): [significance_stars(r.reported_pvalue) for r in rows],
    }
    for model in TABLE2_PRINTED_MODELS:
        cells = [pr.TABLE2.value(r.persona, model) for r in rows]
        columns[col(f"ω {model}", pr.PRINTED)] = [c.value for c in cells]
        columns[col(f"stars {model}", pr.PRINTED)] = [c.stars for c in cells]
    return _frame(columns)


# -------------------------------------------------------------- Figs 1–2
def roc_frame(study: ROCStudy):
    """One setup of Figs 1–2: per model, AUC, TPR at the allowed FPRs, rejection rates (and the reference run's)."""
    models = study.models
    columns = {
        "model": [m.label for m in models],
        col("AUC", pr.THIS_PROJECT): [m.pooled.auc for m in models],
        col("AUC mean over seeds", pr.THIS_PROJECT): [m.auc_mean for m in models],
        col("AUC sd over seeds", pr.THIS_PROJECT): [m.auc_sd for m in models],
    }
    for fpr in ALLOWED_FPRS:
        columns[col(f"TPR at FPR ≤ {format_percent(fpr)}", pr.THIS_PROJECT)] = [m.tpr_at_fpr(fpr) for m in models]
    columns[col("controls p < .05", pr.THIS_PROJECT)] = [float((m.control_pvalues < 0.05).mean()) for m in models]
    columns[col("targets p < .05", pr.THIS_PROJECT)] = [float((m.target_pvalues < 0.05).mean()) for m in models]
    if all(m.reported_pvalues is not None for m in models):
        # the reference run tested only base against each paraphrase, with base as the original
        columns[col("base vs paraphrase p < .05", pr.REFERENCE_RUN)] = [float((m.reported_pvalues < 0.05).mean())
                                                                        for m in models]
    return _frame(columns)


def best_model_frame(result: Figs12):
    """Fig 2's reading: the best model at each allowed FPR, printed and in each setup (none on a tie)."""
    def name(best):
        if best.model is not None:
            return f"{best.model} (TPR {format_percent(best.tpr)})"
        if best.tied:
            return f"none: {', '.join(best.tied)} tie at TPR {format_percent(best.tpr)}"
        return "none (TPR 0 for all)"

    columns = {"allowed FPR": [format_percent(f) for f in ALLOWED_FPRS],
               col("best model", pr.PRINTED): [pr.FIG2_BEST[f] for f in ALLOWED_FPRS]}
    for study in result.studies:
        columns[col(f"best model, {SETUP_NAMES[study.setup]}", pr.THIS_PROJECT)] = [
            name(study.best_at(f)) for f in ALLOWED_FPRS]
    return _frame(columns)


# ------------------------------------------------------------------ Fig 3
def alignment_frame(result: AlignmentStudy, alpha: float = 0.05):
    """Fig 3: per open model, ω against the reference model in this project and the reference run, and the
    printed verdict (against GPT-4)."""
    rows = result.rows
    return _frame({
        "model": [r.label for r in rows],
        col("ω mean", pr.THIS_PROJECT): [float(r.statistics.mean()) for r in rows],
        col("ω sd", pr.THIS_PROJECT): [float(r.statistics.std()) for r in rows],
        col(f"seeds p ≤ {alpha:g}", pr.THIS_PROJECT): [r.n_significant(alpha) for r in rows],
        col("differs", pr.THIS_PROJECT): [r.differs(alpha) for r in rows],
        col("ω mean", pr.REFERENCE_RUN): [float(r.reported_statistics.mean()) for r in rows],
        col("ω sd", pr.REFERENCE_RUN): [float(r.reported_statistics.std()) for r in rows],
        col(f"seeds p ≤ {alpha:g}", pr.REFERENCE_RUN): [r.n_significant(alpha, reported=True) for r in rows],
        col("differs", pr.REFERENCE_RUN): [r.differs(alpha, reported=True) for r in rows],
        col(f"differs from {pr.FIG3_REFERENCE}", pr.PRINTED): [r.label in pr.FIG3_DIFFERENT for r in rows],
    })


# --------------------------------------------------------------- appendix
def grid_frame(grid: ChoiceGrid):
    """C.2 / C.4: per persona, each choice as "ω stars", here and as printed."""
    table = pr.TABLES[grid.table]
    columns = {"persona": list(grid.personas)}
    for j, choice in enumerate(grid.choices):
        # "ω stars", as printed: "ω (p ≤ 0.001)***" in every cell did not fit a projector's 1024 px (issue 29);
        # the stars give p's class and the JSON record keeps every p.
        columns[col(choice, pr.THIS_PROJECT)] = [f"{format_number(s)} {significance_stars(p)}".strip()
                                                 for s, p in zip(grid.statistics[:, j], grid.pvalues[:, j])]
        columns[col(choice, pr.PRINTED)] = [f"{v.value:g}{v.stars}" for v in
                                            (table.value(p, choice) for p in grid.personas)]
    return _frame(columns)


def cost_frame(result: AppendixResult):
    """C.3 in Table 5's form: perturbations × models, US cents, recomputed and printed."""
    costs = result.costs
    columns = {"perturbations": [r.perturbations for r in costs.rows],
               col("tokens", pr.THIS_PROJECT): [r.tokens for r in costs.rows],
               col("tokens", pr.PRINTED): [int(pr.TABLE5.value(str(r.perturbations), "tokens").value)
                                           for r in costs.rows]}
    for model in costs.models:
        columns[col(f"¢ {model}", pr.THIS_PROJECT)] = [round(r.cents[model], 6) for r in costs.rows]
        columns[col(f"¢ {model}", pr.PRINTED)] = [pr.TABLE5.value(str(r.perturbations), model).value
                                                  for r in costs.rows]
    return _frame(columns)


# ------------------------------------------------------------ sample size
def sample_size_frame(result: SampleSizeTable):
    """§3.2's rule, a z-test approximation: k per arm for each family size m and effect ω, what the paper's k detects."""
    columns = {"family": [f"m = {m}: {label}" for m, label in result.families.items()]}
    for effect in result.effects:
        columns[col(f"z-test k for ω = {effect:g}", pr.THIS_PROJECT)] = [result.k[m, effect] for m in result.families]
    columns[col(f"ω a z-test detects at k = {result.k_paper}", pr.THIS_PROJECT)] = [
        round(result.detectable[m], 3) for m in result.families]
    return _frame(columns)
