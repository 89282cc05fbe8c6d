"""Plain-language readings and table formatting of results.

Every number shown to a user comes with one sentence that reads it; the
sentences live here so that the app, the command line and the reports say
the same thing.
"""

from __future__ import annotations

import math

from .._validation import check_probability

#: (upper bound, stars) as in the paper's tables: * p < 0.05, ** p < 0.01, *** p < 0.001.
STAR_LEVELS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))


def significance_stars(pvalue: float) -> str:
    """Stars for a p-value: ``"***"`` < 0.001 ≤ ``"**"`` < 0.01 ≤ ``"*"`` < 0.05 ≤ ``""``.

    Examples
    --------
    >>> [significance_stars(p) for p in (0.0004, 0.004, 0.04, 0.4)]
    ['***', '**', '*', '']
    """
    pvalue = check_probability(pvalue, "pvalue", open_low=False, open_high=False)
    for bound, stars in STAR_LEVELS:
        if pvalue < bound:
            return stars
    return ""


def pvalue_floor(n_resamples: int, *, exact: bool = False) -> float:
    """The smallest p-value a permutation test with ``n_resamples`` re-splits can report.

    With B random re-splits, p = (1 + #{T_b ≥ T_obs}) / (1 + B) (Algorithm 1 with
    Phipson & Smyth's +1) is never below 1/(B + 1); with exact enumeration of
    all N splits (the observed one among them) it is never below 1/N.
    """
    n_resamples = int(n_resamples)
    return 1.0 / n_resamples if exact else 1.0 / (n_resamples + 1)


def at_floor(pvalue: float, n_resamples: int | None, *, exact: bool = False) -> bool:
    """Whether ``pvalue`` is the smallest value its permutation test can give (no re-split as extreme)."""
    return n_resamples is not None and pvalue <= pvalue_floor(n_resamples, exact=exact) * (1 + 1e-9)


def _round_up(value: float, digits: int = 2) -> float:
    """``value`` rounded *up* to ``digits`` significant digits (0.0142857 → 0.015; 0.000999 → 0.001)."""
    scale = 10.0 ** (math.floor(math.log10(value)) - digits + 1)
    return math.ceil(value / scale - 1e-9) * scale


def _two_digits(value: float) -> str:
    """A small positive number to two significant digits, as a p-value card writes it ("0.0012", "1 × 10⁻⁴")."""
    from .formatting import format_number

    return f"{value:.2g}" if value >= 1e-4 else format_number(value, 2)


def floor_value(n_resamples: int, *, exact: bool = False) -> str:
    """The floor itself, to three significant digits, for a sentence that says "1/(B+1) = …" (an equality:
    rounded to nearest, unlike the bound of :func:`format_pvalue`).  Three, not the bound's two: with two,
    1/801 read "= 0.0012" beside the table's "≤ 0.0013" (trial 7); "= 0.00125" reads as the number under
    both."""
    return f"{pvalue_floor(n_resamples, exact=exact):.3g}"


def format_pvalue(pvalue: float, n_resamples: int | None = None, *, exact: bool = False) -> str:
    """A p-value for display: three decimals, two significant digits below 0.01, short enough for a card.

    Given ``n_resamples``, a p-value at its floor reads ``"≤ 0.001"`` (B = 999 or 1000): the test cannot
    say how much smaller the true p is, only that no re-split was as extreme as the observed one;
    :func:`pvalue_floor_note` names the floor (1/(B+1), or 1/N for exact enumeration) beside it.
    """
    if at_floor(pvalue, n_resamples, exact=exact):
        # A bound rounds up: the floor 1/70 = 0.0143 reads "≤ 0.015", never "≤ 0.014", which p is not.
        return f"≤ {_two_digits(_round_up(pvalue_floor(n_resamples, exact=exact)))}"
    return f"{pvalue:.3f}" if pvalue >= 0.01 else _two_digits(pvalue)


