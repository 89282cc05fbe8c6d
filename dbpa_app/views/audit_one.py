"""Audit one perturbation: any sampler, any similarity and discrepancy."""

import streamlit as st

from dbpa_core.present.formatting import discrepancy_symbol, format_percent
from dbpa_core.stats.decision import declares_change
from dbpa_core.audit.request import Prompt, SequentialPlan
from dbpa_core.stats.discrepancy import DISCREPANCY_NAMES, get_discrepancy
from dbpa_core.stats.similarity import SIMILARITIES
from dbpa_app.ui.components import (clouds, cost_note, guard, k_input, null_and_similarities, provenance,
                           report_settings, result_downloads, result_strip, sequential_strip, show_prompt)
from dbpa_app.ui.changes import what_changed
from dbpa_app.ui.freshness import keep, request_inputs, result_area
from dbpa_app.ui.resources import scenarios
from dbpa_app.ui.runs import Audited, family, scenario_request, typed_request
from dbpa_app.ui.sidebar import current_settings

settings = current_settings()
st.title("Audit one perturbation")
st.write("Pick a scenario and a perturbation, or type both prompts; choose how outputs are compared; run the test.")

with guard():
    source = st.radio("Prompts", ["From a scenario", "Type both prompts"], horizontal=True, key="one_source")
    if source == "From a scenario":
        all_scenarios = scenarios()
        scenario = all_scenarios[st.selectbox("Scenario", list(all_scenarios), key="one_scenario",
                                              format_func=lambda s: all_scenarios[s].title)]
        ids = [p.id for p in scenario.perturbations]
        # Opens on the scenario's first target, a real change the test should detect (issue 29); its
        # controls sit in the same list, and Many perturbations tests them side by side.
        first_target = next((i for i, p in enumerate(scenario.perturbations) if p.is_target), 0)
        perturbation = scenario.perturbation(st.selectbox(
            "Perturbation", ids, index=first_target, key="one_perturbation",
            format_func=lambda p: f"{scenario.perturbation(p).label} [{scenario.perturbation(p).kind}]"))
        original = Prompt(scenario.prompt, scenario.system)
        perturbed = Prompt(*scenario.apply(perturbation))
    else:
        system = st.text_input("System prompt (both arms; optional)", "", key="one_system")
        x0 = st.text_area("Original prompt x₀", "What causes the seasons on Earth?", key="one_x0")
        x1 = st.text_area("Perturbed prompt x₁", "Explain like I'm five: what causes the seasons on Earth?",
                          key="one_x1")
        if not x0.strip() or not x1.strip():
            raise ValueError("Both prompts are needed: type the original prompt x₀ and the perturbed prompt x₁.")
        original, perturbed = Prompt(x0, system), Prompt(x1, system)
    if source != "From a scenario" and settings.sampler.backend == "simulated":
        from dbpa_core.present.verdicts import TYPED_ON_SIMULATED

        st.warning(TYPED_ON_SIMULATED, icon=":material/science:")
    left, right = st.columns(2)
    with left:
        show_prompt("x₀ · original, as sent", original.prompt, original.system)
    with right:
        show_prompt("x₁ · perturbed, as sent", perturbed.prompt, perturbed.system)

    # Two rows, so that every box shows its whole value at a projector's 1024 px (issue 29: one row of five
    # cut "cosine" and the discrepancy's name).
    columns = st.columns(3)
    k = k_input(columns[0], settings, [(original.prompt, original.system), (perturbed.prompt, perturbed.system)],
                default=20 if settings.sampler.backend != "simulated" else 40, key="one_k")
    n_resamples = columns[1].number_input("Permutations B", 10, 100_000, 1000, step=100, key="one_b")
    alpha = columns[2].select_slider("α", [0.001, 0.01, 0.05, 0.1], 0.05, key="one_alpha")
    columns = st.columns([1, 2])
    similarity = columns[0].selectbox("Similarity", SIMILARITIES, key="one_similarity")
    discrepancy = columns[1].selectbox("Discrepancy ω", DISCREPANCY_NAMES, key="one_discrepancy",
                                       format_func=lambda d: f"{d} ({get_discrepancy(d).label})")
    symbol = discrepancy_symbol(discrepancy)  # as cards, axes and reports name it ("JSD")
    st.caption(get_discrepancy(discrepancy).reading)
    sequential = st.toggle("Sequential: draw in batches and stop as soon as the answer is clear (k is the most "
                           "drawn per arm)", key="one_sequential")
    batch = int(st.number_input("Samples per arm between looks", 2, 100, 10, key="one_batch")) if sequential else None
    cost_note(settings, [original.prompt, perturbed.prompt], k)
    projection = st.radio("2-D view", ["pca", "umap"], horizontal=True, key="one_projection",
                          format_func={"pca": "PCA (instant)", "umap": "UMAP (slower; its first use compiles)"}.get)

    test = dict(k=int(k), n_resamples=int(n_resamples), similarity=similarity, discrepancy=discrepancy,
                alpha=alpha, sequential=SequentialPlan(k_max=int(k), batch_size=batch) if sequential else None)
    one = (scenario_request(settings, scenario, [perturbation.id], **test) if source == "From a scenario"
           else typed_request(settings, original, perturbed, **test))
    inputs = request_inputs(one)
    if st.button("Run the test", type="primary", key="one_run"):
        label = "Sampling until the answer is clear" if sequential else "Sampling"
        keep("one_result", inputs, Audited.of_request(one, 0, family(settings, one, label=label,
                                                                     live=one.perturbations[0].id)))
    with result_area("one_result", inputs, how_to_update="Press **Run the test** to update it.") as shown:
        audited = shown.result
        result = audited.result if audited is not None else None
        if result is None:
            st.caption("Press **Run the test** to sample both arms (samples are cached: a second run is instant).")
        else:
            provenance(audited.request)
            if result.test.kind == "sequential":
                sequential_strip(result.test, label=symbol, key="one", current=shown.current)
            else:
                result_strip(result.test, alpha, label=symbol, current=shown.current)
            if result.true_effect is not None and settings.sampler.backend == "simulated":
                st.caption(f"Simulated ground truth: the perturbation moves {format_percent(result.true_effect)} of the "
                           f"answer content ({'a real change' if result.true_effect else 'no change at all'}).")
            coordinates = clouds(result.original, result.perturbed, method=projection, key="one_clouds",
                                 seed=settings.seed)
            if result.test.kind == "fixed":
                null_and_similarities(result.test, label=symbol, key="one")
            changed = what_changed(audited, key="one", declared=declares_change(result.test, alpha),
                                   coordinates=coordinates, method=projection)
            result_downloads(result.test, alpha=alpha, label=symbol, name="audit_result",
                             title="DBPA audit of one perturbation", current=shown.current, explanation=changed,
                             inputs=inputs, original_prompt=result.original.prompt,
                             perturbed_prompt=result.perturbed.prompt, original_system_prompt=result.original.system,
                             perturbed_system_prompt=result.perturbed.system, true_effect=result.true_effect,
                             original_texts=list(result.original.texts),
                             perturbed_texts=list(result.perturbed.texts), **report_settings(settings))
