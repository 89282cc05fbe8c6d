"""The paper's experiments, drawn once for every page that shows them.

The Reproduce page shows all of them; the case-study pages (persona study, TPR / FPR, alignment) open on
one each.  Every table sets three sources side by side — *paper (printed)*, *reference run*, *this
project* — and every experiment has its agreement sentence (:mod:`dbpa_core.present.reproduction`).  Each
``show_*`` draws an experiment's result and returns its report sections (title, readings, tables, figures)
for the self-contained HTML report.
"""

from __future__ import annotations

import streamlit as st

from dbpa_core.present.csv_inputs import roc_inputs
from dbpa_core.present import paper_bullets as pb
from dbpa_core.present import reproduction as rp
from dbpa_core.present import reproduction_tables as rt
from dbpa_core.present.formatting import format_percent
from dbpa_core.present.readings import read_decision, read_pvalue, read_statistic

from .components import downloads, show_table
from .resources import embedder_for, store
from .sidebar import sampler_ignored
from .cache import shared_figure, shared_function, the_cache, waiting_for_another_session

EXPERIMENTS = {"table2": "Table 2 · personas", "fig1": "Figs 1–2 · TPR / FPR", "fig3": "Fig 3 · alignment",
               "appendix": "Appendix C.2–C.4", "sample_size": "§3.2 · sample size"}
ALPHA = 0.05
SOURCE_NOTE = ("The DBPA paper's own LLM responses (GPT-3.5/4 and seven open models, shipped in `assets/paper/` "
               "from the reference code QiyaoWei/Hypo-Test, Apache-2.0): real outputs that no one on this project "
               "wrote, so nothing here holds by construction.")
SOURCES_NOTE = ("Three sources side by side, each column labelled with its own: **paper (printed)** — the paper's "
                "tables and text, as printed; **reference run** — the result files of the paper's reference code; "
                "**this project** — re-tested here with the packaged MiniLM and this app's permutation test.")
RECORDED_NOTE = ("Local models' answers recorded once (`scripts/record_cvd_roc.py`): the packaged SmolLM2-135M and "
                 "two requantizations of it, k = 40 answers per arm and seed, to the paper's cvd_nice patient with 8 "
                 "controls that must not change NICE's advice and 8 targets that move him into another risk category "
                 "(scenario `cvd_nice_risk`, which justifies each against the QRISK3/NICE thresholds).")


# In memory only: a result pickled to disk would outlive a change of the code that computed it (Streamlit
# keys the cache by this function's own source), and a restart re-runs it from the stored vectors in seconds.
@shared_function(spinner="Running the permutation tests…")
def reproduce(experiment: str, n_resamples: int, seed: int):
    from dbpa_core.paper.registry import REPRODUCERS

    if experiment == "fig1":  # its two setups are cached apart: the TPR/FPR page opens on one of them
        from dbpa_core.paper.fig1 import Figs12

        return Figs12(roc_setup("shipped_paraphrases", n_resamples, seed), roc_setup("recorded_cvd", n_resamples, seed))
    return REPRODUCERS[experiment](embedder=_minilm(), store=store(), n_resamples=n_resamples, seed=seed)


def _minilm():
    """The process's one MiniLM (loaded once, whichever session asks first)."""
    from dbpa_core.audit.configs import EmbedderConfig

    return embedder_for(EmbedderConfig("minilm"))


#: (experiment, store path) pairs whose responses are all embedded there (a store only grows, so they stay so).
_EMBEDDED: set[tuple[str, str]] = set()


def _roc_setup_time(setup: str, n_resamples: int, seed: int):
    from .timing import paper_view_time

    if setup == "shipped_paraphrases":  # 1,620 tests; the recorded setup takes under a second
        return paper_view_time("fig1_paraphrases", n_resamples)
    from dbpa_core.audit.timing import TimeEstimate

    return TimeEstimate(0.0)


@shared_function(spinner="Running the permutation tests", timed=_roc_setup_time)
def roc_setup(setup: str, n_resamples: int, seed: int):
    """One setup of Figs 1–2: ``"recorded_cvd"`` or ``"shipped_paraphrases"``."""
    from dbpa_core.paper.cvd_roc import cvd_study
    from dbpa_core.paper.fig1 import paraphrase_study

    study = {"recorded_cvd": cvd_study, "shipped_paraphrases": paraphrase_study}[setup]
    return study(embedder=_minilm(), store=store(), n_resamples=n_resamples, seed=seed)


