"""Tables, readings and the JSON record of the OT stability study (:mod:`dbpa_core.paper.stability`).

Liu, Li, Cui & Blanchet: Table 1 (share of items a judged rewrite breaks,
queries per success) and Figure 1 (R against θ1/θ2 and against r).  This
module lays the study out and reads it in plain words; it computes nothing.
"""

from __future__ import annotations

import numpy as np

from ..paper.stability import HIGH_R, PAPER_DATASET, PAPER_R, PAPER_TABLE1, StabilityStudy, target_label
from ..stability.tasks import TASK_LABELS
from .formatting import counted, format_share


def read_adversarial_fraction(fraction: float, n_held: int) -> str:
    """One sentence for Table 1's "Adversarial %"."""
    if np.isnan(fraction):
        return "The model failed every original item, so there was nothing left for a rewrite to break."
    return (f"Of the {counted(n_held, 'item')} the model got right as written, a rewrite that keeps the meaning made "
            f"it fail on {format_share(fraction)}.")


def read_mean_queries(queries: float) -> str:
    """One sentence for Table 1's "# Avg. Queries"."""
    if np.isnan(queries):
        return "No rewrite made the model fail, so there is no query count per success."
    return (f"Finding each such rewrite took {queries:.2g} question{'' if queries == 1 else 's'} to the model on "
            "average.")


def read_stability(value: float, r: float) -> str:
    """One sentence for R(β, r)."""
    if value == 0:
        return f"R = 0: the model already fails at least {format_share(r)} of the items without any shift."
    if not np.isfinite(value):
        return f"R = ∞: no shift found here pushes the error rate to {format_share(r)}."
    return (f"R = {value:.3g}: the cheapest shift (rewriting and re-weighting items) that pushes the error rate to "
            f"{format_share(r)} costs {value:.3g}; larger means more stable.")


def read_rank_support(target: str, support: float, n_resamples: int) -> str:
    """One sentence for a model's bootstrap rank support."""
    if n_resamples == 0:
        return f"{target}: no bootstrap was run, so how firmly it holds its place is not measured."
    return (f"{target} keeps its place in the order at r = {format_share(PAPER_R)}, θ₁ = θ₂ = 2 in "
            f"{format_share(support)} of "
            f"{n_resamples:,} resamples of the items (the closer to 100 %, the less the order hangs on a few items).")


def read_table1_row(row) -> str:
    """Table 1's three numbers of one model in plain words."""
    held = int(round(row.n_items * (1 - row.baseline_risk)))
    return (f"{row.target}: fails {format_share(row.baseline_risk)} of the {counted(row.n_items, 'item')} as written. "
            f"{read_adversarial_fraction(row.adversarial_fraction, held)} {read_mean_queries(row.mean_queries)} "
            f"{read_stability(row.headline, PAPER_R)}")


def _order_text(study: StabilityStudy, task: str, curve: str, point: int) -> str:
    values = study.curves(task, curve)[:, point]
    if np.all(values == 0):
        return "R = 0 for every model (each already fails that often as asked)"
    return study.order(task, curve, point)


def _r_text(value: float) -> str:
    """R as Table 1's sentences write it: "∞" where no shift found reaches r, else three significant digits."""
    return "∞" if np.isinf(value) else f"{value:.3g}"


def _read_one_curve(study: StabilityStudy, task: str, curve: str) -> str:
    """Figure 1's reading with one model: its own curve in numbers; an order needs two or more models."""
    (row,) = study.task_rows(task)
    values = study.curves(task, curve)[0]
    alone = "one model only, so there is no order to read (a ranking needs two or more models)"
    if curve == "risk":
        top = len(study.risks) - 2  # the last r below 100 %
        at_top = f"at r = {format_share(study.risks[top])} R = {_r_text(values[top])}"
        if values[top] == 0:  # the model already fails that share as written: nothing to pay, the curve stays at 0
            return (f"R is 0 at every r up to {format_share(study.risks[top])}: {row.target} already gets "
                    f"{format_share(row.baseline_risk)} of the items wrong as written, so no shift is needed; "
                    f"{alone}.")
        if np.isinf(values[top]):
            return (f"R is 0 up to {row.target}'s own error rate ({format_share(row.baseline_risk)}); {at_top}: no "
                    f"shift found here pushes the error rate that high; {alone}.")
        return (f"R is 0 up to {row.target}'s own error rate ({format_share(row.baseline_risk)}) and then rises: a "
                f"shift must pay to push the error rate above what the model already gets wrong; {at_top}; {alone}.")
    r = HIGH_R if curve == "ratio_high" else PAPER_R
    return (f"At r = {format_share(r)}: R = {_r_text(values[0])} where rewriting is cheap (θ₁/θ₂ = "
            f"{study.ratios[0]:g}), {_r_text(values[-1])} where re-weighting is cheap (θ₁/θ₂ = "
            f"{study.ratios[-1]:g}); {alone}.")


