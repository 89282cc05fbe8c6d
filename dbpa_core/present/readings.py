"""Plain-language readings of a permutation test: its p-value, decision, statistic and effect, a family's outcome.

Every number shown to a user comes with one sentence that reads it; the
sentences live in ``present`` so that the app, the command line and the
reports say the same thing.  This module reads the DBPA test (fixed-k or
sequential) and its families; the RUT's sentences are in
:mod:`~dbpa_core.present.rut_readings`, "What changed"'s in
:mod:`~dbpa_core.present.explanation_readings`, the papers' experiments' in
:mod:`~dbpa_core.present.paper_readings`; number formats in
:mod:`~dbpa_core.present.formatting`.
"""

from __future__ import annotations

import math

from ..stats.corrections import METHOD_NAMES
from ..stats.decision import declares_change
from ..stats.resolution import ALPHA_OVER_M, resampling_floor
from .formatting import (two_digits, at_floor, counted, floor_value, format_number, format_percent,
                         format_pvalue)


def decision(pvalue: float, alpha: float) -> str:
    """``"REJECT H₀"`` when p ≤ α, else ``"FAIL TO REJECT H₀"``."""
    return _verdict(pvalue <= alpha)


def _verdict(rejected: bool) -> str:
    return "REJECT H₀" if rejected else "FAIL TO REJECT H₀"


def read_pvalue(pvalue: float, n_resamples: int, *, exact: bool = False) -> str:
    """One sentence that reads a permutation p-value.

    With ``exact`` the test enumerated every split of the pooled outputs (``n_resamples`` is their number):
    the sentence says so, and that p is then exact, not a share of random re-splits (trial 5: an exact test
    of k = 4 per arm read as "about 20 % of random re-splits of the 70 tried").
    """
    if exact:
        if at_floor(pvalue, n_resamples, exact=True):
            floor = floor_value(n_resamples, exact=True)
            return (f"Of all {n_resamples:,} splits of the pooled outputs, only the observed one gave a discrepancy "
                    f"this large, so p is at its floor 1/N = {floor}: "
                    "the smallest p these outputs can give; only more outputs per arm could show it smaller.")
        share = format_percent(pvalue, 1 if pvalue >= 0.01 else 2)
        return (f"If the perturbation changed nothing, a discrepancy at least this large would turn up in {share} "
                f"of all {n_resamples:,} splits of the pooled outputs (every split was counted: p is exact).")
    if at_floor(pvalue, n_resamples):
        return (f"None of the {n_resamples:,} random re-splits of the pooled outputs gave a discrepancy this large, "
                f"so p is at its floor 1/(B+1) = {floor_value(n_resamples)}; more "
                "re-splits could only show it smaller.")
    share = format_percent(pvalue, 1 if pvalue >= 0.01 else 2)  # "73.0 %": the project's space before %
    return (
        f"If the perturbation changed nothing, a discrepancy at least this large would turn up in about "
        f"{share} of random re-splits of the {n_resamples:,} tried."
    )


def read_unreachable(level: float, n_resamples: int | None, *, exact: bool = False, m: int = 1,
                     method: str = "bonferroni") -> str:
    """The sentence for a level no p-value of the test can reach (its floor 1/(B+1), or 1/N, is above it), else "".

    Read at α (or at α/m, the first step of Bonferroni and Holm over m tests), a floor above the level means the
    test can never reject, whatever the outputs: "no change" would then say nothing (the home page read "the
    difference is within what chance produces" for Earth → Mars at α = 0.001, B = 800, p at its floor 1/801).
    """
    if n_resamples is None:
        return ""
    family = m > 1 and method in ALPHA_OVER_M
    asked = level / m if family else level
    floor = resampling_floor(n_resamples, exact=exact)
    if floor <= asked * (1 + 1e-9):
        return ""
    where = (f"{correction_name(method)} over {m} tests asks p ≤ α/{m} = {two_digits(asked)}" if family
             else f"α = {level:g} asks p ≤ {level:g}")
    if exact:
        return (f"No p of this test can reach the level: {where}, but with every one of its {n_resamples:,} splits "
                f"counted the smallest possible p is 1/N = {floor_value(n_resamples, exact=True)}, so nothing can "
                "be declared at this level whatever the outputs; only more outputs per arm can reach it.")
    needed = math.ceil(1 / asked) - 1
    return (f"No p of this test can reach the level: {where}, but with B = {n_resamples:,} re-splits the smallest "
            f"possible p is 1/(B+1) = {floor_value(n_resamples)}, so nothing can be declared at this level whatever "
            f"the outputs; B ≥ {needed:,} re-splits would reach it.")


