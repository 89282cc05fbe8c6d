"""Tables, findings and the JSON record of the RUT paper's experiments on SmolLM2 (:mod:`dbpa_core.paper.rut`).

Lays out a :class:`~dbpa_core.paper.rut.RUTStudy` (computes nothing), so the
page, the command line and its JSON say the same thing.  The paper's printed
values are the paper's models' and are labelled "paper (printed)".
"""

from __future__ import annotations

import numpy as np

from ..paper.rut import RUTStudy
from ..rut.pool_error import POOL_FINDING
from ..rut.scoring import SCORE_NAMES
from .formatting import format_rut_pvalue
from .rut_readings import read_share_bound

METHOD_NAMES = {"rut": "RUT (Cramér–von Mises)", "mmd": "MMD (Hamming kernel)", "ks": "KS (same ranks)"}
#: A method's name in a table's header or cell ("RUT power AUC", "RUT ≈ KS"); the ids stay in the JSON.
METHOD_SHORT = {"rut": "RUT", "mmd": "MMD", "ks": "KS"}
PRINTED = "paper (printed)"
#: Decimals of a power AUC or an AUROC wherever the page shows one (tables, bar labels, findings): the paper
#: prints three, and one precision per quantity keeps "0.880" from standing beside "0.88" or "0.0514".
AUC_DECIMALS = 3


#: Why the local quantizations are not the paper's: the reference is already 4-bit (issue 42).
REFERENCE_BITS = ("but the comparison is not like for like: here the reference is the packaged SmolLM2 at 4 bits "
                  "(Q4_1), so an '8-bit' substitute re-encodes a 4-bit model almost losslessly, where the paper "
                  "quantizes a 16-bit model to 8 bits.")
#: What "beyond Monte Carlo error" in the findings measures, said where it is claimed.
RUN_ERROR = ("twice its Monte Carlo error, which counts the trials but not that every trial reuses the same pool "
             "of prompts (the next finding counts it)")


def power_auc_frame(study: RUTStudy):
    """One row per substitute (named as the charts name it): kind, power AUC of each method, the winner."""
    import pandas as pd

    rows = []
    for name, curves in study.curves.items():
        rows.append({"substitute": study.arms[name]["label"], "kind": study.arms[name]["kind"],
                     **{f"{METHOD_SHORT[m]} power AUC": curves.power_auc[m] for m in METHOD_NAMES},
                     "± MC error": max(curves.auc_se(m) for m in METHOD_NAMES),
                     "highest": leader_text(study, name, plain=True)})
    frame = pd.DataFrame(rows)
    frame.attrs["decimals"] = AUC_DECIMALS  # read by people_formatters: shown as the bars label them
    return frame


def power_curve_frame(study: RUTStudy):
    """Long table: substitute, q, power of each method, mean lower bound on the substituted share."""
    import pandas as pd

    rows = [{"substitute": name, "q": float(q), **{m: float(c.power[m][k]) for m in METHOD_NAMES},
             "mean share bound": float(c.mean_share_bound[k])}
            for name, c in study.curves.items() for k, q in enumerate(c.q)]
    return pd.DataFrame(rows)


def selection_frame(study: RUTStudy):
    """One row per substitute: the mean AUROC of each score function (0.5 = no signal) and the best one."""
    import pandas as pd

    rows = []
    for name, sel in study.selection.items():
        rows.append({"substitute": study.arms[name]["label"],
                     **{f"AUROC {SCORE_NAMES.get(s, s)}": float(v) for s, v in zip(sel.scores, sel.mean)},
                     "furthest from 0.5": SCORE_NAMES.get(sel.best, sel.best)})
    frame = pd.DataFrame(rows)
    frame.attrs["decimals"] = AUC_DECIMALS
    return frame


def printed_frame(study: RUTStudy):
    """The paper's Table 2a rows as printed (its models, not ours)."""
    import pandas as pd

    def cell(row, method):
        # As printed: the paper's "~0.05" / "~0.00" for the 8-bit rows carry two decimals, not our three.
        value = getattr(row, method)
        return f"~{value:.2f}" if row.approximate else f"{value:.{AUC_DECIMALS}f}"

    return pd.DataFrame([{"model (paper's)": r.model, "substitute": r.substitute,
                          **{f"{METHOD_SHORT[m]} power AUC ({PRINTED})": cell(r, m) for m in METHOD_NAMES}}
                         for r in study.printed])


