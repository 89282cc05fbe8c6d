"""Persona study: personas × models grid of ω with significance stars (paper Table 2)."""

import numpy as np
import pandas as pd
import streamlit as st

from dbpa_core import significance_stars
from dbpa_core.present.figures import persona_grid
from ui.components import cost_note, downloads, guard
from ui.runs import scenario_family
from ui.models import model_options, with_model
from ui.resources import scenarios

settings = st.session_state["settings"]
st.title("Persona study")
st.write("Does asking the model to *act as* someone change its CVD advice? Medical personas should not; comedians, "
         "robots, reviewers and children should. Each cell tests one persona prompt against the prompt without a "
         "persona, for one model.")

with guard():
    scenario = scenarios()["cvd_nice"]
    personas = [p for p in scenario.perturbations if p.group == "persona"]
    options = model_options(settings)
    models = st.multiselect("Models", list(options), default=["recorded SmolLM2 T=0.7", "simulated T=1.0"],
                            key="persona_models")
    columns = st.columns(3)
    k = int(columns[0].number_input("Samples per arm k", 2, 200, 20, key="persona_k",
                                    help="Recorded samples hold 20 per arm."))
    n_resamples = int(columns[1].number_input("Permutations B", 50, 10_000, 1000, step=50, key="persona_b"))
    discrepancy = columns[2].selectbox("ω", ["jsd", "js_distance", "energy"], key="persona_discrepancy")
    if not models:
        raise ValueError("Choose at least one model.")

    cost_note(settings, ([scenario.prompt] + [scenario.apply(p)[0] for p in personas]) * len(models), k)
    if st.button("Run the study", type="primary", key="persona_run"):
        statistics = np.zeros((len(personas), len(models)))
        pvalues = np.ones_like(statistics)
        for column, name in enumerate(models):
            family = scenario_family(with_model(settings, options[name]), scenario, [p.id for p in personas], k=k,
                                     n_resamples=n_resamples, discrepancy=discrepancy)
            statistics[:, column] = [r.test.statistic for r in family.results]
            pvalues[:, column] = [r.test.pvalue for r in family.results]
        st.session_state["persona_result"] = (models, statistics, pvalues, discrepancy)

    stored = st.session_state.get("persona_result")
    if stored is not None:
        used_models, statistics, pvalues, used_discrepancy = stored
        stars = [[significance_stars(p) for p in row] for row in pvalues]
        rows = [p.label.removeprefix("Act as ").rstrip(".") for p in personas]
        st.plotly_chart(persona_grid(statistics, stars, rows, used_models, label=used_discrepancy), width="stretch",
                        key="persona_grid")
        st.caption("Darker cells: the persona moved the answers further from the no-persona answers. Stars mark "
                   "unadjusted significance (* p < 0.05, ** p < 0.01, *** p < 0.001), as in the paper's table.")
        table = pd.DataFrame({"persona": rows, "kind": [p.kind for p in personas]})
        for column, name in enumerate(used_models):
            table[f"ω {name}"] = statistics[:, column]
            table[f"p {name}"] = pvalues[:, column]
        st.dataframe(table, hide_index=True, width="stretch")
        downloads(table=table, name="persona_study")
