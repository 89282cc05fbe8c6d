"""Tables, readings and JSON records of the paper's reproduced experiments (:mod:`dbpa_core.paper`).

Rauba, Wei & van der Schaar (ICML 2025): Table 2 (§4.1), Figs 1–2 (§4.2),
Fig 3 (§4.3) and appendix C.2–C.4, each beside the reference run's values.
The results compute nothing here; this module only lays them out, so the
page, the command line and the HTML report say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..paper import loaders as paper
from ..paper.appendix_c import AppendixResult, ChoiceGrid
from ..paper.fig1 import ROCStudy
from ..paper.fig3 import AlignmentStudy
from ..paper.rut import RUTStudy
from ..paper.stability import StabilityStudy
from ..paper.table2 import PersonaTable
from . import rut_study
from .readings import format_pvalue, significance_stars
from .stability_report import stability_lines, stability_record

NOT_GIVEN = "not given in the shipped data"


# ------------------------------------------------------------------ Table 2
def persona_agreement(result: PersonaTable, alpha: float = 0.05) -> str:
    """One sentence: which personas are significant in both, only ours, only the paper's."""
    ours, theirs = set(result.significant(alpha)), set(result.significant(alpha, reported=True))
    both = [p for p in paper.PERSONAS if p in ours & theirs]
    only_ours = [p for p in paper.PERSONAS if p in ours - theirs]
    only_theirs = [p for p in paper.PERSONAS if p in theirs - ours]
    same = sum((r.persona in ours) == (r.persona in theirs) for r in result.rows)
    parts = [f"At p < {alpha:g}, {same} of {len(result.rows)} personas get the same verdict as in the paper; "
             f"significant in both: {', '.join(both) or 'none'}"]
    if only_ours:
        parts.append(f"only here: {', '.join(only_ours)}")
    if only_theirs:
        parts.append(f"only in the paper: {', '.join(only_theirs)}")
    return "; ".join(parts) + "."


def persona_frame(result: PersonaTable, *, formatted: bool = False):
    """Table 2 as a DataFrame: persona, kind, ours (ω, JSD bits, p, stars) and the paper's (ω, p, stars).

    ``formatted=True`` writes our p-values for display (``"≤ 1/(B+1) = 0.001"`` at the floor).
    """
    import pandas as pd

    def shown(row):
        return format_pvalue(row.pvalue, row.test.n_resamples, exact=row.test.exact) if formatted else row.pvalue

    return pd.DataFrame({
        "persona": [r.persona for r in result.rows], "kind": [r.kind for r in result.rows],
        "ω JS distance (ours)": [r.statistic for r in result.rows],
        "JSD bits (ours)": [r.jsd_bits for r in result.rows],
        "p (ours)": [shown(r) for r in result.rows],
        "stars (ours)": [significance_stars(r.pvalue) for r in result.rows],
        "ω JS distance (paper)": [r.reported_statistic for r in result.rows],
        "p (paper)": [r.reported_pvalue for r in result.rows],
        "stars (paper)": [significance_stars(r.reported_pvalue) for r in result.rows],
    })


# -------------------------------------------------------------- Figs 1–2
def roc_finding(result: ROCStudy, fprs: Sequence[float] = (0.01, 0.05)) -> str:
    """One sentence on the paper's claim that the best model depends on the allowed FPR."""
    parts = []
    for f in fprs:
        name = result.best_model_at(f)
        tpr = result.model(name).tpr_at_fpr(f)
        parts.append(f"at FPR ≤ {f:.0%} the best is {name} (TPR {tpr:.0%})" if tpr > 0 else
                     f"at FPR ≤ {f:.0%} no model flags any target")
    depends = result.best_depends_on_fpr(fprs)
    if depends is None:
        verdict = ("too few of these FPRs let any model flag a target to tell whether the best model depends on "
                   "the allowed FPR")
    elif depends:
        verdict = "so the best model depends on the allowed FPR, as the paper found"
    else:
        verdict = ("so here the same model is best at every allowed FPR: the paper's finding does not hold on "
                   "these responses with this embedder")
    return f"{'; '.join(parts)}: {verdict}."