#: Below this power AUC every method is at α at every q (2α for α = 0.05): nothing detects the substitute.
UNDETECTED_AUC = 0.1


def undetected(study: RUTStudy, name: str) -> bool:
    """Whether every method fails against ``name`` (power AUC < :data:`UNDETECTED_AUC`: power ≈ α at every q)."""
    return max(study.curves[name].power_auc.values()) < UNDETECTED_AUC


def leader_text(study: RUTStudy, name: str, *, plain: bool = False) -> str:
    """The method with the highest power AUC against ``name``, or the methods tied with it: ids for the
    JSON (``"rut ≈ ks"``), or with ``plain`` the names a person reads (``"RUT ≈ KS"``); ``"none"`` where
    every method fails (:func:`undetected`), which no method "leads" (0.051 against 0.049 is α against α)."""
    if undetected(study, name):
        return "none (power ≈ α)" if plain else "none"
    curves, first = study.curves[name], study.winner(name)
    if study.clear_winner(name) is not None:
        tied = [first]
    else:
        tied = [m for m in METHOD_NAMES if m == first or curves.auc_difference(first, m)[0]
                <= 2 * curves.auc_difference(first, m)[1]]
    # No-break spaces in the plain form: the table's narrow "highest" column broke "RUT ≈" / "KS" at 1024 px.
    return "\u00a0≈\u00a0".join(METHOD_SHORT[m] for m in tied) if plain else " ≈ ".join(tied)


def findings(study: RUTStudy) -> list[str]:
    """The results in the paper's terms: what is easy or hard to catch, which method wins where, vs §5.

    A method "leads" only where its power AUC beats each other method's by more than twice the Monte
    Carlo error of the paired difference (:meth:`~dbpa_core.paper.rut.RUTStudy.clear_winner`); closer
    than that it is a tie.
    """
    names = list(study.curves)

    def label(name):  # the chart's and the table's name for a substitute, not its id
        return study.arms[name]["label"]

    rut_auc = {n: study.curves[n].power_auc["rut"] for n in names}
    leaders = {n: study.clear_winner(n) for n in names}
    out = []
    for kind in ("quantization", "jailbreak"):
        of_kind = [n for n in names if study.arms[n]["kind"] == kind]
        if not of_kind:
            continue
        ranked = sorted(of_kind, key=rut_auc.get)
        wins = sum(leaders[n] == "rut" for n in of_kind)
        ties = sum(leaders[n] is None and not undetected(study, n) for n in of_kind)
        missed = sum(undetected(study, n) for n in of_kind)
        out.append(f"{kind.capitalize()}: RUT's power AUC runs from {rut_auc[ranked[0]]:.{AUC_DECIMALS}f} "
                   f"({label(ranked[0])}, hardest) to {rut_auc[ranked[-1]]:.{AUC_DECIMALS}f} ({label(ranked[-1])}, "
                   f"easiest); RUT leads against {wins} of {len(of_kind)}, {ties} tied with another method within "
                   "Monte Carlo error" + (f", {missed} detected by no method" if missed else "") + ".")
    lead = {m: [n for n in names if leaders[n] == m] for m in METHOD_NAMES}
    # Ordinary spaces in a sentence (and the JSON, which carries the findings): no-break ones only in the table
    tied = [f"{label(n)} ({leader_text(study, n, plain=True).replace(chr(0xA0), ' ')})" for n in names
            if leaders[n] is None and not undetected(study, n)]  # those every method fails: the last finding
    parts = [f"{METHOD_NAMES[m]} against {', '.join(label(n) for n in v)}" for m, v in lead.items() if v]
    # The MC error counts trials, not that every trial reuses one pool of prompts: a lead of a few thousandths did
    # not hold across seeds (issue 42), so the sentence claims no more than this run shows.
    out.append(f"Highest power AUC in this run, beyond {RUN_ERROR}: " + ("; ".join(parts) or "none")
               + (f"; ties: {', '.join(tied)}" if tied else "") + ".")
    out.append(POOL_FINDING)  # measured by a prompt bootstrap (dbpa_core.rut.pool_error), not by this run
    below = sum(study.curves[n].power_auc["ks"] < study.curves[n].power_auc["rut"] for n in names)
    out.append(f"KS on the same ranks has a lower power AUC than Cramér–von Mises against {below} of {len(names)} "
               "substitutes (point estimates: where the line above reports a tie, the gap is within Monte Carlo "
               "error).")
    failing = [n for n in names if undetected(study, n)]
    if failing:
        out.append(f"Every method fails (power AUC < 0.1, i.e. power ≈ α at every q) against "
                   f"{', '.join(label(n) for n in failing)}, as every method fails against the paper's 8-bit rows; "
                   f"{REFERENCE_BITS}")
    return out


