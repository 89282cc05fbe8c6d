"""TPR / FPR: control vs target perturbations, ROC and the best model at an allowed FPR (paper Figs 1–2)."""

import streamlit as st

from dbpa_app.ui.components import cost_note, downloads, guard, report_settings, show_table
from dbpa_app.ui.freshness import keep, requests_inputs, result_area
from dbpa_app.ui.models import model_options, with_model
from dbpa_app.ui.paper import recorded_or_live, show_best
from dbpa_app.ui.resources import scenarios
from dbpa_app.ui.runs import RunProgress, family, scenario_request
from dbpa_app.ui.sidebar import current_settings
from dbpa_core.audit.experiments import rates_experiment
from dbpa_core.present.csv_inputs import roc_inputs
from dbpa_core.present.records import rates_record
from dbpa_core.present.roc_figures import rates_over_alpha, roc_curves
from dbpa_core.present.formatting import format_percent
from dbpa_core.present.paper_readings import read_chance_aucs

settings = current_settings()
st.title("True and false positives")
st.write("Controls should not change the outputs, targets should. Rejecting at level α, the false-positive rate is "
         "the share of controls flagged and the true-positive rate the share of targets flagged.")

with guard():
    recorded_or_live("roc", "Sample now: the same design (or other scenarios) on the models below", settings.seed)
    all_scenarios = scenarios()
    # The recorded design by default: the paper's cvd_nice patient, its 8 controls and 8 targets.
    chosen_scenarios = st.multiselect("Scenarios (their controls and targets)", list(all_scenarios),
                                      default=["cvd_nice_risk"], key="roc_scenarios",
                                      format_func=lambda s: all_scenarios[s].title)
    options = model_options(settings)
    models = st.multiselect("Models or sampler settings to compare", list(options),
                            default=["simulated T=0.5", "simulated T=1.0", "simulated T=2.0"], key="roc_models")
    columns = st.columns(4)
    k = int(columns[0].number_input("Samples per arm k", 2, 200, 20, key="roc_k"))
    replicates = int(columns[1].number_input("Replicates (seeds)", 1, 10, 1, key="roc_replicates",
                                             help="Each perturbation is tested once per seed: more p-values, "
                                                  "smoother curves."))
    n_resamples = int(columns[2].number_input("Permutations B", 50, 10_000, 500, step=50, key="roc_b"))
    # The allowed FPR only reads the ROC curves already computed: moving it recomputes the banner at once.
    # Percentages, as the paper view's slider and the banner write them (this one read "0.05" beside "5 %").
    max_fpr = columns[3].select_slider("Allowed FPR", [i / 100 for i in range(51)], 0.05, key="roc_max_fpr",
                                       format_func=format_percent)
    if not chosen_scenarios or not models:
        raise ValueError("Choose at least one scenario and one model.")

    prompts = [prompt for s in chosen_scenarios for prompt in
               [all_scenarios[s].prompt] + [all_scenarios[s].apply(p)[0] for p in all_scenarios[s].perturbations]]
    compared = {name: options[name] for name in models}  # each model's own sampler
    cost_note(settings, prompts * replicates, k, models=compared)

    def request_of(name, replicate, scenario_id):
        model = with_model(settings, options[name])
        return model, scenario_request(model, all_scenarios[scenario_id], k=k, n_resamples=n_resamples,
                                       replicate=replicate)

    inputs = requests_inputs([request_of(name, replicate, scenario_id)[1] for name in models
                              for replicate in range(replicates) for scenario_id in chosen_scenarios],
                             scenarios=chosen_scenarios, models=models, replicates=replicates)
    if st.button("Run", type="primary", key="roc_run"):
        from dbpa_app.ui.timing import announced, total_time, with_time

        # Said before it starts (issue 45): every model, scenario and seed, less what the store holds.
        estimate = total_time(scenario_request(with_model(settings, options[name]), all_scenarios[s], k=k,
                                               n_resamples=n_resamples, replicate=r)
                              for name in models for s in chosen_scenarios for r in range(replicates))
        with RunProgress(with_time("Controls and targets", estimate),
                         len(models) * replicates * len(chosen_scenarios)) as progress, announced(estimate):

            def run_family(name, replicate, scenario_id):
                result = family(*request_of(name, replicate, scenario_id), progress=progress)
                progress.next_step()
                return result

            keep("roc", inputs, rates_experiment(run_family, models, chosen_scenarios, replicates=replicates))

    with result_area("roc", inputs, how_to_update="Press **Run** to update it.") as shown:
        comparison = shown.result
        if comparison is not None:
            best = comparison.best_model_at(max_fpr)
            alpha = comparison.rocs[best.model].tpr_at_fpr(max_fpr)[1] if best.model else None
            show_best(best, alpha=alpha, current=shown.current)
            st.caption("Outputs: " + "; ".join(models) + " · the simulated models' texts are synthetic, their "
                       "controls and targets hold by construction.")
            st.plotly_chart(roc_curves(comparison.rocs, max_fpr=max_fpr, best=best.model), width="stretch",
                            key="roc_curve")
            st.caption("Each curve traces (FPR, TPR) as α goes from 0 to 1; the area under it (AUC) is the chance "
                       "that a random target gets a smaller p-value than a random control (0.5 = no better than "
                       "chance).")
            weak = read_chance_aucs({name: roc.auc for name, roc in comparison.rocs.items()},
                                    k=comparison.settings.get("k"))
            if weak:
                st.warning(weak, icon=":material/balance:")
            with st.expander(f"Detection rates against α, every model ({2 * len(comparison.rocs)} lines)"):
                st.plotly_chart(rates_over_alpha(comparison.rocs), width="stretch", key="roc_alpha")
                st.caption("Solid: TPR(α); dashed: FPR(α). A calibrated test keeps FPR(α) near α.")
            table = comparison.summary(max_fpr)
            show_table(table)
            allowed = format_percent(max_fpr)  # the banner's way of writing it
            st.caption(f"Per model: the most targets it flags while flagging at most {allowed} of the controls "
                       "(TPR at FPR ≤ …), and the α — the p-value threshold — that achieves it: declare a change when "
                       f"p ≤ that α. A large α (above the usual 0.05) means the controls' p-values were large, so even "
                       f"a loose threshold flagged at most {allowed} of them; a tiny one, that a control had a small "
                       "p; 0, that no threshold flags a target without flagging too many controls.")
            record = rates_record(comparison, max_fpr, settings=report_settings(settings, models=compared))
            downloads(table=table, record=record, name="roc_summary", current=shown.current, inputs=roc_inputs(record))
