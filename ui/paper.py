"""The paper's experiments on its shipped responses, drawn once for every page that shows them.

The Reproduce page shows all of them; the case-study pages (persona study,
TPR / FPR, alignment) show one each as their default data source.  Each
``show_*`` draws an experiment's result and returns its report sections
(title, readings, tables, figures) for the self-contained HTML report.
"""

from __future__ import annotations

import streamlit as st

from dbpa_core.present import reproduction as rp
from dbpa_core.present.readings import read_decision, read_pvalue, read_statistic

from .components import downloads
from .resources import embedder_for, store
from .runs import one_run_at_a_time, shared_figure

EXPERIMENTS = {"table2": "Table 2 · personas", "fig1": "Figs 1–2 · TPR / FPR", "fig3": "Fig 3 · alignment",
               "appendix": "Appendix C.2–C.4"}
ALPHA = 0.05
SOURCE_NOTE = ("The DBPA paper's own LLM responses (GPT-3.5/4 and seven open models, shipped in `assets/paper/` "
               "from the reference code QiyaoWei/Hypo-Test, Apache-2.0): real outputs that no one on this project "
               "wrote, so nothing here holds by construction.")


# In memory only: a result pickled to disk would outlive a change of the code that computed it (Streamlit
# keys the cache by this function's own source), and a restart re-runs it from the stored vectors in seconds.
@st.cache_data(max_entries=16, show_spinner="Running the permutation tests…")
def reproduce(experiment: str, n_resamples: int, seed: int):
    from dbpa_core.paper.registry import REPRODUCERS

    return REPRODUCERS[experiment](embedder=_minilm(), store=store(), n_resamples=n_resamples, seed=seed)


def _minilm():
    """The process's one MiniLM (loaded once, whichever session asks first)."""
    from dbpa_core.audit.request import EmbedderConfig

    return embedder_for(EmbedderConfig("minilm"))


#: Experiments whose responses are all embedded in the store (it only grows, so they stay so).
_EMBEDDED: set[str] = set()


def ensure_embedded(experiment: str, *, key: str = "reproduce") -> None:
    """Make sure the experiment's responses are embedded; when many are missing, ask first (st.stop())."""
    from dbpa_core.paper.embeddings import embed_groups
    from dbpa_core.paper.registry import experiment_texts, missing_embeddings

    if experiment in _EMBEDDED:
        return  # counting what is missing reads every response's vector key (70 ms for Figs 1–2)
    missing = missing_embeddings(experiment, embedder_key=_minilm().key, store=store())
    if missing == 0:
        _EMBEDDED.add(experiment)
    if missing > 200:
        st.info(f"The first run of this experiment embeds {missing:,} responses with MiniLM (about "
                f"{max(1, missing // 50 // 60)} min on this machine); they are cached in the sample store, so "
                "every later run opens in seconds.")
        if not st.button("Embed the responses and run", type="primary", key=f"{key}_embed"):
            st.stop()
        with one_run_at_a_time(f"embed {experiment}"):  # a room clicking at once embeds them once
            bar = st.progress(0.0, text="Embedding…")
            embed_groups({experiment: experiment_texts(experiment)}, embedder=_minilm(), store=store(),
                         progress=lambda stage, done, total: bar.progress(done / max(total, 1),
                                                                          text=f"{stage}: {done}/{total}"))
            bar.empty()


