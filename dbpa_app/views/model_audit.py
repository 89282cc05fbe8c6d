"""Is this API serving the model it claims? The rank-based uniformity test (RUT, Zhu et al., ICLR 2026)."""

import streamlit as st

from dbpa_app.ui.components import downloads, guard
from dbpa_app.ui.requests import rut_audit
from dbpa_app.ui.rut import (
    STUDY_TRIALS,
    rut_pools,
    rut_study_result,
    show_power,
    show_result,
    show_selection,
    show_share_bound,
)
from dbpa_app.ui.sidebar import current_settings
from dbpa_core.audit.request import SamplerConfig
from dbpa_core.data.uploads import read_target_responses
from dbpa_core.paper.rut import DEFAULT_AUDIT
from dbpa_core.present.rut_audit import mmd_beside_rut
from dbpa_core.present.rut_study import power_curve_frame, recording_line, rut_study_record
from dbpa_core.requests.rut import RUTRequest
from dbpa_core.rut.collect import REFERENCE_TEMPERATURE, TARGET_SOURCES, target_request
from dbpa_core.rut.scoring import SCORE_NAMES, SCORES

# One recorded audit first: its answer is on the first screen in seconds; the power study (the paper's §5,
# half a minute the first time, its answer ≈ 3,000 px down) is one click away (issue 45).
MODES = {"audit": "One recorded audit", "paper": "The paper's experiments (recorded)", "live": "Live audit"}

settings = current_settings()
st.title("Is this API the model it claims to be?")
st.write("Score each answer of the API (the *target*) and many answers of a local reference model with the "
         "reference model itself. If the API runs the reference model, the target's score ranks uniformly among "
         "the reference scores; a Cramér–von Mises test checks that.")

