"""The RUT page's recorded data: the paper's experiments on SmolLM2 (computed once, shared) and one drawn audit.

The study (:func:`dbpa_core.paper.rut.rut_study`) is computed from the recorded
pools on the first visit and kept in memory for every session (bounded, never
on disk: a pickled result would outlive the code that computed it); each
``show_*`` draws a section from a result and computes nothing.
"""

from __future__ import annotations

import streamlit as st

from dbpa_core.present import rut_study as rs
from dbpa_core.present.formatting import format_percent, format_rut_pvalue
from dbpa_core.present.rut_readings import read_share_bound

from .components import show_table
from .cache import shared, shared_figure
from .progress import RunProgress

STUDY_TRIALS = (100, 500)


@st.cache_resource(show_spinner="Loading the recorded answers…")
def rut_pools():
    """The recorded pools (read-only arrays, shared by every session: never modify them)."""
    from dbpa_core.rut.pools import POOLS_FILE, load_rut_pools

    return load_rut_pools(POOLS_FILE)


def rut_study_result(*, n_trials: int, n_resamples: int, seed: int):
    """The paper's experiments on the recorded pools for these settings (computed at most once per process)."""
    from dbpa_core.paper.rut import rut_study
    from dbpa_core.rut.pools import POOLS_FILE

    def compute():
        from .timing import announced, paper_view_time, with_time

        estimate = paper_view_time("rut_study", n_trials)  # said before it starts (issue 45: 9.3 s unannounced)
        with RunProgress(with_time("Simulating audits from the recorded answers", estimate)) as progress, \
                announced(estimate):
            return rut_study(pools=rut_pools(), n_trials=n_trials, n_resamples=n_resamples, seed=seed,
                             progress=lambda stage, done, total: progress.report(done / max(total, 1),
                                                                                 f"{done}/{total} audits per q"))

    return shared("rut_study", (str(POOLS_FILE), n_trials, n_resamples, seed), compute)


def labels(study) -> dict:
    return {name: arm["label"] for name, arm in study.arms.items()}


def show_power(study) -> None:
    """Power curves, the power-AUC table (ours and the paper's printed), the findings."""
    from dbpa_core.present.rut_figures import power_auc_bars, power_curves

    settings = study.settings
    st.plotly_chart(power_curves(study.curves, labels(study)), width="stretch", key="rut_study_curves")
    st.caption(f"Each panel: the share of {settings['n_trials']} simulated audits (n = {settings['n_prompts']} "
               f"prompts, m = {settings['m']} reference answers each, α = {settings['alpha']:g}) that flag the "
               "API when each answer comes from that substitute with probability q. At q = 0 every method should "
               "flag about α of audits (false alarms); the higher a curve rises at small q, the smaller the share "
               "of substituted traffic the method catches.")
    st.plotly_chart(power_auc_bars(study.curves, labels(study)), width="stretch", key="rut_study_auc")
    # The label already says quantization or jailbreak: without the kind column the table fits 1280 px.
    show_table(rs.power_auc_frame(study).drop(columns="kind"))
    st.caption("Power AUC is the area under a power curve over q ∈ [0, 1]: 1 means every audit is flagged at every "
               f"q > 0, {settings['alpha']:g} means the method never does better than its false-alarm rate.")
    st.markdown(f"**Table 2a, {rs.PRINTED}** — the paper's models (Gemma, Llama, Mistral), not ours:")
    show_table(rs.printed_frame(study))
    st.caption(f"Source: {study.printed[0].source}. The 8-bit row is printed as “~0.05 (Fail)” / “~0.00”.")
    for line in rs.findings(study):
        st.markdown(f"- {line}")
    st.caption("The paper's conclusions (§5): " + " ".join(study.conclusions))


def show_selection(study) -> None:
    """Score selection (the paper's Fig 2)."""
    from dbpa_core.present.rut_figures import score_selection_chart

    st.plotly_chart(score_selection_chart(study.selection, labels(study)), width="stretch", key="rut_study_sel")
    show_table(rs.selection_frame(study))
    first = next(iter(study.selection.values()))
    st.caption(f"AUROC of each score between a substitute's answers and the reference model's own ({first.n_prompts} "
               f"prompts per trial, {first.n_answers} answers of each per prompt): 0.5 means the score cannot tell "
               "them apart, 0 or 1 that it always can. The paper chose log-rank for the RUT because its AUROC "
               "strays from 0.5 most consistently.")