def ensure_embedded(experiment: str, *, key: str = "reproduce") -> None:
    """Make sure the experiment's responses are embedded; when many are missing, ask first (st.stop())."""
    from dbpa_core.paper.embeddings import embed_groups
    from dbpa_core.paper.registry import embedding_sources, missing_embeddings

    # Per store: another store (DBPA_STORE) has its own vectors, or none.
    done = (experiment, str(store().path))
    if done in _EMBEDDED:
        return  # counting what is missing reads every response's vector key (70 ms for Figs 1–2)
    missing = missing_embeddings(experiment, embedder_key=_minilm().key, store=store())
    if missing == 0:
        _EMBEDDED.add(done)
    if missing > 200:
        st.info(f"The first run of this experiment embeds {missing:,} responses with MiniLM (about "
                f"{max(1, missing // 50 // 60)} min on this machine); they are cached in the sample store, so "
                "every later run opens in seconds.")
        if not st.button("Embed the responses and run", type="primary", key=f"{key}_embed"):
            st.stop()
        with the_cache().one_at_a_time(("embed", experiment), waiting=waiting_for_another_session):  # a room clicking at once embeds them once
            bar = st.progress(0.0, text="Embedding…")
            for texts, shipped in embedding_sources(experiment):
                embed_groups({experiment: texts}, embedder=_minilm(), store=store(), shipped=shipped,
                             progress=lambda stage, done, total: bar.progress(done / max(total, 1),
                                                                              text=f"{stage}: {done}/{total}"))
            bar.empty()


def agreement(items) -> None:
    """Each comparison with the paper in three bullets (the paper says / we find / why they differ), the full
    sentence with every number one click away (issue 45: one ≈ 120-word sentence was read on a projector)."""
    for item in items:
        st.info(f"**Agreement with the paper{' · ' + item.title if item.title else ''}.**\n\n{item.markdown()}")
        with st.expander("Details: the comparison in full"):
            st.write(item.details)


def show_table2(result, *, key: str = "reproduce"):
    """Table 2: each persona against the doctor baseline, beside the reference run and the printed columns."""
    from dbpa_core.present.figures import discrepancy_bars

    table = rt.persona_frame(result)
    agreement(pb.bullets(result))
    st.plotly_chart(shared_figure(discrepancy_bars, [r.persona for r in result.rows],
                                  [r.statistic for r in result.rows], [r.pvalue for r in result.rows], alpha=ALPHA,
                                  label="ω (JS distance)", pvalue_label="p",
                                  n_resamples=[r.test.n_resamples for r in result.rows],
                                  exact=[r.test.exact for r in result.rows],
                                  title="ω of each persona against the doctor baseline (blue: p ≤ 0.05)"),
                    width="stretch", key=f"{key}_table2_bars")
    show_table(rt.persona_frame(result, formatted=True))
    st.caption("ω is the JS distance between the histograms of within-doctor and doctor-vs-persona answer "
               "similarities (0 = the same spread; at most 0.83); JSD bits is the same comparison on the app's "
               "default scale (0 to 1). Stars: * p < 0.05, ** p < 0.01, *** p < 0.001, unadjusted as in the "
               "paper. The printed columns are Table 2's GPT-4 and GPT-3.5 (the paper prints no p-values); the "
               "reference run's are its `cvd_guidelines_results.json`.")
    persona = st.selectbox("Read one row", [r.persona for r in result.rows], key=f"{key}_persona")
    row = next(r for r in result.rows if r.persona == persona)
    null_mean = float(row.test.null_distribution.mean())
    st.caption(read_statistic(row.statistic, null_mean, "JS distance", exact=row.test.exact))
    st.caption(read_pvalue(row.pvalue, row.test.n_resamples, exact=row.test.exact))
    st.caption(read_decision(row.pvalue, ALPHA, n_resamples=row.test.n_resamples, exact=row.test.exact))
    if row.note:
        st.caption(f"This row compares {row.note}.")
    return [("Table 2: personas against the doctor baseline", rp.agreement(result), [table], [])]