def read_high_r_note(study: StabilityStudy, task: str) -> str:
    """What the extra θ curve at r = HIGH_R is: above the models' own error rates only where it is (a model that
    already fails 100 % of a live run's items as written is not below 75 %)."""
    rows = study.task_rows(task)
    above = [r.target for r in rows if r.baseline_risk >= HIGH_R]
    where = ("above the models' own error rates" if not above else
             f"which {', '.join(above)} already fail{'s' if len(above) == 1 else ''} as written (R = 0 there)")
    return f"Not in the paper: the θ curve again at r = {format_share(HIGH_R)}, {where}."


def read_figure(study: StabilityStudy, task: str, curve: str, *, order_said: bool = False) -> str:
    """One sentence per Figure 1 chart: the order where each price is low, and whether the curves cross.

    ``order_said``: the headline order (r = 50 %, θ1 = θ2 = 2) is on the screen already (the page's verdict);
    a chart whose curves do not cross and whose ends keep that order says so instead of spelling it again.
    """
    rows = study.task_rows(task)
    if len(rows) == 1:
        return _read_one_curve(study, task, curve)
    crossed = study.crossings(task, curve)
    if order_said and not crossed:
        said = _said_again(study, task, curve)
        if said:
            return said
    cross = ("the curves of " + "; ".join(f"{a} and {b}" for a, b in crossed) + " cross, so the order depends on "
             "the setting") if crossed else "no curves cross, so one order holds along the whole curve"
    if curve == "risk":
        own = ", ".join(f"{r.target} {format_share(r.baseline_risk)}" for r in rows)
        top = len(study.risks) - 2  # the last r below 100 %
        return (f"R is 0 up to each model's own error rate ({own}) and then rises: a shift must pay to push the "
                f"error rate above what the model already gets wrong; at r = {format_share(study.risks[top])} most "
                f"stable first: {_order_text(study, task, curve, top)}; {cross}.")
    r = HIGH_R if curve == "ratio_high" else PAPER_R
    return (f"At r = {format_share(r)}: where rewriting is cheap (θ₁/θ₂ = {study.ratios[0]:g}) most stable first: "
            f"{_order_text(study, task, curve, 0)}; where re-weighting is cheap (θ₁/θ₂ = {study.ratios[-1]:g}): "
            f"{_order_text(study, task, curve, -1)}; {cross}.")


def _said_again(study: StabilityStudy, task: str, curve: str) -> str:
    """:func:`read_figure`'s short sentence where the chart keeps the headline order at both ends; "" if not."""
    headline = study.order(task, "risk", int(np.argmin(np.abs(study.risks - PAPER_R))))
    if curve == "risk":
        top = len(study.risks) - 2
        if _order_text(study, task, curve, top) != headline:
            return ""
        own = ", ".join(f"{r.target} {format_share(r.baseline_risk)}" for r in study.task_rows(task))
        return (f"R is 0 up to each model's own error rate ({own}) and then rises: a shift must pay to push the "
                "error rate above what the model already gets wrong; no curves cross, so the order above holds at "
                "every r.")
    if any(_order_text(study, task, curve, point) != headline for point in (0, -1)):
        return ""
    r = HIGH_R if curve == "ratio_high" else PAPER_R
    return (f"At r = {format_share(r)} the order above holds from cheap rewriting (θ₁/θ₂ = {study.ratios[0]:g}) to "
            f"cheap re-weighting (θ₁/θ₂ = {study.ratios[-1]:g}): no curves cross.")


def read_sensitive(study: StabilityStudy, task: str) -> str:
    """One sentence for the most sensitive items table."""
    if not any(r.sensitive for r in study.task_rows(task)):
        return ("No rewrite enters the cheapest shift for any model here: it only re-weights the items the model "
                "already fails as written, so there is no winning rewrite to show.")
    return (f"The items the cheapest shift to r = {format_share(PAPER_R)} (θ₁ = θ₂ = 2) up-weights most, each asked "
            "in the rewrite it picks (cost by eq. (1): a small cost is a near-copy of the question) and the answer "
            "that rewrite got.")


#: Table 1's (ours) share columns: named "%" and holding percentages (50.0), as the screen shows them ("50 %");
#: a CSV once said "Adversarial %" above 0.5 while the screen read 50 %.
TABLE1_SHARES = ("error rate as written (%)", "Adversarial %", "rank kept in bootstrap (%)")
TABLE1_QUERIES = "# Avg. Queries"
#: What a "—" in Table 1 (ours) stands for: a number that is not defined, never a missing one.
NOT_DEFINED = "—"