with guard():
    mode = st.radio("View", list(MODES), format_func=MODES.get, horizontal=True, key="rut_mode")
    if mode != "live":
        from dbpa_app.ui.sidebar import sampler_ignored

        sampler_ignored("recorded answers of the packaged SmolLM2; only the seed is used")
    if mode == "paper":
        st.caption("The paper's §5 on this project's model: the packaged SmolLM2 against its own requantizations "
                   "and jailbreak-style system prompts, everyday prompts, T = 0.5, 30 new tokens, recorded once "
                   "on this machine; every audit below is drawn from those answers.")
        n_trials = st.select_slider("Simulated audits per q", STUDY_TRIALS, STUDY_TRIALS[-1], key="rut_study_trials",
                                    help="The paper used 500.")
        study = rut_study_result(n_trials=n_trials, n_resamples=1000, seed=settings.seed)
        st.caption(recording_line(study))
        st.subheader("Power against the share q of substituted answers (paper §5, Table 2a)")
        show_power(study)
        st.subheader("Which score tells the models apart? (paper Fig 2)")
        show_selection(study)
        st.subheader("How much traffic is substituted? A lower bound")
        show_share_bound(study)
        record = rut_study_record(study)
        downloads(table=power_curve_frame(study), record=record, name="rut_paper_experiments",
                  inputs=record["settings"])
        st.stop()

    left, right = st.columns([3, 1])
    score = left.selectbox("Score (by the reference model)", SCORES, format_func=SCORE_NAMES.get, key="rut_score",
                           help="log-rank: mean log of each token's rank under the reference model (the paper's "
                                "choice, §4.2); log-rank ratio (LRR): minus the log-likelihood over the summed "
                                "log-ranks.")
    alpha = right.select_slider("α", [0.01, 0.05, 0.1], 0.05, key="rut_alpha")
    extra, beside = [], None
    if mode == "audit":
        pools = rut_pools()
        names = {"reference": "The reference model itself (H₀ holds)",
                 **{n: a.label for n, a in pools.substitutes.items()}}
        # The target's label is long ("Q2_K requantization (2/3-bit mix)"): a row of its own, never cut at 1024 px.
        columns = [st.container(), *st.columns(3)]
        # Opens on the paper view's default audit (a substitute the test catches), not on the first substitute
        # (Q8_0, which no method detects): the reference itself is one choice away.
        opening = DEFAULT_AUDIT["substitute"] if DEFAULT_AUDIT["substitute"] in names else list(names)[1]
        target = columns[0].selectbox("Target (the 'API')", list(names), format_func=names.get,
                                      index=list(names).index(opening), key="rut_target")
        if target == "reference":  # the reference answers every prompt: its slider showed the last q (0.50)
            columns[1].slider("Share q served by it", 0.0, 1.0, 0.0, 0.1, key="rut_q_reference", disabled=True,
                              help="The reference model itself serves every answer: no share is substituted.")
            q = 0.0
        else:
            q = columns[1].slider("Share q served by it", 0.0, 1.0, 0.5, 0.1, key="rut_q")
        n_prompts = int(columns[2].number_input("Prompts n", 2, len(pools.prompts), min(100, len(pools.prompts)),
                                                key="rut_n"))
        m = int(columns[3].number_input("Reference answers m", 2, pools.reference.n_answers - 1,
                                        min(100, pools.reference.n_answers - 1), key="rut_m"))
        # The paper view's default audit is this one at its settings (recorded_audit: one stream, one audit), and
        # `dbpa rut` runs the same request (dbpa_core.requests.rut).
        request = RUTRequest(source="recorded", substitute=target, q=q, n=n_prompts, m=m, score=score,
                             alpha=alpha, n_resamples=1000, seed=settings.seed)
        found = rut_audit(settings, request)
        result, scores = found.rut, found.scores
        target_label = (names[target] if target == "reference" else
                        f"{names[target]} for a share q = {q:g} of answers") + " — recorded answers of SmolLM2"
        extra, beside = mmd_beside_rut(found, alpha)
        # The record's names for the run's settings (the CSV's "target choice", "prompts n", …: a published format)
        settings_record = {"mode": mode, "target": target, "q": q, "n_prompts": n_prompts, "m": m,
                           "seed": settings.seed}
    else:
        # The target and its system prompt on rows of their own: in a third of the width the choice read "Local
        # SmolLM2 with a" and the prompt "You are a pirate. Answer lik" at 1024 px.
        source = st.selectbox("Target (the 'API')", list(TARGET_SOURCES), format_func=TARGET_SOURCES.get,
                              key="rut_source")
        system, temperature, uploaded = None, REFERENCE_TEMPERATURE, None
        if source == "local":
            system = st.text_area("Target system prompt", "You are a pirate. Answer like a pirate.", height=68,
                                  key="rut_system")
        columns = st.columns(3)
        if source == "local":
            temperature = columns[0].slider("Target temperature", 0.0, 2.0, REFERENCE_TEMPERATURE,
                                            key="rut_temperature")
        elif source == "openai":
            if settings.sampler.backend != "openai":
                raise ValueError("Choose 'OpenAI-compatible API' as the backend in the sidebar (base URL, model, key) "
                                 "to audit an endpoint.")
            columns[0].caption(f"The endpoint is asked exactly as the reference model is: no system prompt, "
                               f"T = {REFERENCE_TEMPERATURE:g}.")
        else:
            file = st.file_uploader("Target responses (JSONL: one object per line with `prompt` and `text`)",
                                    type=["jsonl", "json"], key="rut_upload")
            if file is None:
                st.caption("Upload the API's responses; the reference model answers the same prompts.")
                st.stop()
            uploaded = read_target_responses(file.getvalue(), file.name)
        n_prompts = int(columns[1].number_input("Prompts n", 2, 16, 4, key="rut_live_n"))
        m = int(columns[2].number_input("Reference answers m", 1, 20, 4, key="rut_live_m"))
        run = st.button("Run the live audit", type="primary", key="rut_run")
        system, temperature = target_request(source, system=system, temperature=temperature)
        target = {"local": SamplerConfig("local"), "openai": settings.sampler.instance}.get(source)
        request = RUTRequest(source="live", target=target, target_system=system or "",
                             target_temperature=temperature, uploaded=tuple((uploaded or {}).items()),
                             n=n_prompts, m=m, score=score, alpha=alpha, seed=settings.seed)
        found = rut_audit(settings, request, run=run)
        if found is None:
            from dbpa_app.ui.timing import rut_time

            took = rut_time(n_prompts, m).reading()
            st.caption(f"Generates {n_prompts * (m + 1)} answers ({n_prompts} prompts × {m + 1}) with SmolLM2 and "
                       "scores each" + (f": {took}." if took else "."))
            st.stop()
        target_label = {"local": f"local SmolLM2 with system prompt “{system or '(none)'}” at T = {temperature:g}",
                        "openai": f"{settings.sampler.model} at {settings.sampler.base_url or 'api.openai.com'}",
                        "upload": f"uploaded responses ({file.name})" if source == "upload" else ""}[source]
        settings_record = {"mode": mode, "n_prompts": n_prompts, "m": m, "seed": settings.seed}
        result, scores = found.rut, found.scores
    show_result(result, scores, target_label=target_label, alpha=alpha, score=score, settings=settings_record,
                extra=extra, beside=beside)