def roc_frame(result: ROCStudy):
    import pandas as pd

    models = result.models
    return pd.DataFrame({
        "model": [m.label for m in models],
        "AUC mean": [m.auc_mean for m in models], "AUC sd": [m.auc_sd for m in models],
        "TPR at FPR ≤ 1%": [m.tpr_at_fpr(0.01) for m in models],
        "TPR at FPR ≤ 5%": [m.tpr_at_fpr(0.05) for m in models],
        "targets p < .05 (ours)": [m.target_rejection_rate(0.05) for m in models],
        "targets p < .05 (paper run)": [m.target_rejection_rate(0.05, reported=True) for m in models],
        "AUC (paper)": [NOT_GIVEN] * len(models),
    })


# ------------------------------------------------------------------ Fig 3
def alignment_reading(result: AlignmentStudy, alpha: float = 0.05) -> str:
    ours, theirs = result.differing(alpha), result.differing(alpha, reported=True)
    n = len(result.rows[0].pvalues) if result.rows else 0
    return (f"Differ from GPT-3.5 (p ≤ {alpha:g} in most of the {n} seeds): {', '.join(ours) or 'none'}; "
            f"in the reference run: {', '.join(theirs) or 'none'}.")


def alignment_frame(result: AlignmentStudy):
    import pandas as pd

    rows = result.rows
    return pd.DataFrame({
        "model": [r.label for r in rows],
        "ω mean (ours)": [float(r.statistics.mean()) for r in rows],
        "ω sd (ours)": [float(r.statistics.std()) for r in rows],
        "p mean (ours)": [float(r.pvalues.mean()) for r in rows],
        "seeds p ≤ .05 (ours)": [r.n_significant() for r in rows],
        "ω mean (paper run)": [float(r.reported_statistics.mean()) for r in rows],
        "ω sd (paper run)": [float(r.reported_statistics.std()) for r in rows],
        "p mean (paper run)": [float(r.reported_pvalues.mean()) for r in rows],
        "seeds p ≤ .05 (paper run)": [r.n_significant(reported=True) for r in rows],
    })


# --------------------------------------------------------------- appendix
def grid_frame(grid: ChoiceGrid):
    """One row per persona; each choice as "ω (p …) stars"."""
    import pandas as pd

    table = pd.DataFrame({"persona": list(grid.personas)})
    for j, choice in enumerate(grid.choices):
        table[choice] = [f"{s:.4g} (p {format_pvalue(p, grid.settings['n_resamples'])}){significance_stars(p)}"
                         for s, p in zip(grid.statistics[:, j], grid.pvalues[:, j])]
    table["paper"] = NOT_GIVEN
    return table


def grid_agreement(grid: ChoiceGrid, alpha: float = 0.05) -> str:
    """Which choices flag the same personas as the first one."""
    flags = grid.pvalues < alpha
    same = [c for j, c in enumerate(grid.choices) if (flags[:, j] == flags[:, 0]).all()]
    return (f"At p < {alpha:g}, {len(same)} of {len(grid.choices)} choices flag exactly the same personas as "
            f"{grid.choices[0]}: {', '.join(same)}.")


def cost_frame(result: AppendixResult):
    import pandas as pd

    costs = result.costs
    return pd.DataFrame({"embedder": [c.embedder for c in costs], "k": [c.k for c in costs],
                         "arms": [c.arms for c in costs], "tokens": [c.tokens for c in costs],
                         "US$": [c.dollars for c in costs], "paper": NOT_GIVEN})


def _grid_rows(grid: ChoiceGrid) -> list[dict]:
    return [{"table": grid.experiment, "label": f"{p} · {c}", "persona": p, "choice": c,
             "statistic": float(grid.statistics[i, j]), "pvalue": float(grid.pvalues[i, j]),
             "stars": significance_stars(float(grid.pvalues[i, j])), "reported": NOT_GIVEN}
            for i, p in enumerate(grid.personas) for j, c in enumerate(grid.choices)]


