"""Tables, readings and the JSON record of the OT stability study (:mod:`dbpa_core.paper.stability`).

Liu, Li, Cui & Blanchet: Table 1 (share of items a judged rewrite breaks,
queries per success) and Figure 1 (R against θ1/θ2 and against r).  This
module lays the study out and reads it in plain words; it computes nothing.
"""

from __future__ import annotations

import numpy as np

from ..paper.stability import PAPER_R, PAPER_TABLE1, StabilityStudy
from ..stability.tasks import TASK_LABELS


def read_adversarial_fraction(fraction: float, n_held: int) -> str:
    """One sentence for Table 1's "Adversarial %"."""
    if np.isnan(fraction):
        return "The model failed every original item, so there was nothing left for a rewrite to break."
    return (f"Of the {n_held} items the model got right as written, a rewrite that keeps the meaning made it fail "
            f"on {fraction:.0%}.")


def read_mean_queries(queries: float) -> str:
    """One sentence for Table 1's "# Avg. Queries"."""
    if np.isnan(queries):
        return "No rewrite made the model fail, so there is no query count per success."
    return f"Finding each such rewrite took {queries:.2g} questions to the model on average."


def read_stability(value: float, r: float) -> str:
    """One sentence for R(β, r)."""
    if value == 0:
        return f"R = 0: the model already fails at least {r:.0%} of the items without any shift."
    if not np.isfinite(value):
        return f"R = ∞: no shift found here pushes the error rate to {r:.0%}."
    return (f"R = {value:.3g}: the cheapest shift (rewriting and re-weighting items) that pushes the error rate to "
            f"{r:.0%} costs {value:.3g}; larger means more stable.")


def table1_frame(study: StabilityStudy):
    """Table 1 (ours) with the baseline error and R at the headline setting."""
    import pandas as pd

    rows = study.rows
    return pd.DataFrame({
        "task": [TASK_LABELS[r.task] for r in rows], "model": [r.target for r in rows],
        "items": [r.n_items for r in rows], "error rate (original)": [r.baseline_risk for r in rows],
        "Adversarial %": [r.adversarial_fraction for r in rows], "# Avg. Queries": [r.mean_queries for r in rows],
        f"R at r = {PAPER_R:.0%}, θ₁ = θ₂ = 2": [r.headline for r in rows],
        "rank kept in bootstrap": [r.rank_support for r in rows],
    })


def paper_table1_frame():
    """Table 1 as printed in the paper (other models, GPT-4 judge): "paper (printed)"."""
    import pandas as pd

    return pd.DataFrame([{"dataset": task, "model": model, "Adversarial % (paper, printed)": share,
                          "# Avg. Queries (paper, printed)": queries}
                         for task, models in PAPER_TABLE1.items() for model, (share, queries) in models.items()])


def sensitive_frame(study: StabilityStudy, task: str):
    """The most sensitive items of each model at the headline setting, with their winning rewrites."""
    import pandas as pd

    return pd.DataFrame([{"model": r.target, "item": s.prompt, "winning rewrite": s.rewrite, "answer": s.answer,
                          "weight": s.weight, "cost": s.cost}
                         for r in study.task_rows(task) for s in r.sensitive])


def ranking_finding(study: StabilityStudy, task: str) -> str:
    """One paragraph: do the models' curves cross along θ1/θ2 and along r, and does R order them as Table 1
    does? (the paper's §3 finding "evaluation should not rely on one single metric")."""
    label = TASK_LABELS[task]
    headline = study.order(task, "risk", int(np.argmin(np.abs(study.risks - PAPER_R))))
    ratio, risk = study.crossings(task, "ratio"), study.crossings(task, "risk")
    high = study.crossings(task, "ratio_high")
    against = study.table1_disagreements(task)

    def pairs(found):
        return "; ".join(f"{a} and {b}" for a, b in found)

    parts = [f"{label}: at r = {PAPER_R:.0%}, θ₁ = θ₂ = 2, most stable first: {headline}",
             f"curves cross along θ₁/θ₂ for {pairs(ratio)}" if ratio else "no curves cross along θ₁/θ₂",
             f"along r for {pairs(risk)}" if risk else "none cross along r",
             f"along θ₁/θ₂ at r = 75 % for {pairs(high)}" if high else "none along θ₁/θ₂ at r = 75 % either",
             ("R calls " + "; ".join(f"{a} more stable than {b}" for a, b in against) +
              " although Table 1 broke it more often") if against else "R does not contradict Table 1's order"]
    verdict = ("so, as the paper found, no single number ranks these models" if ratio or risk or high or against else
               "so here, unlike the paper, one order holds everywhere")
    return "; ".join(parts) + f": {verdict}."


def _number(value: float):
    """JSON has no inf or NaN: ∞ as "inf", NaN (not defined) as None."""
    value = float(value)
    return value if np.isfinite(value) else ("inf" if value > 0 else "-inf") if np.isinf(value) else None


def stability_record(study: StabilityStudy) -> dict:
    """``{"experiment": "stability", "rows", "settings", …}`` for ``reproduce stability --json``."""
    rows = [{"task": r.task, "model": r.target, "label": f"{r.task} · {r.target}", "n_items": r.n_items,
             "baseline_risk": r.baseline_risk, "adversarial_fraction": _number(r.adversarial_fraction),
             "mean_queries": _number(r.mean_queries), "curve_ratio": [_number(v) for v in r.curve_ratio],
             "curve_risk": [_number(v) for v in r.curve_risk],
             "curve_ratio_r75": [_number(v) for v in r.curve_ratio_high], "R_headline": _number(r.headline),
             "rank_support": r.rank_support, "sensitive": [vars(s) for s in r.sensitive]} for r in study.rows]
    return {"experiment": "stability", "rows": rows,
            "settings": {**study.settings, "ratios": study.ratios.tolist(), "risks": study.risks.tolist()},
            "findings": {task: ranking_finding(study, task) for task in study.tasks},
            "paper_printed": {task: {m: {"adversarial_fraction": a, "mean_queries": q} for m, (a, q) in models.items()}
                              for task, models in PAPER_TABLE1.items()}}


def stability_lines(study: StabilityStudy) -> list[str]:
    """The command line's text: Table 1 (ours), the findings, the paper's printed Table 1."""
    def render(table):
        return table.to_string(index=False, float_format=lambda v: f"{v:.3g}")

    lines = ["Table 1 (ours):", render(table1_frame(study))]
    lines += [ranking_finding(study, task) for task in study.tasks]
    for task in study.tasks:
        lines.append(f"Most sensitive items ({TASK_LABELS[task]}, r = {PAPER_R:.0%}, θ₁ = θ₂ = 2), with the winning "
                     "rewrite and the answer it got:")
        for row in study.task_rows(task):
            for item in row.sensitive[:3]:
                answer = " ".join(item.answer.split())[:80]
                lines.append(f"  {row.target}: {item.prompt!r} → {item.rewrite!r} (cost {item.cost:.3g}): {answer!r}")
    lines += ["Table 1 (paper, printed; other models, GPT-4 judge):", render(paper_table1_frame())]
    return lines