def show_best(best, *, alpha: float | None = None, current: bool = True) -> None:
    """Fig 2's banner: the best model at an allowed FPR and what its TPR means, or why none is named (tie,
    TPR 0); ``alpha``, the threshold that achieves it, where the page has it."""
    show = (st.success if best.model else st.warning) if current else st.caption
    show(rp.best_model_reading(best, alpha=alpha))


def show_roc_study(study, max_fpr: float, *, key: str):
    """One setup of Figs 1–2: agreement, the best model at ``max_fpr`` (none on a tie), ROC, Fig. 2, table."""
    from dbpa_core.paper.design import ALLOWED_FPRS
    from dbpa_core.present.roc_figures import best_model_bars, rates_over_alpha, roc_curves

    agreement([pb.roc_bullets(study)])
    best = study.best_at(max_fpr)
    show_best(best)
    roc = shared_figure(roc_curves, study.rocs, max_fpr=max_fpr, best=best.model, auc_label="pooled AUC")
    st.plotly_chart(roc, width="stretch", key=f"{key}_roc")
    st.caption(f"One curve per model, every seed pooled ({study.models[0].pooled.n_controls} controls and "
               f"{study.models[0].pooled.n_targets} targets per model), each tested against the original arm its "
               "controls and targets share. AUC is the chance that a random target gets a smaller p than a random "
               "control; 0.5 is no better than chance. ★ best marks the model with the highest TPR at the allowed "
               f"FPR ({format_percent(max_fpr)}, Fig. 2's rule), which need not be the highest AUC; no star on a tie.")
    bars = shared_figure(best_model_bars, study.rocs, {f: study.best_at(f).model for f in ALLOWED_FPRS})
    st.plotly_chart(bars, width="stretch", key=f"{key}_bars")
    st.caption("Fig. 2: each model's TPR at each allowed FPR; the best is outlined in black, and no bar is outlined "
               "when models tie or none flags a target.")
    # One line per model and kind (18 on the shipped setup): a detail, one click away (issue 45).
    with st.expander(f"Detection rates against α, every model ({2 * len(study.rocs)} lines)"):
        st.plotly_chart(shared_figure(rates_over_alpha, study.rocs), width="stretch", key=f"{key}_alpha")
        st.caption("Solid: share of targets flagged at level α; dashed: share of controls flagged. A calibrated "
                   "test keeps the dashed lines near α.")
    table = rt.roc_frame(study)
    show_table(table)  # static and wrapped: every full, source-labelled header readable at 1024 px
    st.caption("This project's numbers unless marked reference run. AUC of the "
               "pooled curve and mean and sd over seeds (each seed one replicate of the design); TPR at "
               "FPR ≤ 1 % / 5 % read off the pooled curve. " + (
                   f"Confound: {study.settings['confound']}." if "confound" in study.settings else "") + (
                   f" Replicates: {study.settings['replicates']}." if "replicates" in study.settings else ""))
    return table, [roc, bars]


def show_fig1(result, *, key: str = "reproduce"):
    """Figs 1–2 on both setups: the recorded cvd_nice answers and the paper's shipped paraphrases."""
    max_fpr = st.select_slider("Allowed false-positive rate", [0.01, 0.05, 0.10], 0.05, key=f"{key}_fpr",
                               format_func=format_percent)
    best = rt.best_model_frame(result)
    show_table(best)
    st.caption("Fig. 2's reading: the model with the highest TPR at each allowed FPR. The paper's choices are "
               "printed in §4.2's text; ours name no model where models tie or none flags a target.")
    sections = [("Figs 1–2: the best model at each allowed FPR", [], [best], [])]
    for study, title, note in ((result.recorded, "The paper's setup on local models (recorded cvd_nice answers)",
                                RECORDED_NOTE),
                               (result.shipped, "The paper's shipped responses (paraphrases of one patient)",
                                SOURCE_NOTE)):
        st.subheader(title)
        st.caption(note)
        table, figures = show_roc_study(study, max_fpr, key=f"{key}_{study.setup}")
        sections.append((f"Figs 1–2: {title}", [rp.roc_agreement(study)], [table], figures))
    return sections