def table1_frame(study: StabilityStudy, task: str | None = None):
    """Table 1 (ours) with the baseline error and R at the headline setting (one task, or all).

    The shares are percentages (0-100) under column names that say "%"; a
    number that is not defined (no rewrite broke the model: no queries per
    success; every item failed as written: no Adversarial %) is NaN, an empty
    CSV cell, shown as "—" by :func:`table1_shown` with :func:`read_table1_gaps`.
    """
    import pandas as pd

    rows = study.rows if task is None else study.task_rows(task)
    return pd.DataFrame({
        "task": [TASK_LABELS[r.task] for r in rows], "model": [r.target for r in rows],
        "items": [r.n_items for r in rows], TABLE1_SHARES[0]: [100 * r.baseline_risk for r in rows],
        TABLE1_SHARES[1]: [100 * r.adversarial_fraction for r in rows],
        TABLE1_QUERIES: [r.mean_queries for r in rows],
        f"R at r = {format_share(PAPER_R)}, θ₁ = θ₂ = 2": [r.headline for r in rows],
        TABLE1_SHARES[2]: [100 * r.rank_support for r in rows],
    })


def table1_formatters() -> dict:
    """How the screen writes each number column of :func:`table1_frame`: whole percentages ("50 %", "<1 %")
    and queries to two decimals.  The grid formats the numbers it keeps (so a click on a column header sorts
    by number, not as text: "100 %" after "9 %"); NaN, a number that is not defined, reads :data:`NOT_DEFINED`."""
    formatters = {column: (lambda v: format_share(v / 100)) for column in TABLE1_SHARES}
    return {**formatters, TABLE1_QUERIES: (lambda v: f"{v:.2f}")}


def table1_shown(table):
    """Table 1 (ours) as the screen writes it, from the frame the CSV is written from (:func:`table1_frame`),
    as text: :func:`table1_formatters`, and "—" where a number is not defined (never "None")."""
    shown = table.copy()
    for column, write in table1_formatters().items():
        shown[column] = [NOT_DEFINED if np.isnan(v) else write(v) for v in table[column]]
    return shown


def read_table1_gaps(table) -> str:
    """The footnote of Table 1 (ours): why a cell reads "—"; "" when none does."""
    notes = []
    if table[TABLE1_SHARES[1]].isna().any():
        notes.append(f"{NOT_DEFINED} under Adversarial %: the model failed every item as written, so there was "
                     "nothing left for a rewrite to break.")
    if table[TABLE1_QUERIES].isna().any():
        notes.append(f"{NOT_DEFINED} under # Avg. Queries: no rewrite made the model fail, so there is no count of "
                     "queries per success (the paper's average is over successful rewrites only).")
    return " ".join(notes)


#: The paper's datasets as it names them (Table 1: "the Jailbreak and Alpaca dataset").
PAPER_DATASET_NAMES = {"alpaca": "Alpaca", "jailbreak": "Jailbreak"}


def paper_table1_frame(task: str | None = None):
    """Table 1 as printed in the paper (other models, GPT-4 judge): "paper (printed)".

    ``task``: only the paper's dataset that our task stands in for (:data:`PAPER_DATASET`).
    """
    import pandas as pd

    datasets = PAPER_TABLE1 if task is None else {PAPER_DATASET[task]: PAPER_TABLE1[PAPER_DATASET[task]]}
    return pd.DataFrame([{"dataset": PAPER_DATASET_NAMES[dataset], "model": model,
                          "Adversarial % (paper, printed)": share,
                          "# Avg. Queries (paper, printed)": queries}
                         for dataset, models in datasets.items() for model, (share, queries) in models.items()])


def sensitive_frame(study: StabilityStudy, task: str):
    """The most sensitive items of each model at the headline setting, with their winning rewrites."""
    import pandas as pd

    return pd.DataFrame([{"model": r.target, "item": s.prompt, "winning rewrite": s.rewrite, "answer": s.answer,
                          "weight": s.weight, "cost": s.cost}
                         for r in study.task_rows(task) for s in r.sensitive])


#: A search tree node's status in plain words (:class:`~dbpa_core.stability.search.Node`).
NODE_STATUS = {"original": "the item as written", "queried": "kept by the judge, answered",
               "rejected": "judge: meaning changed (cost ∞)", "malformed": "not a usable rewrite",
               "duplicate": "proposed before"}


def _graded(search) -> list:
    """Each node's loss by the current grader (as :func:`~dbpa_core.stability.runs.stability_run` grades the
    shipped answers again), None where nothing was answered."""
    return [None if n.answer is None else search.item.loss(n.answer) for n in search.nodes]