def pvalue_floor_note(pvalue: float, n_resamples: int | None, *, exact: bool = False) -> str:
    """``"floor 1/(B+1)"`` (``"floor 1/N"``) when ``pvalue`` is at its floor, else ``""``: the words that say
    why a p-value is written ``≤ …``."""
    if not at_floor(pvalue, n_resamples, exact=exact):
        return ""
    return f"floor {'1/N' if exact else '1/(B+1)'}"


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
    from ..stats.permutation import ALPHA_OVER_M

    family = m > 1 and method in ALPHA_OVER_M
    asked = level / m if family else level
    floor = pvalue_floor(n_resamples, exact=exact)
    if floor <= asked * (1 + 1e-9):
        return ""
    where = (f"{correction_name(method)} over {m} tests asks p ≤ α/{m} = {_two_digits(asked)}" if family
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
    from .formatting import counted

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
    from .formatting import format_number

    # Three significant digits, as the cards and the chart's T_obs give them: one number, one reading.
    resplit = ("splitting the same outputs in every possible way" if exact else
               "re-splitting the same outputs at random")
    return (f"The observed {label} is {format_number(statistic)}; {resplit} gives "
            f"{format_number(null_mean)} on average, so the perturbation's discrepancy is {comparison}.")


def read_effect(effect_size: float, standardized: float) -> str:
    """One sentence that reads the null-centred effect size."""
    from .formatting import format_number

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


def result_to_dict(result, **context) -> dict:
    """A JSON-ready record of a :class:`~dbpa_core.stats.permutation.DBPAResult` and its context."""
    import numpy as np

    record = {
        "statistic": result.statistic, "pvalue": result.pvalue, "effect_size": result.effect_size,
        "standardized_effect": result.standardized_effect, "n_original": result.n_original,
        "n_perturbed": result.n_perturbed, "n_resamples": result.n_resamples, "exact": result.exact,
        "similarity": result.similarity, "discrepancy": result.discrepancy, "alternative": result.alternative,
        "warnings": list(result.warnings), "stars": significance_stars(result.pvalue),
        "null_distribution": np.asarray(result.null_distribution).tolist(),
    }
    if result.kind == "sequential":
        # A sequential test decides by its boundary (its stage-wise p against the α spent so far): the record
        # says so and carries the plan and the looks, which a fixed-k record has no place for (trial 7).
        record.update({
            "design": "sequential", "pvalue_kind": "stage-wise ordering p-value at the stop",
            "reject": bool(result.reject), "stopped": result.stopped, "n_per_arm": result.n_per_arm,
            "k_max": result.k_max, "batch_size": result.batch_size, "spending": result.spending,
            "futility": result.futility, "alpha_spent_over_looks": result.alpha,
            "looks": [{"n_per_arm": look.n_per_arm, "statistic": look.statistic,
                       "boundary": None if np.isinf(look.boundary) else look.boundary, "pvalue": look.pvalue,
                       "alpha_spent": look.alpha_spent} for look in result.looks],
            "reading": read_sequential(result)})
    record.update(context)
    return record


def declares_change(result, alpha: float) -> bool:
    """Whether ``result`` declares a change: p ≤ α for a fixed-k test; a sequential test by its own boundary
    at the stop (``reject``: its stage-wise p against the α spent, not p against ``alpha``)."""
    return bool(result.reject) if result.kind == "sequential" else result.pvalue <= alpha


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


def read_persona_grid(grid, alpha: float = 0.05, *, synthetic=()) -> list[str]:
    """One sentence per model of a persona grid: how many medical (control) and other (target) personas moved
    its answers at p < ``alpha``, unadjusted as in the paper's Table 2, and which.

    ``synthetic`` names the simulated models: their text is made up, so it is not compared with what the
    paper found for real models, and a target they move by construction that the test missed is said to be
    missed (a trial read "as the paper found for large models" under a simulated model with 0 of 4 targets).
    """
    sentences = []
    for column, model in enumerate(grid.models):
        moved = grid.pvalues[:, column] < alpha
        parts, named = [], {}
        for kind, words in (("control", "medical (control)"), ("target", "other (target)")):
            rows = [i for i, k in enumerate(grid.kinds) if k == kind]
            named[kind] = [grid.personas[i] for i in rows if moved[i]]
            if rows:
                parts.append(f"{len(named[kind])} of the {len(rows)} {words} personas"
                             + (f" ({', '.join(named[kind])})" if named[kind] else ""))
        head = f"{model}: {' and '.join(parts)} moved the answers at p < {alpha:g} (unadjusted). "
        if model in synthetic:
            targets = sum(1 for kind in grid.kinds if kind == "target")
            missed = targets - len(named["target"])
            sentences.append(head + "Synthetic text: its target personas change the answers by construction"
                             + (f", and the test missed {missed} of {targets} at this k (a small k shows only large "
                                "moves)." if missed else ", and the test found them all."))
            continue
        sentences.append(head
                         + ("The paper found large models unmoved by a medical role and small ones variable: this "
                            "model's answers moved with a medical role too."
                            if named["control"] else
                            "No medical role was shown to move its answers (which is not proof that none did: "
                            "a small k shows only large moves), as the paper found for large models."))
    return sentences


def correction_name(method: str) -> str:
    """The people's name of a correction code (``"fdr_tsbky"`` → two-stage Benjamini–Krieger–Yekutieli (FDR))."""
    from ..stats.corrections import METHOD_NAMES

    return METHOD_NAMES.get(method, method)


def family_table(labels, kinds, statistics, pvalues, adjusted, *, true_effects=None):
    """The many-perturbations table as a pandas DataFrame (one row per perturbation)."""
    import pandas as pd

    table = pd.DataFrame({
        "perturbation": list(labels),
        "kind": list(kinds),
        "ω": list(statistics),
        "p": list(pvalues),
        f"p adjusted ({correction_name(adjusted.method)})": list(adjusted.pvalues_adjusted),
        "stars": [significance_stars(p) for p in adjusted.pvalues_adjusted],
        "decision": [decision(p, adjusted.alpha) for p in adjusted.pvalues_adjusted],
    })
    if true_effects is not None:
        table.insert(2, "true effect (simulated)", list(true_effects))
    return table


def read_centroid_distance(distance: float) -> str:
    """One sentence that reads ‖μ̂₀ − μ̂₁‖, the distance between the arms' mean embeddings."""
    return (f"The average outputs of the two arms are {distance:.3g} apart in embedding space (unit-length "
            "embeddings: 0 means the same average output, 2 opposite ones); the test asks whether chance "
            "alone moves the averages this far apart.")


#: Below this, a RUT p-value is reported as a bound only.  scipy computes the Cramér–von Mises
#: p-value as 1 − F_n(T) with Csörgő & Faraway's (1996) finite-n approximation of the null: against
#: 2·10⁶ simulated uniform samples (n = 4 … 50) it is within 20 % of the truth down to p ≈ 0.001, but
#: further out it loses accuracy (14× too small at p ≈ 4·10⁻⁵, n = 8) and is clipped to exactly 0.
RUT_PVALUE_RESOLUTION = 0.001


def format_percent(share: float, decimals: int = 0) -> str:
    """A share as a percentage with the project's space before the sign (``"16.1 %"``, as :func:`format_share`).

    Examples
    --------
    >>> format_percent(0.161, 1), format_percent(0.05), format_percent(0.001, 1)
    ('16.1 %', '5 %', '0.1 %')
    """
    return f"{share * 100:.{decimals}f} %"


def format_rut_pvalue(pvalue: float) -> str:
    """A RUT p-value for display: ``"< 0.001"`` below :data:`RUT_PVALUE_RESOLUTION`, never ``"0"``."""
    return f"< {RUT_PVALUE_RESOLUTION:g}" if pvalue < RUT_PVALUE_RESOLUTION else format_pvalue(pvalue)


def read_rut_pvalue(pvalue: float, n_prompts: int) -> str:
    """One sentence that reads the RUT's p-value."""
    if pvalue < RUT_PVALUE_RESOLUTION:
        return (f"If the target were the claimed model, ranks this far from uniform over {n_prompts} prompts would "
                f"occur in fewer than {format_percent(RUT_PVALUE_RESOLUTION, 1)} of audits (the Cramér–von Mises "
                "approximation cannot say how much fewer).")
    return (f"If the target were the claimed model, ranks at least this far from uniform over {n_prompts} prompts "
            f"would occur in about {format_percent(pvalue, 1)} of audits.")


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


def read_chance_aucs(aucs: dict, *, k: int | None = None, level: float = 0.6) -> str:
    """A sentence for the models whose AUC is near or below chance (< ``level``), or "" when there are none.

    A live TPR/FPR run at k = 5 printed "AUC 0.46" under "their controls and targets hold by construction"
    with no word on what a below-chance AUC means (trial 7).
    """
    weak = [f"{name} ({auc:.2f})" for name, auc in aucs.items() if auc < level]
    if not weak:
        return ""
    at_k = f" with k = {k} outputs per arm" if k else ""
    return (f"AUC near or below 0.5 — {', '.join(weak)}: here the test told targets from controls no better than "
            f"chance{at_k}. That is what too few outputs give even where the targets do change the answers: only "
            "large changes show at a small k; raise k or the replicates.")


def read_rut_decision(pvalue: float, alpha: float) -> str:
    """One sentence that reads the RUT's decision at level α, with its false-alarm rate."""
    if pvalue <= alpha:
        return (f"p ≤ α = {alpha:g}: the target's answers do not rank like the claimed model's own, so it is "
                f"probably not that model (or not at its settings); an honest API is flagged like this in "
                f"{format_percent(alpha)} of audits, so confirm on fresh prompts before acting.")
    return (f"p > α = {alpha:g}: the target's answers rank like the claimed model's own; no evidence of "
            "substitution at this sample size (which is not proof that it is the claimed model).")


def read_rut_ks(ks_statistic: float, ks_pvalue: float) -> str:
    """One sentence that reads the Kolmogorov–Smirnov baseline on the same ranks."""
    return (f"Kolmogorov–Smirnov baseline on the same ranks: largest gap D = {ks_statistic:.3f} between their "
            f"empirical CDF and the diagonal, p {p_relation(format_rut_pvalue(ks_pvalue))} (scipy's exact KS "
            "distribution).")


def p_relation(shown: str) -> str:
    """``"= 0.034"``, or a bound as it is (``"< 0.001"``, ``"≤ 0.001"``): "p = < 0.001" reads as a typo.

    Examples
    --------
    >>> p_relation("0.034"), p_relation("< 0.001"), p_relation("≤ 0.001")
    ('= 0.034', '< 0.001', '≤ 0.001')
    """
    return shown if shown.startswith(("<", "≤")) else f"= {shown}"


def cvm_critical_value(n: int, level: float = 0.95) -> float:
    """The ``level`` point of W² under uniformity for n ranks: the law scipy's ``cramervonmises`` p-value uses.

    n = 4 gives 0.445, n → ∞ 0.461 (Anderson & Darling 1952); a sentence quoting 0.461 beside a p-value
    computed for n = 4 contradicted it (W² = 0.456 with p = 0.046 read "more than 0.46 in only 5 %").
    """
    from scipy.optimize import brentq

    try:
        from scipy.stats._hypotests import _cdf_cvm  # scipy's finite-n law (Csörgő & Faraway 1996)
    except ImportError:  # pragma: no cover - a scipy without it: the asymptotic point
        return 0.461
    return float(brentq(lambda x: _cdf_cvm(x, n) - level, 1e-3, 5.0, xtol=1e-6))


def read_rut_statistic(statistic: float, n: int | None = None) -> str:
    """One sentence that reads the Cramér–von Mises statistic of the RUT's n ranks."""
    # 1/6 is the null mean of W² for every n; its 95 % point is computed for this n (0.461 as n → ∞).
    critical = cvm_critical_value(n) if n else 0.461
    return (f"W² = {statistic:.3f} measures how far the ranks' empirical CDF strays from the diagonal; an honest "
            f"target gives about 0.17 on average and more than {critical:.3f} in only 5 % of audits"
            + (f" of {n} prompts." if n else "."))


def read_share_bound(bound: float, confidence_level: float = 0.95) -> str:
    """One sentence that reads the RUT's lower confidence bound on the share of substituted answers."""
    level = f"{format_percent(confidence_level)} lower bound"
    if bound <= 0:
        return (f"The ranks are consistent with no substitution at all: the {level} on the share of answers that "
                "did not come from the claimed model is 0 %.")
    return (f"At least {format_percent(bound)} of answers did not come from the claimed model ({level}, valid whatever "
            "model replaced it; the true share can be larger).")


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


# ------------------------------------------------------------ what changed
#: How the two arms of an explanation are named in sentences (x first).
ARM_NAMES = ("original", "perturbed")


def format_share(share: float) -> str:
    """A share as a whole percentage (``"31 %"``; ``"<1 %"`` for a few in many, ``">99 %"`` for all but a few)."""
    if 0.995 <= share < 1:  # "100 %" would claim every one (a bootstrap's 199 of 200 read "in 100 % of 200")
        return ">99 %"
    return "<1 %" if 0 < share < 0.005 else format_percent(share)


def theme_name(theme, n_terms: int = 3) -> str:
    """A theme's name: its first distinguishing words (``"planet, mars, red"``)."""
    return ", ".join(theme.terms[:n_terms]) or f"#{theme.cluster + 1} (no distinguishing words)"


def read_theme(theme, fdr: float, *, arms=ARM_NAMES) -> str:
    """One sentence for a theme of :func:`dbpa_core.explain_change`.

    A significant theme reads as a finding ("theme *planet, mars, red* — 31 %
    of perturbed outputs vs 2 % of original, q = 0.002"); any other says that
    its difference is within chance, so an unadjusted difference is never
    read as a finding.
    """
    shares = (f"{format_share(theme.share_y)} of {arms[1]} outputs vs {format_share(theme.share_x)} of "
              f"{arms[0]}")
    if theme.significant:
        return f"Theme *{theme_name(theme)}* — {shares}, q = {format_pvalue(theme.qvalue)}."
    return (f"Theme *{theme_name(theme)}* — {shares}: within what chance produces (q = "
            f"{format_pvalue(theme.qvalue)} > {fdr:g}), not a finding.")


def read_explanation(explanation, *, arms=ARM_NAMES) -> list[str]:
    """The sentences of a "What changed" account: one per significant theme, or why there is none.

    ``explanation`` is a :class:`~dbpa_core.stats.explain.ChangeExplanation`.
    Themes that are not significant after Benjamini–Hochberg are not
    listed: the account then says the change, if any, is diffuse.
    """
    found = explanation.significant_themes
    m = len(explanation.themes)
    if found:
        return [read_theme(t, explanation.fdr, arms=arms) for t in found] + [
            f"{len(found)} of {m} themes differ in share between the arms (Benjamini–Hochberg across the {m}: on "
            f"average at most {format_percent(explanation.fdr)} of themes declared like this are chance groupings)."]
    if m == 1:
        return ["All outputs form one theme, so no theme can be more common in one arm than in the other: the change, "
                "if any, is diffuse (a shift of the outputs as a whole) rather than a theme."]
    return [f"No theme's share differs between the arms beyond chance (Benjamini–Hochberg at {explanation.fdr:g} "
            f"across {m} themes): the change, if any, is diffuse — spread over the outputs rather than a theme one "
            "arm has and the other lacks."]


def read_themes_beside_test(explanation, *, declared: bool | None) -> str | None:
    """The sentence for themes found where the DBPA test above declared no change (else None).

    ``declared`` is the test's decision on the same outputs (None: not known, nothing is said).  The two
    are separate tests of one pair of arms, each with its own error control: the test compares how similar
    the outputs are (ω between P0 and P1), the themes compare what they are about (shares of clusters), so
    either can flag what the other misses; a page that showed both without a word read as a contradiction.
    """
    if declared is False and explanation.significant_themes:
        return ("The test above declared no change, yet these themes' shares differ: the two are separate tests of "
                "the same outputs (the test compares how similar the outputs are, the themes what they are about), "
                "so either can flag what the other misses. Read the themes as a lead to confirm with more outputs "
                "per arm, not as the audit's finding.")
    return None


def read_explanation_method(explanation) -> str:
    """One sentence that says how the themes were found and tested."""
    n = explanation.n_x + explanation.n_y
    tried = explanation.candidates
    how = (f"{explanation.n_clusters} chosen by silhouette among {tried[0]}–{tried[-1]}" if len(tried) > 1
           else f"with {n} outputs, {explanation.n_clusters} is the only number of themes tried")
    return (f"The {n} outputs of both arms were grouped into {explanation.n_clusters} themes by meaning, without "
            f"their arm labels ({how}), each named by its most distinctive words; each "
            f"theme's share was compared with {_theme_null(explanation)}.")


def _theme_null(explanation) -> str:
    """What each theme's share was compared with: every split (exact) or B random re-splits."""
    if explanation.exact:
        return (f"its share on all {explanation.n_resamples:,} splits of the pooled outputs between the arms "
                "(every split was counted: p is exact)")
    return f"{explanation.n_resamples:,} random re-splits of the arm labels"


def read_representatives(*, arms=ARM_NAMES) -> str:
    """One sentence that reads the representative outputs (the MMD witness)."""
    return (f"Representative outputs: those of each arm that resemble the rest of their own arm most and the other "
            f"arm least (the MMD witness; 0 = equally close to both). Every pair of arms has some, so read them as "
            f"illustrations of the {arms[0]} and {arms[1]} outputs, not as findings.")