def show_fig3(result, *, key: str = "reproduce"):
    """Fig 3: each open model against GPT-3.5, mean ± sd over the seeds, beside the printed finding."""
    from dbpa_core.present.figures import mean_sd_bars

    table = rt.alignment_frame(result)
    agreement(pb.bullets(result))
    # Largest first, and blue where the paper found a difference (pb.fig3_bars).
    figure = shared_figure(mean_sd_bars, *pb.fig3_bars(result.rows),
                           title="ω against GPT-3.5, largest first (blue: printed as different in §4.3)", label="ω (JS distance)",
                           highlight_name="printed as different", other_name="not printed as different")
    st.plotly_chart(figure, width="stretch", key=f"{key}_fig3")
    st.caption("Bar: mean ω over the 5 seeds (each seed a new patient and new answers); whisker: its standard "
               "deviation. A larger ω means the model's answers are spread differently from GPT-3.5's. Here every "
               "model differs from GPT-3.5 (the table's last column); blue marks the ones the paper printed.")
    show_table(table)
    st.caption("'seeds p ≤ 0.05' counts the seeds in which the model's answers differ from GPT-3.5's more than "
               "chance explains; a model is said to differ when that holds in most seeds. The printed column is "
               "§4.3's text, against GPT-4, which the shipped runs do not hold.")
    return [("Fig 3: alignment with a reference model", rp.agreement(result), [table], [figure])]


def show_appendix(result, *, key: str = "reproduce"):
    """Appendix C.2 (Table 4), C.3 (Table 5) and C.4 (Table 6), each in its table's form."""
    from dbpa_core.present.appendix_csv import grid_values_frame

    omega, costs, similarity = rt.grid_frame(result.omega), rt.cost_frame(result), rt.grid_frame(result.similarity)
    # The CSV and the report: one value per cell (statistic, p, stars, decision apart), not "0.41 ***".
    split = {id(omega): grid_values_frame(result.omega), id(similarity): grid_values_frame(result.similarity)}
    sentences, compared = rp.agreement(result), pb.bullets(result)
    sections = []
    for (title, table, caption), sentence, item in zip((
            ("C.2 · distance measures (Table 4)", omega,
             "Each cell: the statistic and its stars (* p < 0.05, ** < 0.01, *** < 0.001; the CSV and JSON "
             "downloads hold the value, p, stars and decision in separate columns); every ω is tested with the same "
             "re-splits of the same answers. Euclidean: the distance of the two similarity densities; "
             "Wasserstein: W1 between P0 and P1 (the paper defines neither)."),
            ("C.3 · embedding cost (Table 5)", costs,
             "US cents for all the tokens of that many perturbations, from assets/pricing.yaml; the packaged "
             "MiniLM is free."),
            ("C.4 · text similarities (Table 6)", similarity,
             "BLEU and ROUGE compare shared words, so they can flag a change of wording that leaves the meaning "
             "intact; ω is the JS distance.")), sentences, compared):
        st.subheader(title)
        agreement([item])
        show_table(table)
        st.caption(caption)
        sections.append((title, [sentence], [split.get(id(table), table)], []))
    return sections


def show_sample_size(result, *, key: str = "reproduce"):
    """§3.2's rule as a table for the paper's family sizes."""
    table = rt.sample_size_frame(result)
    agreement(pb.bullets(result))
    show_table(table)
    st.caption(f"Samples per arm k with which a two-sample z-test detects an effect ω (Cohen's d) with "
               f"{format_percent(result.power)} power when m perturbations are tested at family-wise α = "
               f"{result.alpha:g} (Bonferroni); the last column is the smallest effect the z-test detects at the "
               f"paper's k = {result.k_paper}. DBPA's own power at these k with the paper's ω is lower (the sentence "
               "above); plan DBPA from a pilot (plan_sample_size). B and the seed do not apply.")
    return [("§3.2: sample size", rp.agreement(result), [table], [])]


#: Experiments computed from a formula, with no permutation test: B and the seed do not reach them.
FORMULAS = frozenset({"sample_size"})

