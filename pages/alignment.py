"""Alignment with a reference model: one prompt, several models against a reference (paper Fig. 3)."""

import pandas as pd
import streamlit as st

from dbpa_core import adjust_pvalues, significance_stars
from dbpa_core.present.figures import discrepancy_bars
from ui.components import cost_note, downloads, guard, show_prompt
from ui.runs import compare_pair
from ui.models import model_options, with_model
from ui.resources import scenarios

settings = st.session_state["settings"]
st.title("Alignment with a reference model")
st.write("Is each model's answer distribution the same as the reference model's for one prompt? A small ω and a "
         "large p mean the model answers like the reference.")

with guard():
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

    cost_note(settings, [scenario.prompt] * (len(others) + 1), k)
    if st.button("Compare", type="primary", key="align_run"):
        reference_settings = with_model(settings, options[reference])
        results = [compare_pair(reference_settings, (reference, scenario.prompt, scenario.system),
                                (name, scenario.prompt, scenario.system), k=k, n_resamples=n_resamples,
                                similarity="cosine", discrepancy="jsd", label=name,
                                perturbed_settings=with_model(settings, options[name]))
                   for name in others]
        st.session_state["align_result"] = (reference, results)

    stored = st.session_state.get("align_result")
    if stored is not None:
        reference_name, results = stored
        adjusted = adjust_pvalues([r.test.pvalue for r in results], alpha=alpha)
        table = pd.DataFrame({
            "model": [r.label for r in results],
            "ω (JSD)": [r.test.statistic for r in results],
            "p": [r.test.pvalue for r in results],
            "p adjusted (bonferroni)": adjusted.pvalues_adjusted,
            "stars": [significance_stars(p) for p in adjusted.pvalues_adjusted],
            "aligned with reference": ["no" if reject else "yes (no difference shown)" for reject in adjusted.reject],
        })
        st.plotly_chart(discrepancy_bars(table["model"], table["ω (JSD)"], adjusted.pvalues_adjusted, alpha=alpha,
                                         title=f"ω of each model against {reference_name}", label="JSD"),
                        width="stretch", key="align_bars")
        st.caption("Blue bars: the model's answers differ significantly from the reference's after Bonferroni "
                   "correction; grey: no difference shown at this sample size.")
        st.dataframe(table, hide_index=True, width="stretch")
        downloads(table=table, name="alignment")