def show_table2(result, *, key: str = "reproduce"):
    """Table 2: each persona against the doctor baseline, beside the reference run."""
    from dbpa_core.present.figures import discrepancy_bars

    table = rp.persona_frame(result)
    st.info(rp.persona_agreement(result))
    st.plotly_chart(shared_figure(discrepancy_bars, [r.persona for r in result.rows],
                                  [r.statistic for r in result.rows], [r.pvalue for r in result.rows], alpha=ALPHA,
                                  label="ω (JS distance)",
                                  title="ω of each persona against the doctor baseline (blue: p ≤ 0.05)"),
                    width="stretch", key=f"{key}_table2_bars")
    st.dataframe(rp.persona_frame(result, formatted=True), hide_index=True, width="stretch")
    st.caption("ω is the JS distance between the histograms of within-doctor and doctor-vs-persona answer "
               "similarities (0 = the same spread; at most 0.83); JSD bits is the same comparison on the app's "
               "default scale (0 to 1). Stars: * p < 0.05, ** p < 0.01, *** p < 0.001, unadjusted as in the "
               "paper. The paper's column is the reference run's `cvd_guidelines_results.json`.")
    st.caption("Why they differ: each persona arm describes a freshly drawn patient, so every arm differs from "
               "the doctor arm in patient features too; our test re-splits the answers themselves, while the "
               "reference run bootstrapped pooled similarity values with a separate histogram range per arm.")
    persona = st.selectbox("Read one row", [r.persona for r in result.rows], key=f"{key}_persona")
    row = next(r for r in result.rows if r.persona == persona)
    null_mean = float(row.test.null_distribution.mean())
    st.caption(read_statistic(row.statistic, null_mean, "JS distance"))
    st.caption(read_pvalue(row.pvalue, row.test.n_resamples, exact=row.test.exact))
    st.caption(read_decision(row.pvalue, ALPHA))
    if row.note:
        st.caption(f"This row compares {row.note}.")
    return [("Table 2: personas against the doctor baseline", [rp.persona_agreement(result)], [table], [])]


def show_fig1(result, *, key: str = "reproduce"):
    """Figs 1–2: TPR / FPR over α per model, the best model at an allowed FPR."""
    from dbpa_core.present.figures import rates_over_alpha, roc_curves

    max_fpr = st.select_slider("Allowed false-positive rate", [0.01, 0.05, 0.10], 0.05, key=f"{key}_fpr",
                               format_func=lambda f: f"{f:.0%}")
    best = result.best_model_at(max_fpr)
    best_tpr = result.model(best).tpr_at_fpr(max_fpr)
    st.info(rp.roc_finding(result))
    st.success(f"At an allowed FPR of {max_fpr:.0%} the best model is **{best}**: it flags {best_tpr:.0%} of "
               "content changes while flagging at most that share of mere paraphrases.")
    curves = {m.label: m.pooled for m in result.models}
    figure = shared_figure(roc_curves, curves, max_fpr=max_fpr, best=best)
    st.plotly_chart(figure, width="stretch", key=f"{key}_roc")
    st.caption("One curve per model, all 5 seeds pooled (140 controls: paraphrase vs paraphrase of the same "
               "patient; 40 targets: another patient vs a paraphrase). AUC is the chance that a random target "
               "gets a smaller p than a random control; 0.5 is no better than chance.")
    st.plotly_chart(shared_figure(rates_over_alpha, curves), width="stretch", key=f"{key}_alpha")
    st.caption("Solid: share of targets flagged at level α; dashed: share of controls flagged. A calibrated "
               "test keeps the dashed lines near α.")
    table = rp.roc_frame(result)
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption("AUC mean ± sd over the 5 seeds; TPR at FPR ≤ 1 % / 5 % read off the pooled curve. The paper "
               "run tested only targets: its column is the share of its target p-values below 0.05; it gives "
               "no AUC.")
    return [("Figs 1–2: TPR and FPR over α", [rp.roc_finding(result)], [table], [figure])]


def show_fig3(result, *, key: str = "reproduce"):
    """Fig 3: each open model against GPT-3.5, mean ± sd over the seeds."""
    from dbpa_core.present.figures import mean_sd_bars

    table = rp.alignment_frame(result)
    st.info(rp.alignment_reading(result))
    figure = shared_figure(mean_sd_bars, [r.label for r in result.rows], [r.statistics.mean() for r in result.rows],
                           [r.statistics.std() for r in result.rows], [r.differs(ALPHA) for r in result.rows],
                           title="ω of each open model against GPT-3.5 (blue: differs in most seeds)",
                           label="ω (JS distance)")
    st.plotly_chart(figure, width="stretch", key=f"{key}_fig3")
    st.caption("Bar: mean ω over the 5 seeds (each seed a new patient and new answers); whisker: its standard "
               "deviation. A larger ω means the model's answers are spread differently from GPT-3.5's.")
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption("'seeds p ≤ .05' counts the seeds in which the model's answers differ from GPT-3.5's more than "
               "chance explains; a model is said to differ when that holds in most seeds. The paper-run columns "
               "are the reference code's per-seed result files.")
    return [("Fig 3: alignment with GPT-3.5", [rp.alignment_reading(result)], [table], [figure])]


