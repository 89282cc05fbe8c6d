"""The Stability page's verdicts: which model is most stable and how sure, in plain words, numbers after.

The ranking is said once for all tasks (:func:`read_ranking_basis`: what
"most stable" and "how sure" mean), then per task only what differs: a plain
verdict (:func:`ranking_verdict`), R in order (:func:`read_ranking_numbers`),
the bootstrap's support (:func:`read_supports`) and whether the order holds
elsewhere (:func:`read_ranking_agreement`), each number with its reading
(issue 45: the paragraph of :func:`~.stability_report.ranking_finding`, said
once per task, read as the same sentence four times).  Computes nothing.
"""

from __future__ import annotations

import numpy as np

from ..paper.stability import PAPER_R, StabilityStudy
from ..stability.tasks import TASK_LABELS
from .formatting import format_share

#: How sure a verdict is said to be, by the share of bootstrap resamples in which the most stable model stays
#: first: at least the first share "firm", at least the second "fairly sure", below it "not sure".  Words for a
#: room, not a test: the share itself is always printed beside them.
SURE, FAIRLY_SURE = 0.95, 0.80


def read_ranking_basis(n_resamples: int) -> str:
    """What every task's verdict means, said once: the ranking's setting and where its sureness comes from."""
    basis = (f"Most stable: the highest R, the cost of the cheapest change that gets {format_share(PAPER_R)} of the answers "
             "wrong (rewording and re-weighting priced alike, θ₁ = θ₂ = 2).")
    if n_resamples == 0:
        return basis + " How sure is not measured: no bootstrap was run (B = 0)."
    return (basis + f" How sure: how often a model keeps its place over {n_resamples:,} random redraws of the items "
                    "(a bootstrap); near 100 %, the order does not hang on a few items.")


def _ranked(study: StabilityStudy, task: str):
    rows = sorted(study.task_rows(task), key=lambda row: -row.headline)
    return rows, np.array([row.headline for row in rows])


def _tied(a: float, b: float) -> bool:
    return bool(a == b or np.isclose(a, b, rtol=1e-6, atol=0))


def _r(value: float) -> str:
    return "∞" if np.isinf(value) else f"{value:.3g}"


def ranking_verdict(study: StabilityStudy, task: str) -> str:
    """The plain verdict of one task, first: the most stable model and how sure (markdown, bold)."""
    label = TASK_LABELS[task]
    rows, values = _ranked(study, task)
    if len(rows) < 2:
        return (f"{label}: only {rows[0].target} was run on these items, and a ranking needs two or more models: "
                "there is nothing to cross or to order. Run other models on the same items to compare.")
    if np.all(values == 0):
        return (f"**{label}: no model is stable here** — each already gets {format_share(PAPER_R)} of the items "
                "wrong with no change at all.")
    top = [row.target for row, value in zip(rows, values) if _tied(value, values[0])]
    if len(top) > 1:
        return f"**{label}: {' and '.join(top)} tie as the most stable.**"
    support, n = rows[0].rank_support, study.settings["n_resamples"]
    if np.isnan(support):  # no bootstrap: the basis above says so, once
        return f"**{label}: {rows[0].target} is the most stable.**"
    share = f"it stays first in {format_share(support)} of {n:,} resamples"
    sure = (f"a firm result: {share}" if support >= SURE else f"fairly sure: {share}" if support >= FAIRLY_SURE
            else f"not sure: {share}")
    return f"**{label}: {rows[0].target} is the most stable** — {sure}."


def read_ranking_numbers(study: StabilityStudy, task: str) -> str:
    """R of each model, most stable first (one sentence; what R is, :func:`read_ranking_basis` says once, what a
    0 or an ∞ is, here); "" with one model."""
    rows, values = _ranked(study, task)
    if len(rows) < 2:
        return ""
    order = f"{rows[0].target} {_r(values[0])}"
    for before, (row, value) in zip(values[:-1], zip(rows[1:], values[1:])):
        order += (" = " if _tied(before, value) else " > ") + f"{row.target} {_r(value)}"
    notes = []
    if np.any(values == 0):
        notes.append(f"0: it already gets {format_share(PAPER_R)} wrong as asked")
    if np.any(np.isinf(values)):
        notes.append("∞: no change found makes it fail that often")
    return f"R, most stable first: {order}" + (f" ({'; '.join(notes)})" if notes else "") + "."


def read_supports(study: StabilityStudy, task: str) -> str:
    """How often each model keeps its place in the bootstrap (one sentence); "" with one model or none run."""
    rows, _ = _ranked(study, task)
    if len(rows) < 2:
        return ""
    n = study.settings["n_resamples"]
    if n == 0:  # the basis says so, once for every task
        return ""
    kept = ", ".join(f"{row.target} {format_share(row.rank_support)}" for row in rows)
    return f"Kept its place: {kept} of {n:,} resamples."


def read_ranking_agreement(study: StabilityStudy, task: str) -> str:
    """Whether the order holds along Figure 1's curves and agrees with Table 1 (one sentence); "" with one model
    (the paper's §3 finding: "evaluation should not rely on one single metric")."""
    if len(study.task_rows(task)) < 2:
        return ""
    crossed = [(pair, where) for curve, where in (("ratio", "as the price of rewording changes"),
                                                  ("risk", "as the error rate r changes"),
                                                  ("ratio_high", "at r = 75 %"))
               for pair in study.crossings(task, curve)]
    against = study.table1_disagreements(task)
    if not crossed and not against:
        return ("The order holds at every setting of Figure 1 and agrees with Table 1: here, unlike the paper, one "
                "order holds everywhere.")
    parts = [f"{a} and {b} swap places {where}" for (a, b), where in crossed]
    for a in dict.fromkeys(a for a, _ in against):  # one clause per model R puts above others Table 1 ranks higher
        others = [b for first, b in against if first == a]
        parts.append(f"R calls {a} more stable than {' and '.join(others)} although Table 1 broke it more often"
                     + (" than either" if len(others) == 2 else " than each" if len(others) > 2 else ""))
    return "As the paper found, no single number ranks these models: " + "; ".join(parts) + "."
