"""Plain-language readings of a RUT audit (rank uniformity: is this API the claimed model?).

One sentence per number of a :class:`~dbpa_core.rut.uniformity.RankUniformityResult`, shared by the app,
the ``dbpa rut`` command and the reports.
"""

from __future__ import annotations

from ..stats.cvm import RUT_PVALUE_RESOLUTION, cvm_critical_value
from .formatting import format_percent, format_rut_pvalue, p_relation
from .readings import decision


def read_rut_statistic(statistic: float, n: int | None = None) -> str:
    """One sentence that reads the Cramér–von Mises statistic of the RUT's n ranks."""
    # 1/6 is the null mean of W² for every n; its 95 % point is computed for this n (0.461 as n → ∞).
    critical = cvm_critical_value(n) if n else 0.461
    return (f"W² = {statistic:.3f} measures how far the ranks' empirical CDF strays from the diagonal; an honest "
            f"target gives about 0.17 on average and more than {critical:.3f} in only 5 % of audits"
            + (f" of {n} prompts." if n else "."))


def read_rut_pvalue(pvalue: float, n_prompts: int) -> str:
    """One sentence that reads the RUT's p-value."""
    if pvalue < RUT_PVALUE_RESOLUTION:
        return (f"If the target were the claimed model, ranks this far from uniform over {n_prompts} prompts would "
                f"occur in fewer than {format_percent(RUT_PVALUE_RESOLUTION, 1)} of audits (the Cramér–von Mises "
                "approximation cannot say how much fewer).")
    return (f"If the target were the claimed model, ranks at least this far from uniform over {n_prompts} prompts "
            f"would occur in about {format_percent(pvalue, 1)} of audits.")


def read_rut_ks(ks_statistic: float, ks_pvalue: float) -> str:
    """One sentence that reads the Kolmogorov–Smirnov baseline on the same ranks."""
    return (f"Kolmogorov–Smirnov baseline on the same ranks: largest gap D = {ks_statistic:.3f} between their "
            f"empirical CDF and the diagonal, p {p_relation(format_rut_pvalue(ks_pvalue))} (scipy's exact KS "
            "distribution).")


def read_share_bound(bound: float, confidence_level: float = 0.95) -> str:
    """One sentence that reads the RUT's lower confidence bound on the share of substituted answers."""
    level = f"{format_percent(confidence_level)} lower bound"
    if bound <= 0:
        return (f"The ranks are consistent with no substitution at all: the {level} on the share of answers that "
                "did not come from the claimed model is 0 %.")
    return (f"At least {format_percent(bound)} of answers did not come from the claimed model ({level}, valid whatever "
            "model replaced it; the true share can be larger).")


def read_rut_decision(pvalue: float, alpha: float) -> str:
    """One sentence that reads the RUT's decision at level α, with its false-alarm rate."""
    if pvalue <= alpha:
        return (f"p ≤ α = {alpha:g}: the target's answers do not rank like the claimed model's own, so it is "
                f"probably not that model (or not at its settings); an honest API is flagged like this in "
                f"{format_percent(alpha)} of audits, so confirm on fresh prompts before acting.")
    return (f"p > α = {alpha:g}: the target's answers rank like the claimed model's own; no evidence of "
            "substitution at this sample size (which is not proof that it is the claimed model).")


def read_mmd_beside_rut(mmd_pvalue: float, rut_pvalue: float, alpha: float, *, substituted: int | None = None) -> str:
    """The MMD's decision on the same audit beside the RUT's, and, where they differ, what that means.

    ``substituted`` is how many target answers really came from the substitute (known on a recorded audit):
    with none, a test that flags is a false alarm.  A page gave the MMD's p = 0.029 under the RUT's "FAIL TO
    REJECT H₀" on an honest target without a word (trial 7).
    """
    mmd, rut = mmd_pvalue <= alpha, rut_pvalue <= alpha
    if mmd == rut:
        return f"At α = {alpha:g} the MMD agrees with the RUT: it {'flags' if mmd else 'does not flag'} the target."
    flagging, silent = ("the MMD", "the RUT") if mmd else ("the RUT", "the MMD")
    if substituted == 0:
        return (f"At α = {alpha:g} {flagging} flags the target and {silent} does not. None of the answers was "
                f"substituted, so this is a false alarm of {flagging}: any test at α = {alpha:g} flags about "
                f"{format_percent(alpha)} of honest audits.")
    return (f"At α = {alpha:g} {flagging} flags the target and {silent} does not: the two tests see different "
            "things (the RUT ranks each answer's score among the reference's, the MMD compares the answers' "
            "tokens), so either can catch what the other misses; the paper view compares their power.")


def rut_strip(result, alpha: float) -> list[tuple[str, str]]:
    """The headline numbers of a RUT result as (label, value), the decision last; read by :func:`rut_readings`."""
    return [("Prompts", str(result.n_prompts)), ("Reference answers m", str(result.n_reference)),
            ("CvM statistic W²", f"{result.statistic:.3f}"), ("p-value", format_rut_pvalue(result.pvalue)),
            ("Decision", decision(result.pvalue, alpha))]


def rut_readings(result) -> list[str]:
    """The sentences that read a RUT result's numbers (the decision is read by :func:`read_rut_decision`)."""
    return [read_rut_statistic(result.statistic, result.n_prompts), read_rut_pvalue(result.pvalue, result.n_prompts),
            read_rut_ks(result.ks_statistic, result.ks_pvalue),
            read_share_bound(result.share_lower_bound, result.confidence_level)]