def recording_line(study: RUTStudy) -> str:
    """What the pools hold: how many of the protocol's prompts were scored, and the audits' n and m that follow."""
    settings = study.settings
    recorded = settings["prompts_recorded"]
    protocol = settings.get("prompts", {}).get("protocol", recorded)
    held = (f"all {recorded} prompts of the protocol" if recorded >= protocol else
            f"{recorded} of the protocol's {protocol} prompts (the recording was cut short; the others are not scored)")
    paper = "the paper's 100" if settings["n_prompts"] < 100 else "as in the paper"
    return (f"The recorded answers cover {held}: each simulated audit uses n = {settings['n_prompts']} prompts "
            f"({paper}) and m = {settings['m']} reference answers per prompt.")


def default_audit_lines(study: RUTStudy) -> list[str]:
    """The default audit: what was served, what the test says, and the share bound beside the true share."""
    audit = study.default_audit
    result = audit.result
    n = result.n_prompts
    return [f"Default audit: {study.arms[audit.substitute]['label']} served each answer with probability "
            f"q = {audit.q:g}; {audit.n_substituted} of {n} answers were substituted.",
            f"RUT: W² = {result.statistic:.3f}, p = {format_rut_pvalue(result.pvalue)}.",
            read_share_bound(result.share_lower_bound, result.confidence_level)]


def rut_study_record(study: RUTStudy) -> dict:
    """The JSON of ``reproduce rut``: per substitute its power curves and AUCs, score selection, the paper's values."""
    substitutes = [{"name": n, "kind": study.arms[n]["kind"], "label": study.arms[n]["label"],
                    "q": c.q.tolist(), "power": {m: c.power[m].tolist() for m in METHOD_NAMES},
                    "power_auc": dict(c.power_auc), "power_auc_se": {m: c.auc_se(m) for m in METHOD_NAMES},
                    "highest_power_auc": leader_text(study, n),
                    "mean_share_bound": c.mean_share_bound.tolist()} for n, c in study.curves.items()]
    selection = {n: {"auroc_mean": dict(zip(s.scores, s.mean.tolist())), "auroc_sd": dict(zip(s.scores, s.sd.tolist())),
                     "best": s.best, "n_prompts": s.n_prompts, "answers_per_prompt": s.n_answers}
                 for n, s in study.selection.items()}
    printed = [{"label": PRINTED, "model": r.model, "substitute": r.substitute,
                "power_auc": {"rut": r.rut, "mmd": r.mmd, "ks": r.ks}, "approximate": r.approximate,
                "source": r.source, "note": "the paper's models, not ours"} for r in study.printed]
    audit = study.default_audit
    default = {"substitute": audit.substitute, "q": audit.q, "n_prompts": audit.result.n_prompts,
               "n_substituted": audit.n_substituted, "statistic": audit.result.statistic,
               "pvalue": audit.result.pvalue, "share_lower_bound": audit.result.share_lower_bound,
               "confidence_level": audit.result.confidence_level,
               "reading": read_share_bound(audit.result.share_lower_bound, audit.result.confidence_level)}
    return {"experiment": "rut", "substitutes": substitutes, "score_selection": selection, "paper_printed": printed,
            "paper_conclusions": list(study.conclusions), "default_audit": default, "findings": findings(study),
            "recording": recording_line(study),
            "settings": _plain(study.settings)}


def summary_lines(study: RUTStudy) -> list[str]:
    """Plain-text tables and findings for the command line."""
    def render(table):
        return table.to_string(index=False, float_format=lambda v: f"{v:.3f}")

    return [recording_line(study), "Power AUC over q ∈ [0, 1] (ours: SmolLM2 and its substitutes, "
            f"{study.settings['n_trials']} audits per q):", render(power_auc_frame(study)),
            f"Table 2a, {PRINTED} — the paper's models, not ours ({study.printed[0].source}):",
            render(printed_frame(study)), "Score selection (Fig 2): mean AUROC, substitute vs reference answers:",
            render(selection_frame(study)), *findings(study), *default_audit_lines(study)]


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