def search_frame(search):
    """One recorded search's tree, a row per prompt: what the assistant proposed, the judge's verdict, the answer.

    ``node`` reads "#3 ← #0, round 1": prompt 3, a rewrite of prompt 0 proposed in the first round.

    ``search`` is a :class:`~dbpa_core.stability.search.Search`.
    """
    import pandas as pd

    return pd.DataFrame([{"node": f"#{i}" if n.parent < 0 else f"#{i} ← #{n.parent}, round {n.round}",
                          "prompt": n.text, "verdict": NODE_STATUS[n.status],
                          "similarity": n.similarity if n.status in ("original", "queried", "rejected") else None,
                          "answer": n.answer or "", "fails": None if loss is None else bool(loss)}
                         for i, (n, loss) in enumerate(zip(search.nodes, _graded(search)))])


def read_search(search) -> str:
    """One sentence for one recorded search: how it went and what it cost in queries."""
    losses = _graded(search)
    if losses[0] == 1:
        return f"{target_label(search.target)} fails this item as written, so no rewrite can add to its error rate."
    proposed = sum(n.status != "original" for n in search.nodes)
    answered = [loss for n, loss in zip(search.nodes, losses) if n.status == "queried"]
    outcome = (f"the {_ordinal(answered.index(1) + 1)} answered rewrite made it fail" if 1 in answered else
               "none made it fail: the item held")
    return (f"{target_label(search.target)} gets this item right as written; the assistant proposed "
            f"{counted(proposed, 'rewrite')}, the judge kept {len(answered)} and the target answered them: "
            f"{outcome}.")


def _ordinal(n: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(n, f"{n}th")


def ranking_finding(study: StabilityStudy, task: str) -> str:
    """One paragraph: do the models' curves cross along θ1/θ2 and along r, and does R order them as Table 1
    does? (the paper's §3 finding "evaluation should not rely on one single metric")."""
    label = TASK_LABELS[task]
    if len(study.task_rows(task)) < 2:
        return (f"{label}: only {study.task_rows(task)[0].target} was run on these items, and a ranking needs two or "
                "more models: there is nothing to cross or to order. Run other models on the same items to compare.")
    headline = study.order(task, "risk", int(np.argmin(np.abs(study.risks - PAPER_R))))
    ratio, risk = study.crossings(task, "ratio"), study.crossings(task, "risk")
    high = study.crossings(task, "ratio_high")
    against = study.table1_disagreements(task)

    def pairs(found):
        return "; ".join(f"{a} and {b}" for a, b in found)

    parts = [f"{label}: at r = {format_share(PAPER_R)}, θ₁ = θ₂ = 2, most stable first: {headline}",
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


def stability_record(study: StabilityStudy, *, inputs: dict | None = None) -> dict:
    """``{"experiment": "stability", "rows", "settings", …}`` for ``reproduce stability --json``.

    ``inputs``: what a live run was asked (the items, K, rounds, the models, the judge, the system prompt…),
    recorded under ``"inputs"`` so that the file says which run it is.
    """
    rows = [{"task": r.task, "model": r.target, "label": f"{r.task} · {r.target}", "n_items": r.n_items,
             "baseline_risk": r.baseline_risk, "adversarial_fraction": _number(r.adversarial_fraction),
             "mean_queries": _number(r.mean_queries), "curve_ratio": [_number(v) for v in r.curve_ratio],
             "curve_risk": [_number(v) for v in r.curve_risk],
             "curve_ratio_r75": [_number(v) for v in r.curve_ratio_high], "R_headline": _number(r.headline),
             "rank_support": _number(r.rank_support), "sensitive": [vars(s) for s in r.sensitive]} for r in study.rows]
    return {"experiment": "stability", "rows": rows,
            "settings": {**study.settings, "ratios": study.ratios.tolist(), "risks": study.risks.tolist()},
            "findings": {task: ranking_finding(study, task) for task in study.tasks},
            "paper_printed": {task: {m: {"adversarial_fraction": a, "mean_queries": q} for m, (a, q) in models.items()}
                              for task, models in PAPER_TABLE1.items()},
            **({"inputs": dict(inputs)} if inputs is not None else {})}


def stability_lines(study: StabilityStudy) -> list[str]:
    """The command line's text: Table 1 (ours), the findings, the paper's printed Table 1."""
    def render(table):
        return table.to_string(index=False, float_format=lambda v: f"{v:.3g}")

    lines = ["Table 1 (ours):", render(table1_frame(study))]
    lines += [ranking_finding(study, task) for task in study.tasks]
    for task in study.tasks:
        lines.append(f"Most sensitive items ({TASK_LABELS[task]}, r = {format_share(PAPER_R)}, θ₁ = θ₂ = 2), with the "
                     "winning rewrite and the answer it got:")
        for row in study.task_rows(task):
            for item in row.sensitive[:3]:
                answer = " ".join(item.answer.split())[:80]
                lines.append(f"  {row.target}: {item.prompt!r} → {item.rewrite!r} (cost {item.cost:.3g}): {answer!r}")
    lines += ["Table 1 (paper, printed; other models, GPT-4 judge):", render(paper_table1_frame())]
    return lines
