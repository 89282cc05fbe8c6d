"""Is this API serving the model it claims? The rank-based uniformity test (RUT, Zhu et al., ICLR 2026)."""

import numpy as np
import pandas as pd
import streamlit as st

from dbpa_core.data.uploads import read_target_responses
from dbpa_core.present.exports import rut_record
from dbpa_core.present.figures import rank_ecdf, rank_histogram, substitution_power_curve
from dbpa_core.present.readings import read_rut_decision, rut_readings, rut_strip
from dbpa_core.rut.collect import REFERENCE_TEMPERATURE, TARGET_SOURCES
from dbpa_core.rut.data import load_recorded_rut, rut_arrays
from dbpa_core.rut.scoring import SCORES
from dbpa_core.rut.uniformity import rank_uniformity_test, substitution_power
from ui.components import downloads, guard
from ui.runs import rut_live, shared
from ui.sidebar import current_settings

settings = current_settings()
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
    # One stream for the choice of recorded answers and the ranks' tie-breaking uniforms.
    rng = np.random.default_rng(settings.seed)
    if mode.startswith("Recorded"):
        data = load_recorded_rut(score)
        targets = {"reference": "The reference model itself (H₀ holds)", **data.labels}
        target = columns[1].selectbox("Target (the 'API')", list(targets), format_func=targets.get, key="rut_target")
        n_prompts = int(columns[2].number_input("Prompts n", 2, len(data.prompts), len(data.prompts), key="rut_n"))
        m = int(st.slider("Reference samples per prompt m", 1, data.reference_pool.shape[1] - 1,
                          data.reference_pool.shape[1] - 1, key="rut_m"))
        scores = rut_arrays(data, target, n_prompts=n_prompts, m=m, rng=rng)
        target_label = f"{targets[target]} — recorded answers of local SmolLM2"
        st.caption(f"Per prompt, m of the {data.reference_pool.shape[1]} recorded reference answers form the reference "
                   "sample" + (" and another one is the target" if target == "reference" else "")
                   + "; the sidebar seed picks which, so each seed is another audit from the same recording.")
    else:
        source = columns[1].selectbox("Target (the 'API')", list(TARGET_SOURCES), format_func=TARGET_SOURCES.get,
                                      key="rut_source")
        system, temperature, uploaded = None, REFERENCE_TEMPERATURE, None
        if source == "local":
            system = columns[2].text_input("Target system prompt", "You are a pirate. Answer like a pirate.",
                                           key="rut_system")
            temperature = st.slider("Target temperature", 0.0, 2.0, REFERENCE_TEMPERATURE, key="rut_temperature")
        elif source == "openai":
            if settings.sampler.backend != "openai":
                raise ValueError("Choose 'OpenAI-compatible API' as the backend in the sidebar (base URL, model, key) "
                                 "to audit an endpoint.")
            columns[2].caption(f"The endpoint is asked exactly as the reference model is: no system prompt, "
                               f"T = {REFERENCE_TEMPERATURE:g}.")
        else:
            file = st.file_uploader("Target responses (JSONL: one object per line with `prompt` and `text`)",
                                    type=["jsonl", "json"], key="rut_upload")
            if file is None:
                st.caption("Upload the API's responses; the reference model answers the same prompts.")
                st.stop()
            uploaded = read_target_responses(file.getvalue(), file.name)
        n_prompts = int(st.number_input("Prompts n", 2, 16, 4, key="rut_live_n"))
        m = int(st.number_input("Reference samples per prompt m", 1, 20, 4, key="rut_live_m"))
        run = st.button("Run the live audit", type="primary", key="rut_run")
        scores = rut_live(settings, score=score, system=system, temperature=temperature, n_prompts=n_prompts, m=m,
                          target_source=source, uploaded=uploaded, run=run)
        if scores is None:
            st.caption(f"Generates {n_prompts * (m + 1)} answers with SmolLM2 and scores each (≈1 s per answer).")
            st.stop()
        target_label = {"local": f"local SmolLM2 with system prompt “{system or '(none)'}” at T={temperature:g}",
                        "openai": f"{settings.sampler.model} at {settings.sampler.base_url or 'api.openai.com'}",
                        "upload": f"uploaded responses ({file.name})" if source == "upload" else ""}[source]

    result = rank_uniformity_test(scores.target_scores, scores.reference_scores, rng=rng)
    st.markdown(f"**Target:** {target_label}")
    *numbers, (decision_label, decision_value) = rut_strip(result, alpha)
    for column, (label, value) in zip(st.columns(len(numbers)), numbers):
        column.metric(label, value)
    # The decision on its own line, so "FAIL TO REJECT H₀" is never cut.
    st.metric(decision_label, decision_value)
    for sentence in rut_readings(result):
        st.caption(sentence)
    if scores.dropped:
        st.caption(f"{len(scores.dropped)} prompt(s) left out because an answer was empty (no tokens to score): "
                   + "; ".join(scores.dropped))
    (st.warning if result.pvalue <= alpha else st.info)(f"**{target_label}:** {read_rut_decision(result.pvalue, alpha)}")
    left, right = st.columns(2)
    left.plotly_chart(rank_histogram(result), width="stretch", key="rut_hist")
    left.caption("Flat bars mean the target behaves like the reference model; a pile at one end means its answers "
                 "consistently score lower (or higher) under the reference model than the reference's own.")
    right.plotly_chart(rank_ecdf(result), width="stretch", key="rut_ecdf")
    right.caption("The further the step curve strays from the diagonal, the larger the CvM statistic.")

    if mode.startswith("Recorded") and target != "reference":
        st.subheader("Power against partial substitution")
        trials = int(st.number_input("Simulated audits per q", 20, 1000, 100, step=20, key="rut_trials"))
        inputs = repr((score, target, n_prompts, m, trials, alpha, settings.seed))

        def compute_power():
            bar = st.progress(0.0, text="Simulating audits")
            power = substitution_power(data.reference_pool[:n_prompts], data.alternatives[target][:n_prompts],
                                       n_prompts=n_prompts, m=m, n_trials=trials, alpha=alpha, rng=settings.seed,
                                       progress=lambda f: bar.progress(f))
            bar.empty()
            return power

        clicked = st.button("Compute the power curve", key="rut_power")
        if clicked:
            st.session_state["rut_power_inputs"] = inputs  # what this user last asked for (one string)
        power = shared("rut_power", inputs, compute_power if clicked else None)
        if power is not None:
            st.plotly_chart(substitution_power_curve(power), width="stretch", key="rut_power_curve")
            st.caption(f"With a share q of answers secretly served by the other model, the test flags the API in the "
                       f"plotted share of audits; AUC {power.auc:.2f} summarises power over all q (1 = always).")
        elif st.session_state.get("rut_power_inputs") not in (None, inputs):
            st.caption("The power curve computed earlier was for other inputs; compute it again for these.")
    downloads(table=pd.DataFrame({"prompt": scores.prompts, "rank": result.ranks,
                                  "target_score": scores.target_scores}),
              record=rut_record(result, scores, alpha=alpha, score=score, target=target_label,
                                settings={"mode": mode, "n_prompts": n_prompts, "m": m, "seed": settings.seed}),
              name="rut_result")