def show_appendix(result, *, key: str = "reproduce"):
    """Appendix C.2–C.4: choices of ω and of similarity, embedding cost."""
    omega, similarity, costs = rp.grid_frame(result.omega), rp.grid_frame(result.similarity), rp.cost_frame(result)
    st.subheader("C.2 · choices of ω (persona vs doctor)")
    st.info(rp.grid_agreement(result.omega))
    st.dataframe(omega, hide_index=True, width="stretch")
    st.caption("Each cell: the statistic, its permutation p-value and stars; every ω is tested with the same "
               "re-splits of the same answers, so only the choice of ω differs.")
    st.subheader("C.4 · similarities (ω = JSD in bits)")
    st.info(rp.grid_agreement(result.similarity))
    st.dataframe(similarity, hide_index=True, width="stretch")
    st.caption("Cosine of MiniLM embeddings compares meaning; BLEU and ROUGE-L compare shared words, so they "
               "can flag a change of wording that leaves the meaning intact.")
    st.subheader("C.3 · embedding cost as k grows")
    st.dataframe(costs, hide_index=True, width="stretch")
    priciest = costs.sort_values("US$").iloc[-1]
    st.caption(f"Cost grows linearly with k × arms: embedding {priciest['k']:,} answers per arm for all 8 "
               f"personas ({priciest['tokens']:,} tokens) costs ${priciest['US$']:.3f} with "
               f"{priciest['embedder']}; the packaged MiniLM is free.")
    return [("C.2: choices of ω", [rp.grid_agreement(result.omega)], [omega], []),
                ("C.4: similarities", [rp.grid_agreement(result.similarity)], [similarity], []),
                ("C.3: embedding cost", [], [costs], [])]


SHOW = {"table2": show_table2, "fig1": show_fig1, "fig3": show_fig3, "appendix": show_appendix}


def show_experiment(experiment: str, n_resamples: int = 1000, seed: int = 0, *, key: str = "reproduce") -> None:
    """Run (or reopen) one experiment on the paper's responses and show it with its downloads."""
    ensure_embedded(experiment, key=key)
    result = reproduce(experiment, n_resamples, seed)
    st.caption(f"Results for: {EXPERIMENTS[experiment]} on the paper's responses, B = {n_resamples:,}, seed {seed} "
               "(recomputed whenever these change).")
    sections = SHOW[experiment](result, key=key)

    def report():
        from dbpa_core.present.exports import sections_html

        return sections_html("DBPA: reproducing the paper", "Rauba, Wei & van der Schaar (ICML 2025), re-tested on "
                             "the paper's own responses (Hypo-Test c586dfe) with DBPA Explorer.", sections,
                             rp.reproduction_record(result)["settings"])

    downloads(table=sections[0][2][0], record=rp.reproduction_record(result), report_html=report,
              name=f"{key}_{experiment}")


def paper_or_live(key: str, experiment: str, live_label: str, seed: int) -> None:
    """A case-study page's data source: the paper's responses (the default) or sampling live.

    On the paper's responses, shows ``experiment`` and stops the page there;
    otherwise returns, and the page draws its live controls.
    """
    source = st.radio("Data", ["paper", "live"], horizontal=True, key=f"{key}_source",
                      format_func={"paper": "The paper's own responses (real LLM outputs)", "live": live_label}.get)
    if source == "paper":
        st.caption(SOURCE_NOTE)
        n_resamples = int(st.number_input("Permutations B", 100, 10_000, 1000, step=100, key=f"{key}_paper_b"))
        show_experiment(experiment, n_resamples, seed, key=f"{key}_paper")
        st.stop()