# ------------------------------------------------------ records and text
def reproduction_record(result) -> dict:
    """``{"experiment", "rows", "settings", …}``: the JSON of the command line and the page's download."""
    if isinstance(result, PersonaTable):
        rows = [{"label": r.persona, "kind": r.kind, "statistic": r.statistic, "jsd_bits": r.jsd_bits,
                 "pvalue": r.pvalue, "stars": significance_stars(r.pvalue), "n_original": r.test.n_original,
                 "n_perturbed": r.test.n_perturbed, "reported_statistic": r.reported_statistic,
                 "reported_pvalue": r.reported_pvalue, "reported_stars": significance_stars(r.reported_pvalue),
                 "note": r.note} for r in result.rows]
        return {"experiment": "table2", "rows": rows, "settings": result.settings,
                "agreement": persona_agreement(result)}
    if isinstance(result, ROCStudy):
        rows = [{"label": m.label, "model": m.model.key, "auc_mean": m.auc_mean, "auc_sd": m.auc_sd,
                 "aucs": m.aucs.tolist(), "tpr_at_fpr_0.01": m.tpr_at_fpr(0.01),
                 "tpr_at_fpr_0.05": m.tpr_at_fpr(0.05), "target_rejection_rate_0.05": m.target_rejection_rate(0.05),
                 "reported_target_rejection_rate_0.05": m.target_rejection_rate(0.05, reported=True),
                 "reported_auc": NOT_GIVEN} for m in result.models]
        best = {f"best_at_fpr_{f}": result.best_model_at(f) for f in (0.01, 0.05)}
        return {"experiment": "fig1", "rows": rows, "settings": result.settings, **best,
                "best_depends_on_fpr": result.best_depends_on_fpr(), "finding": roc_finding(result)}
    if isinstance(result, AlignmentStudy):
        rows = [{"label": r.label, "model": r.model.key, "statistic_mean": float(r.statistics.mean()),
                 "statistic_sd": float(r.statistics.std()), "pvalue_mean": float(r.pvalues.mean()),
                 "statistics": r.statistics.tolist(), "pvalues": r.pvalues.tolist(),
                 "n_significant": r.n_significant(), "differs": r.differs(),
                 "reported_statistic_mean": float(r.reported_statistics.mean()),
                 "reported_statistic_sd": float(r.reported_statistics.std()),
                 "reported_pvalue_mean": float(r.reported_pvalues.mean()),
                 "reported_differs": r.differs(reported=True)} for r in result.rows]
        return {"experiment": "fig3", "rows": rows, "settings": result.settings, "reading": alignment_reading(result)}
    if isinstance(result, AppendixResult):
        rows = _grid_rows(result.omega) + _grid_rows(result.similarity)
        rows += [{"table": "C.3", "label": f"{c.embedder} · k={c.k}", "embedder": c.embedder, "k": c.k,
                  "arms": c.arms, "tokens": c.tokens, "statistic": c.dollars, "pvalue": None,
                  "reported": NOT_GIVEN} for c in result.costs]
        return {"experiment": "appendix", "rows": rows,
                "settings": {"C.2": result.omega.settings, "C.4": result.similarity.settings,
                             "C.3": "mean tokens of the shipped persona responses × k × arms, assets/pricing.yaml"}}
    if isinstance(result, RUTStudy):
        return rut_study.rut_study_record(result)
    if isinstance(result, StabilityStudy):
        return stability_record(result)
    raise ValueError(f"`result` must be a reproduced experiment; got {type(result).__name__}.")


def summary_lines(result) -> list[str]:
    """The plain-text tables and readings of a reproduced experiment (for the command line)."""
    def render(table):
        return table.to_string(index=False, float_format=lambda v: f"{v:.4g}")

    if isinstance(result, PersonaTable):
        return [render(persona_frame(result, formatted=True)), persona_agreement(result)]
    if isinstance(result, ROCStudy):
        return [render(roc_frame(result)), roc_finding(result)]
    if isinstance(result, AlignmentStudy):
        return [render(alignment_frame(result)), alignment_reading(result)]
    if isinstance(result, AppendixResult):
        return ["C.2 ω choices (persona vs doctor):", render(grid_frame(result.omega)), grid_agreement(result.omega),
                "C.4 similarities (ω = JSD):", render(grid_frame(result.similarity)),
                grid_agreement(result.similarity), "C.3 embedding cost:", render(cost_frame(result))]
    if isinstance(result, RUTStudy):
        return rut_study.summary_lines(result)
    if isinstance(result, StabilityStudy):
        return stability_lines(result)
    raise ValueError(f"`result` must be a reproduced experiment; got {type(result).__name__}.")
