"""TPR / FPR: control vs target perturbations, ROC and the best model at an allowed FPR (paper Figs 1–2)."""

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from dbpa_core import roc_analysis
from dbpa_core.present.figures import rates_over_alpha, roc_curves
from ui.components import cost_note, downloads, guard
from ui.runs import scenario_family
from ui.models import model_options, with_model
from ui.resources import scenarios

settings = st.session_state["settings"]
st.title("True and false positives")
st.write("Controls should not change the outputs, targets should. Rejecting at level α, the false-positive rate is "
         "the share of controls flagged and the true-positive rate the share of targets flagged.")

with guard():
    all_scenarios = scenarios()
    chosen_scenarios = st.multiselect("Scenarios (their controls and targets)", list(all_scenarios),
                                      default=list(all_scenarios), key="roc_scenarios",
                                      format_func=lambda s: all_scenarios[s].title)
    options = model_options(settings)
    models = st.multiselect("Models or sampler settings to compare", list(options),
                            default=["simulated T=0.5", "simulated T=1.0", "simulated T=2.0"], key="roc_models")
    columns = st.columns(4)
    k = int(columns[0].number_input("Samples per arm k", 2, 200, 20, key="roc_k"))
    replicates = int(columns[1].number_input("Replicates (seeds)", 1, 10, 2, key="roc_replicates",
                                             help="Each perturbation is tested once per seed: more p-values, "
                                                  "smoother curves."))
    n_resamples = int(columns[2].number_input("Permutations B", 50, 10_000, 500, step=50, key="roc_b"))
    max_fpr = columns[3].slider("Allowed FPR", 0.0, 0.5, 0.05, 0.01, key="roc_max_fpr")
    if not chosen_scenarios or not models:
        raise ValueError("Choose at least one scenario and one model.")

    prompts = [prompt for s in chosen_scenarios for prompt in
               [all_scenarios[s].prompt] + [all_scenarios[s].apply(p)[0] for p in all_scenarios[s].perturbations]]
    cost_note(settings, prompts * len(models) * replicates, k)
    if st.button("Run", type="primary", key="roc_run"):
        curves, rows = {}, []
        for name in models:
            pvalues, targets = [], []
            for replicate in range(replicates):
                run_settings = dataclasses.replace(with_model(settings, options[name]), seed=settings.seed + replicate)
                for scenario_id in chosen_scenarios:
                    scenario = all_scenarios[scenario_id]
                    family = scenario_family(run_settings, scenario, [p.id for p in scenario.perturbations], k=k,
                                             n_resamples=n_resamples)
                    pvalues += [r.test.pvalue for r in family.results]
                    targets += [r.kind == "target" for r in family.results]
            roc = roc_analysis(pvalues, np.array(targets))
            curves[name] = roc
            tpr, at_alpha = roc.tpr_at_fpr(max_fpr)
            rows.append({"model": name, "AUC": roc.auc, f"TPR at FPR ≤ {max_fpr:g}": tpr, "α achieving it": at_alpha,
                         "targets": roc.n_targets, "controls": roc.n_controls})
        st.session_state["roc_run_result"] = (curves, pd.DataFrame(rows), max_fpr)

    stored = st.session_state.get("roc_run_result")
    if stored is not None:
        curves, table, used_fpr = stored
        best = table.sort_values([table.columns[2], "AUC"], ascending=False).iloc[0]["model"]
        st.success(f"Best model at an allowed FPR of {used_fpr:g}: **{best}** — it flags the largest share of "
                   "target perturbations while keeping false alarms on controls within the allowance.")
        st.plotly_chart(roc_curves(curves, max_fpr=used_fpr, best=best), width="stretch", key="roc_curve")
        st.caption("Each curve traces (FPR, TPR) as α goes from 0 to 1; the area under it (AUC) is the chance that a "
                   "random target gets a smaller p-value than a random control (0.5 = no better than chance).")
        st.plotly_chart(rates_over_alpha(curves), width="stretch", key="roc_alpha")
        st.caption("Solid: TPR(α); dashed: FPR(α). A calibrated test keeps FPR(α) near α.")
        st.dataframe(table, hide_index=True, width="stretch")
        downloads(table=table, name="roc_summary")
