"""Is this API serving the model it claims? The rank-based uniformity test (RUT, Zhu et al., ICLR 2026)."""

import numpy as np
import pandas as pd
import streamlit as st

from dbpa_core.present.readings import decision, format_pvalue
from dbpa_core.data.uploads import read_target_responses
from dbpa_core.rut.scoring import SCORES
from dbpa_core.rut.data import load_recorded_rut, rut_arrays
from dbpa_core.rut.uniformity import rank_uniformity_test, substitution_power
from dbpa_core.present.figures import rank_ecdf, rank_histogram, substitution_power_curve
from ui.components import downloads, guard
from ui.runs import rut_live

settings = st.session_state["settings"]
st.title("Is this API the model it claims to be?")
st.write("Score each answer of the API (the *target*) and many answers of a local reference model with the "
         "reference model itself. If the API runs the reference model, the target's score ranks uniformly among "
         "the reference scores; a Cramér–von Mises test checks that.")

with guard():
    mode = st.radio("Data", ["Recorded audit (instant)", "Live: local model (slow)"], horizontal=True, key="rut_mode")
    columns = st.columns(4)
    score = columns[0].selectbox("Score (by the reference model)", SCORES, key="rut_score",
                                 help="log_rank: mean log of each token's rank under the reference model.")
    alpha = columns[3].select_slider("α", [0.01, 0.05, 0.1], 0.05, key="rut_alpha")
    if mode.startswith("Recorded"):
        data = load_recorded_rut(score)
        targets = {"reference": "The reference model itself (H₀ holds)", **data.labels}
        target = columns[1].selectbox("Target (the 'API')", list(targets), format_func=targets.get, key="rut_target")
        n_prompts = int(columns[2].number_input("Prompts n", 2, len(data.prompts), len(data.prompts), key="rut_n"))
        m = int(st.slider("Reference samples per prompt m", 1, data.reference_pool.shape[1] - 1,
                          data.reference_pool.shape[1] - 1, key="rut_m"))
        target_scores, reference_scores = rut_arrays(data, target, n_prompts=n_prompts, m=m)
        target_label = targets[target]
    else:
        sources = {"local": "Local SmolLM2 with another system prompt / temperature",
                   "openai": "The sidebar's OpenAI-compatible endpoint", "upload": "Uploaded responses"}
        source = columns[1].selectbox("Target (the 'API')", list(sources), format_func=sources.get, key="rut_source")
        system = columns[2].text_input("Target system prompt", "You are a pirate. Answer like a pirate.",
                                       key="rut_system", disabled=source == "upload")
        temperature = st.slider("Target temperature", 0.0, 2.0, 0.7, key="rut_temperature",
                                disabled=source == "upload")
        uploaded = None
        if source == "openai" and settings.sampler.backend != "openai":
            raise ValueError("Choose 'OpenAI-compatible API' as the backend in the sidebar (base URL, model, key) "
                             "to audit an endpoint.")
        if source == "upload":
            file = st.file_uploader("Target responses (JSONL: one object per line with `prompt` and `text`)",
                                    type=["jsonl", "json"], key="rut_upload")
            if file is None:
                st.caption("Upload the API's responses; the reference model answers the same prompts.")
                st.stop()
            uploaded = read_target_responses(file.getvalue(), file.name)
        n_prompts = int(st.number_input("Prompts n", 2, 16, 4, key="rut_live_n"))
        m = int(st.number_input("Reference samples per prompt m", 1, 20, 4, key="rut_live_m"))
        if not st.button("Run the live audit", type="primary", key="rut_run"):
            st.caption(f"Generates {n_prompts * (m + 1)} answers with SmolLM2 and scores each (≈1 s per answer).")
            st.stop()
        target_scores, reference_scores = rut_live(settings, score=score, system=system,
                                                   temperature=temperature, n_prompts=n_prompts, m=m,
                                                   target_source=source, uploaded=uploaded)
        target_label = {"local": f"local SmolLM2 with system prompt “{system}” at T={temperature:g}",
                        "openai": f"{settings.sampler.model} at {settings.sampler.base_url or 'api.openai.com'}",
                        "upload": "uploaded responses"}[source]

    result = rank_uniformity_test(target_scores, reference_scores, rng=settings.seed)
    strip = st.columns(4)
    strip[0].metric("Prompts", result.n_prompts)
    strip[1].metric("CvM statistic", f"{result.statistic:.3f}")
    strip[2].metric("p-value", format_pvalue(result.pvalue))
    strip[3].metric("Decision", decision(result.pvalue, alpha))
    st.caption(f"Target: {target_label}. If the target were the reference model, a Cramér–von Mises statistic "
               f"this large would occur with probability {result.pvalue:.3g}.")
    st.caption(f"KS baseline on the same ranks: D = {result.ks_statistic:.3f}, p = {result.ks_pvalue:.3g}.")
    st.caption(f"Even an honest API is flagged in about {alpha:.0%} of audits at α = {alpha:g}: one rejection is "
               "evidence, not proof; repeat the audit on fresh prompts before acting on it.")
    (st.success if result.pvalue <= alpha else st.info)(
        "The target's answers do not rank like the reference model's: it is probably not the claimed model."
        if result.pvalue <= alpha else
        "The target's answers rank like the reference model's: no evidence of substitution at this sample size.")
    left, right = st.columns(2)
    left.plotly_chart(rank_histogram(result), width="stretch", key="rut_hist")
    left.caption("Flat bars mean the target behaves like the reference model; a pile at one end means its answers "
                 "are consistently more (or less) typical for the reference model than the reference's own.")
    right.plotly_chart(rank_ecdf(result), width="stretch", key="rut_ecdf")
    right.caption("The further the step curve strays from the diagonal, the larger the CvM statistic.")

    if mode.startswith("Recorded") and target != "reference":
        st.subheader("Power against partial substitution")
        trials = int(st.number_input("Simulated audits per q", 20, 1000, 100, step=20, key="rut_trials"))
        if st.button("Compute the power curve", key="rut_power"):
            bar = st.progress(0.0, text="Simulating audits")
            power = substitution_power(data.reference_pool[:n_prompts], data.alternatives[target][:n_prompts],
                                       n_prompts=n_prompts, m=min(m, data.reference_pool.shape[1] - 1),
                                       n_trials=trials, alpha=alpha, rng=settings.seed,
                                       progress=lambda f: bar.progress(f))
            bar.empty()
            st.session_state["rut_power_result"] = power
        power = st.session_state.get("rut_power_result")
        if power is not None:
            st.plotly_chart(substitution_power_curve(power), width="stretch", key="rut_power_curve")
            st.caption(f"With a share q of answers secretly served by the other model, the test flags the API in the "
                       f"plotted share of audits; AUC {power.auc:.2f} summarises power over all q (1 = always).")
    downloads(table=pd.DataFrame({"rank": result.ranks, "target_score": target_scores}),
              record={"statistic": result.statistic, "pvalue": result.pvalue, "ks_statistic": result.ks_statistic,
                      "ks_pvalue": result.ks_pvalue, "ranks": np.asarray(result.ranks).tolist(), "score": score,
                      "target": target_label}, name="rut_result")