SHOW = {"table2": show_table2, "fig1": show_fig1, "fig3": show_fig3, "appendix": show_appendix,
        "sample_size": show_sample_size}


def show_experiment(experiment: str, n_resamples: int = 1000, seed: int = 0, *, key: str = "reproduce") -> None:
    """Run (or reopen) one experiment and show it with its downloads."""
    ensure_embedded(experiment, key=key)
    result = reproduce(experiment, n_resamples, seed)
    if experiment in FORMULAS:  # the header said "B = 1,000, seed 0" above a caption saying neither applies
        st.caption(f"Results for: {EXPERIMENTS[experiment]} (computed from a formula: B and the seed do not apply).")
    else:
        st.caption(f"Results for: {EXPERIMENTS[experiment]}, B = {n_resamples:,}, seed {seed} (recomputed whenever "
                   "these change).")
    sections = SHOW[experiment](result, key=key)
    record = rp.reproduction_record(result)

    def report():
        from dbpa_core.present.exports import sections_html

        return sections_html("DBPA: reproducing the paper", "Rauba, Wei & van der Schaar (ICML 2025): this "
                             "project's numbers beside the paper's printed ones and the reference run's.", sections,
                             record["settings"])

    # one CSV of every table on the screen (Appendix C shows three, Figs 1–2 three), built from the same frames
    shown = rt.stacked_frame((title, table) for title, _, frames, _ in sections for table in frames)
    from dbpa_core.present.csv_inputs import settings_inputs

    downloads(table=shown, record=record, report_html=report, name=f"{key}_{experiment}",
              inputs=settings_inputs(record))


def paper_or_live(key: str, experiment: str, live_label: str, seed: int) -> None:
    """A case-study page's data source: the paper's responses (the default) or sampling live.

    On the paper's responses, shows ``experiment`` and stops the page there;
    otherwise returns, and the page draws its live controls.
    """
    source = st.radio("Data", ["paper", "live"], horizontal=True, key=f"{key}_source",
                      format_func={"paper": "The paper's own responses (real LLM outputs)", "live": live_label}.get)
    if source == "paper":
        sampler_ignored("the paper's recorded responses; only the seed is used")
        st.caption(SOURCE_NOTE)
        n_resamples = int(st.number_input("Permutations B", 100, 10_000, 1000, step=100, key=f"{key}_paper_b"))
        show_experiment(experiment, n_resamples, seed, key=f"{key}_paper")
        st.stop()


def recorded_or_live(key: str, live_label: str, seed: int) -> None:
    """The TPR / FPR page's data source: the paper's shipped paraphrases (default: real LLM outputs on which
    the test tells targets from controls, AUC 0.62–0.90), the recorded cvd_nice answers of local models (where
    it does not: SmolLM2's answers move more with a control than with a target), or sampling the design live.
    Shows a recorded setup and stops the page there."""
    labels = {"paper": "The paper's own responses (paraphrases)",
              "recorded": "Recorded: local models on the paper's cvd_nice design", "live": live_label}
    source = st.radio("Data", list(labels), horizontal=True, key=f"{key}_source", format_func=labels.get)
    if source == "live":
        return
    sampler_ignored(("recorded answers of local models" if source == "recorded" else "the paper's recorded responses")
                    + "; only the seed is used")
    st.caption(RECORDED_NOTE if source == "recorded" else SOURCE_NOTE)
    columns = st.columns(2)
    n_resamples = int(columns[0].number_input("Permutations B", 100, 10_000, 1000, step=100, key=f"{key}_paper_b"))
    max_fpr = columns[1].select_slider("Allowed false-positive rate", [0.01, 0.05, 0.10], 0.05,
                                       key=f"{key}_paper_fpr", format_func=format_percent)
    setup = "recorded_cvd" if source == "recorded" else "shipped_paraphrases"
    if source == "paper":
        ensure_embedded("fig1", key=f"{key}_paper")
    study = roc_setup(setup, n_resamples, seed)
    table, _ = show_roc_study(study, max_fpr, key=f"{key}_{setup}")
    record = {**rp.setup_record(study), "max_fpr": max_fpr}
    downloads(table=table, record=record, name=f"{key}_{setup}", inputs=roc_inputs(record))
    st.stop()