def show_share_bound(study) -> None:
    """The share bound: on the default audit, and its mean against the true share q."""
    from dbpa_core.present.rut_figures import share_bound_curves

    audit = study.default_audit
    result = audit.result
    columns = st.columns(3)
    columns[0].metric("Substituted answers (true)", f"{audit.n_substituted} of {result.n_prompts}")
    columns[1].metric(f"Lower bound ({format_percent(result.confidence_level)})",
                      format_percent(result.share_lower_bound))
    columns[2].metric("RUT p-value", format_rut_pvalue(result.pvalue))
    st.info(f"Default audit — {study.arms[audit.substitute]['label']} served each answer with probability "
            f"q = {audit.q:g}: {read_share_bound(result.share_lower_bound, result.confidence_level)}")
    st.plotly_chart(share_bound_curves(study.curves, labels(study)), width="stretch", key="rut_study_bound")
    st.caption("Mean of the 95 % lower bound over the simulated audits against the true share q: it stays below the "
               "diagonal (valid whatever the substitute), and it is far below it for substitutes whose answers "
               "rank almost like the reference's, which no rank test can tell apart.")


def show_result(result, scores, *, target_label: str, alpha: float, score: str, settings: dict,
                extra: list[str] | None = None, beside: dict | None = None) -> None:
    """One audit's RUT result: the numbers, their readings, the decision, the ranks' figures, the downloads."""
    import pandas as pd

    from dbpa_core.present.csv_inputs import rut_inputs
    from dbpa_core.present.records import rut_record
    from dbpa_core.present.rut_figures import rank_ecdf, rank_histogram
    from dbpa_core.present.rut_readings import read_rut_decision, rut_readings, rut_strip

    from .components import downloads

    st.markdown(f"**Target:** {target_label}")
    *numbers, (decision_label, decision_value) = rut_strip(result, alpha)
    # A short label (five metrics share 1280 px); the level goes with the value and the help.
    numbers.append(("Substituted share", f"≥ {format_percent(result.share_lower_bound)}"))
    helps = {"Substituted share": f"{format_percent(result.confidence_level)} lower bound on the share of answers "
                                  "that did not come from the claimed model, valid whatever model replaced it."}
    # Three cards per row: five in one row cut "Reference answers m" and "Substituted share" at 1024 px.
    for start in range(0, len(numbers), 3):
        for column, (label, value) in zip(st.columns(3), numbers[start:start + 3]):
            column.metric(label, value, help=helps.get(label))
    # The plain verdict first ("Likely not the claimed model", issue 45); the technical decision on its own line
    # under it, so "FAIL TO REJECT H₀" is never cut.
    from dbpa_core.present.verdicts import rut_verdict

    st.markdown(f"#### {rut_verdict(result.pvalue, alpha)}")
    st.metric(decision_label, decision_value)
    for sentence in [*rut_readings(result), *(extra or [])]:
        st.caption(sentence)
    if scores.dropped:
        st.caption(f"{len(scores.dropped)} prompt(s) left out because an answer was empty (no tokens to score): "
                   + "; ".join(scores.dropped))
    (st.warning if result.pvalue <= alpha else st.info)(f"**{target_label}:** {read_rut_decision(result.pvalue, alpha)}")
    left, right = st.columns(2)
    left.plotly_chart(shared_figure(rank_histogram, result), width="stretch", key="rut_hist")
    left.caption("Flat bars mean the target behaves like the reference model; a pile at one end means its answers "
                 "consistently score lower (or higher) under the reference model than the reference's own.")
    right.plotly_chart(shared_figure(rank_ecdf, result), width="stretch", key="rut_ecdf")
    right.caption("The further the step curve strays from the diagonal, the larger the CvM statistic; the largest "
                  "gap, less its 95 % sampling error, is the lower bound on the substituted share.")
    record = rut_record(result, scores, alpha=alpha, score=score, target=target_label, settings=settings,
                        beside=beside)
    downloads(table=pd.DataFrame({"prompt": scores.prompts, "rank": result.ranks, "target_score": scores.target_scores}),
              record=record, name="rut_result", inputs=rut_inputs(record))
