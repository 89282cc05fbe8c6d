"""Alignment with a reference model: one prompt, several models against a reference (paper Fig. 3)."""

import streamlit as st

from dbpa_core.audit.experiments import alignment_family
from dbpa_core.audit.request import Prompt
from dbpa_core.present.tables import alignment_table
from dbpa_core.present.figures import discrepancy_bars
from dbpa_core.present.readings import read_family
from dbpa_app.ui.components import cost_note, family_downloads, guard, show_prompt, show_table
from dbpa_app.ui.freshness import keep, requests_inputs, result_area
from dbpa_app.ui.models import model_options
from dbpa_app.ui.paper import paper_or_live
from dbpa_app.ui.resources import scenarios
from dbpa_app.ui.runs import family, models_request
from dbpa_app.ui.sidebar import current_settings

settings = current_settings()
st.title("Alignment with a reference model")
st.write("Is each model's answer distribution the same as the reference model's for one prompt? A small ω and a "
         "large p mean the model answers like the reference.")

with guard():
    paper_or_live("align", "fig3", "Sample now: one prompt, the models below", settings.seed)
    all_scenarios = scenarios()
    scenario = all_scenarios[st.selectbox("Prompt from scenario", list(all_scenarios), key="align_scenario",
                                          format_func=lambda s: all_scenarios[s].title)]
    show_prompt("Prompt sent to every model", scenario.prompt, scenario.system)
    options = model_options(settings)
    reference = st.selectbox("Reference model", list(options), index=list(options).index("recorded SmolLM2 T=0.7"),
                             key="align_reference")
    others = st.multiselect("Models to compare", [o for o in options if o != reference],
                            default=["simulated T=0.5", "simulated T=1.0"], key="align_models")
    columns = st.columns(3)
    k = int(columns[0].number_input("Samples per model k", 2, 200, 20, key="align_k"))
    n_resamples = int(columns[1].number_input("Permutations B", 50, 10_000, 1000, step=50, key="align_b"))
    alpha = columns[2].select_slider("Family-wise α", [0.01, 0.05, 0.1], 0.05, key="align_alpha")
    if not others:
        raise ValueError("Choose at least one model to compare with the reference.")

    compared = {name: options[name] for name in (reference, *others)}  # each model's own sampler
    cost_note(settings, [scenario.prompt], k, models=compared)
    prompt = Prompt(scenario.prompt, scenario.system)
    requests = {name: models_request(settings, prompt, options[reference], options[name], label=name, k=k,
                                     n_resamples=n_resamples) for name in others}
    inputs = requests_inputs(requests.values(), reference=reference, models=others)
    if st.button("Compare", type="primary", key="align_run"):
        results = [family(settings, request, label=f"Sampling {reference} and {name}",
                          k_label="Samples per model k").results[0] for name, request in requests.items()]
        keep("align", inputs, alignment_family(results, settings={"reference": reference}))

    with result_area("align", inputs, how_to_update="Press **Compare** to update it.") as shown:
        if shown.result is not None:
            comparison = shown.result.recorrected("bonferroni", alpha)  # α only re-reads the same p-values
            table = alignment_table(comparison)
            st.caption("Outputs: reference " + comparison.settings["reference"] + " against "
                       + ", ".join(r.label for r in comparison.results)
                       + ". Simulated models write synthetic text.")
            st.plotly_chart(discrepancy_bars(table["model"], table["ω (JSD)"], comparison.adjusted.pvalues_adjusted,
                                             alpha=alpha, label="JSD",
                                             title=f"ω of each model against {comparison.settings['reference']}"),
                            width="stretch", key="align_bars")
            st.caption("Blue bars: the model's answers differ significantly from the reference's after Bonferroni "
                       "correction; grey: no difference shown at this sample size. "
                       + read_family(comparison.adjusted.n_rejected, len(comparison.results), alpha, "bonferroni",
                                     noun="model", claim="declared to answer differently from the reference",
                                     n_resamples=comparison.results[0].test.n_resamples,
                                     exact=comparison.results[0].test.exact))
            show_table(table)
            family_downloads(comparison, settings, name="alignment", current=shown.current,
                             models=compared)
