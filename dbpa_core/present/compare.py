"""What ``dbpa compare`` and the "Across many prompts" page show of a compared log.

The per-prompt table sorted by q, one plain sentence per number, and the JSON record (top-level
``pvalue``, ``statistic`` and ``per_prompt``, the settings and the tool's version), all from one
:class:`~dbpa_core.audit.compare.CompareResult`.
"""

from __future__ import annotations

__all__ = ["compare_readings", "compare_record", "compare_table"]


def compare_table(result) -> list[dict]:
    """One row per tested prompt, sorted by q then p (most changed first)."""
    a, b = result.arms
    rows = [{"prompt": p.prompt, "prompt_id": p.prompt_id, "statistic": r.statistic, "effect_size": r.effect_size,
             "pvalue": r.pvalue, "qvalue": r.qvalue, "changed": bool(r.qvalue <= result.test.fdr),
             "k": {a: r.n_original, b: r.n_perturbed}}
            for p, r in zip(result.prompts, result.test.per_prompt)]
    return sorted(rows, key=lambda row: (row["qvalue"], row["pvalue"]))


def compare_readings(result) -> list[str]:
    """Plain sentences: the verdict, what p means, the effect, and where it moved."""
    from .formatting import format_percent, format_pvalue
    from .readings import read_effect
    from ..stats.discrepancy import get_discrepancy

    test, request = result.test, result.request
    a, b = result.arms
    m = test.n_prompts
    label = get_discrepancy(request.discrepancy).label
    shown = format_pvalue(test.pvalue, test.n_resamples, exact=test.exact)
    shown = shown if shown.startswith("≤") else f"= {shown}"
    verdict = (f"Across {m} prompts, the outputs of {b!r} differ from those of {a!r} more than chance explains "
               f"(p {shown}, α = {request.alpha:g}): a change is declared." if result.change else
               f"Across {m} prompts, the outputs of {b!r} are within what chance produces against {a!r} "
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
    floor = 1 / test.n_resamples if test.exact else 1 / (test.n_resamples + 1)
    if floor > request.alpha:
        readings.append(f"No p-value can reach α = {request.alpha:g} here: the smallest possible p is {floor:.3g}"
                        + (" (every joint split was counted: add outputs or prompts)." if test.exact else
                           f"; use B ≥ {int(1 / request.alpha)}."))
    if result.left_out:
        readings.append(f"{len(result.left_out)} prompt(s) left out: fewer than 2 outputs in an arm.")
    return readings


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