def read_decision(pvalue: float, alpha: float, *, n_resamples: int | None = None, exact: bool = False) -> str:
    """One sentence that reads the decision at level α (given ``n_resamples``, one that says when α is out of
    the test's reach: :func:`read_unreachable`)."""
    if pvalue <= alpha:
        return (f"p ≤ α = {alpha:g}: the outputs differ more than chance explains, so the perturbation is "
                "declared to change the output distribution.")
    unreachable = read_unreachable(alpha, n_resamples, exact=exact)
    if unreachable:
        return f"p > α = {alpha:g}, and no change is declared. {unreachable}"
    return (f"p > α = {alpha:g}: the difference is within what chance produces; "
            "no change is declared (which is not proof of no change).")


def read_alone_beside_family(pvalue: float, alpha: float, *, declared_in_family: bool, m: int) -> str:
    """The sentence for one intervention's test that passes α alone but not its family's Bonferroni level (else "").

    A page that shows one intervention's test (p against α) above the family table (p against α/m) showed
    "REJECT H₀" and "FAIL TO REJECT H₀" for the same intervention without a word (trial 7).
    """
    if pvalue <= alpha and not declared_in_family and m > 1:
        return (f"Alone, this intervention's p ≤ α = {alpha:g}. Tested as one of the {m} interventions of the family "
                f"below, Bonferroni asks p ≤ α/{m} = {alpha / m:.2g}, which it does not reach, so the family table "
                "declares no change for it: with several interventions tested, that is the decision to report.")
    return ""


def read_adjusted_decision(pvalue_adjusted: float, alpha: float, method: str, m: int, *,
                           claim: str = "declared to change the output distribution") -> str:
    """One sentence that reads a family member's decision from its *adjusted* p-value (``claim``: what a
    rejection declares, e.g. "declared to answer differently from the reference" for a model)."""
    tests = f"{m} test{'' if m == 1 else 's'}"  # "for 1 tests" (trial 7)
    if pvalue_adjusted <= alpha:
        return (f"After {correction_name(method)} correction for {tests} its adjusted p is "
                f"{format_pvalue(pvalue_adjusted)} ≤ α = {alpha:g}: {claim}.")
    return (f"After {correction_name(method)} correction for {tests} its adjusted p is "
            f"{format_pvalue(pvalue_adjusted)} > "
            f"α = {alpha:g}: no change declared (which is not proof of no change).")


def read_family(n_rejected: int, m: int, alpha: float, method: str, *, noun: str = "perturbation",
                claim: str = "declared to change the output distribution", n_resamples: int | None = None,
                exact: bool = False) -> str:
    """One sentence that reads a family's outcome ("2 of 8 perturbations are <claim> (Holm correction; …)").

    The verb agrees with the count: "1 of 6 perturbations is declared …" (trial 5 read "1 of 6 … are").  Given
    ``n_resamples``, a level out of the tests' reach is said (:func:`read_unreachable`).
    """
    controls = ("the chance of any false alarm among them is kept at or below"
                if not method.startswith("fdr") else "the expected share of false alarms among detections is kept "
                                                        "at or below")
    verb = "is" if n_rejected == 1 else "are"
    unreachable = read_unreachable(alpha, n_resamples, exact=exact, m=m, method=method)
    return (f"{n_rejected} of {counted(m, noun)} {verb} {claim} ({correction_name(method)} correction; {controls} "
            f"α = {alpha:g}).") + (f" {unreachable}" if unreachable else "")


def null_splits(exact: bool) -> str:
    """What the permutation null is made of, in words: every split of the pooled outputs when the test
    enumerated them (``exact``), random re-splits otherwise (trial 5 read an exact test as "at random")."""
    return "every split of the pooled outputs" if exact else "random re-splits of the pooled outputs"


def read_statistic(statistic: float, null_mean: float, label: str, *, exact: bool = False) -> str:
    """One sentence that reads the observed discrepancy against chance (``exact``: the null holds every split
    of the outputs, not random re-splits)."""
    ratio = statistic / null_mean if null_mean > 0 else float("inf")
    if 0.8 <= ratio <= 1.25:
        comparison = "about what chance alone produces"
    elif ratio > 1.25:
        comparison = f"{ratio:.1f}× what chance alone produces" if ratio != float("inf") else "above chance"
    else:
        comparison = "less than what chance alone produces"
    # Three significant digits, as the cards and the chart's T_obs give them: one number, one reading.
    resplit = ("splitting the same outputs in every possible way" if exact else
               "re-splitting the same outputs at random")
    return (f"The observed {label} is {format_number(statistic)}; {resplit} gives "
            f"{format_number(null_mean)} on average, so the perturbation's discrepancy is {comparison}.")


