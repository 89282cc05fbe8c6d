"""Persona study: personas × models grid of ω with significance stars (paper Table 2)."""

import streamlit as st

from dbpa_core import significance_stars
from dbpa_core.audit.experiments import persona_grid
from dbpa_core.present.csv_inputs import family_inputs
from dbpa_core.present.records import persona_record
from dbpa_core.present.figures import persona_grid as persona_grid_figure
from dbpa_core.present.formatting import discrepancy_symbol
from dbpa_app.ui.components import cost_note, downloads, guard, report_settings, show_table
from dbpa_app.ui.freshness import keep, requests_inputs, result_area
from dbpa_app.ui.models import model_options, with_model
from dbpa_app.ui.paper import paper_or_live
from dbpa_app.ui.resources import scenarios
from dbpa_app.ui.runs import RunProgress, family, scenario_request
from dbpa_app.ui.sidebar import current_settings

settings = current_settings()
st.title("Persona study")
st.write("Does asking the model to *act as* someone change its CVD advice? Medical personas should not; comedians, "
         "robots, reviewers and children should. On the paper's responses each persona is tested against the doctor "
         "persona (the paper's baseline, answers given without a role, is not shipped); sampled live, each persona "
         "prompt is tested against the prompt without a persona, for each model.")

with guard():
    paper_or_live("persona", "table2", "Sample now: the models below, through the sidebar's backends", settings.seed)
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

    cost_note(settings, [scenario.prompt] + [scenario.apply(p)[0] for p in personas], k,
              models={name: options[name] for name in models})

    def request_of(name):
        model = with_model(settings, options[name])
        return model, scenario_request(model, scenario, [p.id for p in personas], k=k, n_resamples=n_resamples,
                                       discrepancy=discrepancy)

    inputs = requests_inputs([request_of(name)[1] for name in models], models=models)
    if st.button("Run the study", type="primary", key="persona_run"):
        with RunProgress("Persona study", len(models)) as progress:

            def run_family(name):
                result = family(*request_of(name), progress=progress)
                progress.next_step()
                return result

            keep("persona", inputs, persona_grid(run_family, models, discrepancy=discrepancy))

    with result_area("persona", inputs, how_to_update="Press **Run the study** to update it.") as shown:
        grid = shown.result
        if grid is not None:
            st.caption("Outputs: " + "; ".join(grid.models) + ". Recorded = real SmolLM2-135M answers; simulated = "
                       "synthetic text whose persona effects hold by construction.")
            stars = [[significance_stars(p) for p in row] for row in grid.pvalues]
            symbol = discrepancy_symbol(grid.discrepancy)  # "JSD", not "ω": the paper view's ω is the JS distance
            st.plotly_chart(persona_grid_figure(grid.statistics, stars, list(grid.personas), list(grid.models),
                                                label=symbol), width="stretch", key="persona_grid")
            st.caption("Darker cells: the persona moved the answers further from the no-persona answers. Stars "
                       "mark unadjusted significance (* p < 0.05, ** p < 0.01, *** p < 0.001), as in the paper's "
                       "table.")
            drawn_by = {m: options[m] for m in grid.models if m in options}  # the result's models, as drawn
            record = persona_record(grid, settings=report_settings(settings, models=drawn_by),
                                    synthetic={m for m, config in drawn_by.items() if config.backend == "simulated"})
            for sentence in record["readings"]:  # the screen's sentences are the download's
                st.markdown(sentence)
            table = grid.table(statistic_label=symbol)
            show_table(table)
            downloads(table=table, record=record, name="persona_study", current=shown.current,
                      inputs=family_inputs(record))