def read_effect(effect_size: float, standardized: float) -> str:
    """One sentence that reads the null-centred effect size."""
    signed = ("+" if effect_size > 0 else "") + format_number(effect_size)  # as the card beside it
    z = round(float(standardized), 1) + 0.0  # + 0.0: a z that rounds to zero reads "+0.0", never "-0.0"
    # A positive z gets a size word (1 to 3 null standard deviations had none): within one of the null's
    # centre is a typical split, three or more beyond almost every split.  A negative z gets none: the
    # observed split is *less* different than chance, which the sentence below says ("moderate" read as a
    # moderate change).
    size = "" if z < 0 else " (large)" if z >= 3 else " (small)" if z < 1 else " (moderate)"
    sentence = (f"Effect size {signed}: the discrepancy beyond chance, {z:+.1f} null standard "
                f"deviations{size}.")
    if effect_size < 0:
        sentence += (" Negative: the observed split is *less* different than a typical split of the pooled "
                     "outputs, which happens by chance when nothing changed.")
    return sentence


def test_decision(result, alpha: float) -> str:
    """:func:`declares_change` in :func:`decision`'s words ("REJECT H₀" / "FAIL TO REJECT H₀")."""
    return _verdict(declares_change(result, alpha))


def read_power_check(curve, planned_k: int, target_power: float) -> str:
    """One sentence on a simulated power curve at the planner's k: met, or missed beyond Monte Carlo error."""
    index = list(curve.sample_sizes).index(planned_k)
    hits = round(curve.power[index] * curve.n_trials)
    low, high = curve.ci_low[index], curve.ci_high[index]
    verdict = ("within Monte Carlo error of" if low <= target_power <= high else
               "above" if low > target_power else "below")
    return (f"At the planned k = {planned_k}, {hits} of {curve.n_trials} simulated audits detected the shift "
            f"(power {format_percent(curve.power[index])}, 95 % interval {format_percent(low)}–"
            f"{format_percent(high)}): {verdict} the {format_percent(target_power)} planned.")


def correction_name(method: str) -> str:
    """The people's name of a correction code (``"fdr_tsbky"`` → two-stage Benjamini–Krieger–Yekutieli (FDR))."""
    return METHOD_NAMES.get(method, method)


def read_centroid_distance(distance: float) -> str:
    """One sentence that reads ‖μ̂₀ − μ̂₁‖, the distance between the arms' mean embeddings."""
    return (f"The average outputs of the two arms are {distance:.3g} apart in embedding space (unit-length "
            "embeddings: 0 means the same average output, 2 opposite ones); the test asks whether chance "
            "alone moves the averages this far apart.")


def read_sequential(result) -> str:
    """One sentence that reads where a sequential test stopped and why.

    ``result`` is a :class:`~dbpa_core.stats.sequential.SequentialResult`.
    """
    n, k_max = result.n_per_arm, result.k_max
    where = f"after {n} of at most {k_max} samples per arm"
    saved = f"{format_percent(1 - n / k_max)} of the sampling budget saved"
    if result.reject and n < k_max:
        return (f"Stopped {where}: the change was clear early (stage-wise p = {format_pvalue(result.pvalue)} "
                f"within the α spent so far), {saved}.")
    if result.reject:
        return (f"Rejected at the last look ({n} of {k_max} samples per arm): the change needed the whole budget "
                f"(stage-wise p = {format_pvalue(result.pvalue)}).")
    if result.stopped == "futility":
        return (f"Stopped {where} for futility: the discrepancy was unremarkable among its re-splits, so no change "
                f"is declared and no p-value below 1 is claimed; {saved}.")
    return (f"Ran to the maximum of {k_max} samples per arm without crossing the boundary: no change is declared "
            f"(stage-wise p = {format_pvalue(result.pvalue)}; not proof of no change).")


def read_test(result) -> str:
    """The sentence that reads a test's p-value, fixed-k (:func:`read_pvalue`) or sequential
    (:func:`read_sequential`)."""
    if result.kind == "sequential":
        return read_sequential(result)
    return read_pvalue(result.pvalue, result.n_resamples, exact=result.exact)
