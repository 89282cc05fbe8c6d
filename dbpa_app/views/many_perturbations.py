"""Many perturbations: a family with family-wise error control and a sample-size planner."""

import streamlit as st

from dbpa_app.ui.cache import shared
from dbpa_app.ui.changes import what_changed
from dbpa_app.ui.components import (
    cost_note,
    detection_and_control,
    family_downloads,
    guard,
    k_input,
    provenance,
    show_table,
)
from dbpa_app.ui.freshness import keep, request_inputs, result_area
from dbpa_app.ui.resources import scenarios
from dbpa_app.ui.runs import Audited, family_explanations, scenario_request
from dbpa_app.ui.runs import family as run_family
from dbpa_app.ui.sidebar import current_settings
from dbpa_core.present.tables import family_frame
from dbpa_core.present.family_readings import read_uncorrected_fwer
from dbpa_core.present.figures import discrepancy_bars, power_curve, sequential_path
from dbpa_core.present.formatting import discrepancy_symbol, format_percent
from dbpa_core.present.readings import read_family, read_power_check, read_sequential
from dbpa_core.stats.corrections import METHOD_NAMES, METHODS
from dbpa_core.stats.discrepancy import DISCREPANCY_NAMES
from dbpa_core.stats.power import (
    RULE_POWER_AT_63,
    gaussian_shift,
    required_sample_size,
    resamples_for,
    simulate_power,
)

#: Beyond these a check by simulation of the planner (60 audits at each of 4 sample sizes) takes minutes.
MAX_SIMULATED_RESAMPLES, MAX_SIMULATED_K = 20_000, 400
#: The pilot planner's size on this page: ω compared, simulated audits per k, the largest k searched.
PILOT_OMEGAS, PILOT_SIMULATIONS, PILOT_K_MAX = ("jsd", "energy"), 30, 120


def plan_from_pilot(family, *, alpha: float, seed: int) -> None:
    """This run's outputs as a pilot: which ω would detect the change, and at what k (compare_discrepancies)."""
    import pandas as pd

    from dbpa_core.stats.planning import compare_discrepancies

    m = len(family.results)
    pick = st.selectbox("Plan k from these outputs (a pilot) for", range(m), key="many_pilot",
                        format_func=lambda i: family.results[i].label)
    if not st.button("Plan k from these outputs: which ω would detect this change, at what k", key="many_pilot_run"):
        return
    shown = family.results[pick]
    with st.spinner(f"Simulating audits from the pilot ({PILOT_SIMULATIONS} per k, up to k = {PILOT_K_MAX})"):
        plans = compare_discrepancies(shown.original.embeddings, shown.perturbed.embeddings, PILOT_OMEGAS,
                                      alpha=alpha, m=m, n_simulations=PILOT_SIMULATIONS, k_max=PILOT_K_MAX, rng=seed)
    st.dataframe(pd.DataFrame({"ω": list(plans),
                               "planned k per arm": [str(p.k) if p.k is not None else f"> {p.k_max}"
                                                     for p in plans.values()],
                               "share of the pilot's difference kept": [format_percent(p.shrinkage)
                                                                        for p in plans.values()]}),
                 hide_index=True)
    for name, plan in plans.items():
        st.markdown(f"**{name}**: {plan.reading}")


settings = current_settings()
st.title("Many perturbations")
st.write("Test a family of perturbations against one original arm and control the chance of any false alarm.")

with guard():
    all_scenarios = scenarios()
    scenario = all_scenarios[st.selectbox("Scenario", list(all_scenarios), key="many_scenario",
                                          format_func=lambda s: all_scenarios[s].title)]
    chosen = st.multiselect("Perturbations", [p.id for p in scenario.perturbations],
                            default=[p.id for p in scenario.perturbations], key=f"many_chosen_{scenario.id}",
                            format_func=lambda p: f"{scenario.perturbation(p).label} [{scenario.perturbation(p).kind}]")
    columns = st.columns([1, 1, 1, 1.6, 1.2])  # room for "holm-sidak" and "simes-hochberg" at 1024 px
    arms = [(scenario.prompt, scenario.system)] + [scenario.apply(p) for p in chosen]
    k = k_input(columns[0], settings, arms, default=30, key="many_k")
    n_resamples = int(columns[1].number_input("Permutations B", 10, 100_000, 1000, step=100, key="many_b"))
    discrepancy = columns[2].selectbox("ω", DISCREPANCY_NAMES, key="many_discrepancy")
    symbol = discrepancy_symbol(discrepancy)  # as cards, axes and reports name it ("JSD")
    correction = columns[3].selectbox("Correction", list(METHODS), key="many_correction", format_func=METHOD_NAMES.get)
    alpha = columns[4].select_slider("Family-wise α", [0.001, 0.01, 0.05, 0.1], 0.05, key="many_alpha")
    st.caption(f"{METHOD_NAMES[correction]}: controls the {METHODS[correction]}.")
    sequential = st.toggle("Sequential: each perturbation draws in batches and stops on its own (k is the most "
                           "drawn per arm)", key="many_sequential")
    batch = int(st.number_input("Samples per arm between looks", 2, 100, 10, key="many_batch")) if sequential else None

    cost_note(settings, [prompt for prompt, _ in arms], k)
    from dbpa_core.audit.request import SequentialPlan

    # The request whether or not it runs: the result's inputs are its settings (the correction and α of a
    # fixed-k family only re-adjust the same p-values: a change of either re-reads the kept family).
    request = scenario_request(settings, scenario, chosen or None, k=k, n_resamples=n_resamples,
                               discrepancy=discrepancy, correction=correction, alpha=alpha,
                               sequential=SequentialPlan(k_max=k, batch_size=batch) if sequential else None)
    inputs = request_inputs(request, **({} if chosen else {"perturbations": []}))
    if st.button("Run the family", type="primary", key="many_run"):
        if not chosen:
            raise ValueError("Choose at least one perturbation for the family.")
        keep("many_family", inputs, (request, run_family(
            settings, request,
            label=f"Sampling {len(chosen) + 1} arms" + (" until each answer is clear" if sequential else ""))))
    with result_area("many_family", inputs, how_to_update="Press **Run the family** to update it.") as shown:
        if shown.result is not None:
            request, kept = shown.result
            family = kept.recorrected(correction, alpha)  # one object for the screen and every export
            provenance(request)
            table = family_frame(family)
            stops = [r.test for r in family.results] if family.kind == "sequential" else []
            detection_and_control(family)
            show_table(table)
            m = len(family.results)
            st.caption(read_uncorrected_fwer(alpha, m) + " "
                       + read_family(family.adjusted.n_rejected, m, alpha, correction,
                                     n_resamples=None if stops else family.results[0].test.n_resamples,
                                     exact=not stops and family.results[0].test.exact))
            st.plotly_chart(discrepancy_bars(table["perturbation"], [r.test.statistic for r in family.results],
                                             family.adjusted.pvalues_adjusted,
                                             alpha=alpha, title="ω per perturbation (blue: significant after "
                                                                "correction)", label=symbol),
                            width="stretch", key="many_bars")
            if stops:
                drawn, budget = sum(test.n_per_arm for test in stops), sum(test.k_max for test in stops)
                st.caption(f"Each perturbation stopped on its own: {drawn} of at most {budget} perturbed samples "
                           f"drawn. Each test ran at α/m = {alpha / m:.3g}; by the union bound (Bonferroni), the "
                           f"chance of any false alarm stays ≤ {alpha:g} whenever each test stops.")
                with st.expander("Where each perturbation stopped"):
                    for result in family.results:
                        st.caption(f"**{result.label}**: {read_sequential(result.test)}")
                    shown_path = st.selectbox("Path of", range(m), key="many_path",
                                              format_func=lambda i: family.results[i].label)
                    st.plotly_chart(sequential_path(family.results[shown_path].test, label=symbol),
                                    width="stretch", key="many_path_figure")
            explanations = None
            if st.toggle("What changed: the themes of the answers whose share moved, per perturbation, on screen "
                         "and in the downloads", key="many_explain",
                         help="The answers are grouped by meaning into themes; each theme's share is compared "
                              "between the original and the perturbed answers. In a SPEC file: `explain: true`."):
                pick = st.selectbox("What changed in", range(m), key="many_explained",
                                    format_func=lambda i: family.results[i].label)
                changed = what_changed(Audited.of_request(request, pick, family), key="many",
                                       declared=bool(family.adjusted.reject[pick]), seed=settings.seed,
                                       same_picture=False)
                explanations = family_explanations(Audited.of_request(request, pick, family), fdr=changed.fdr)
            family_downloads(family, settings, name="family", current=shown.current, explanations=explanations,
                             request=request)
            plan_from_pilot(family, alpha=alpha, seed=settings.seed)

    st.subheader("Sample-size planner")
    st.write("How many samples per arm to detect an effect in a family of m perturbations (paper §3.2).")
    st.caption("A plan for DBPA itself from outputs you have: run the family on a small k, then use **Plan k from "
               "these outputs** above (dbpa_core.plan_sample_size).")
    columns = st.columns(4)
    effect = columns[0].number_input("Effect size (Cohen's d)", 0.05, 5.0, 0.5, 0.05, key="plan_effect",
                                     help="The shift of the outputs' mean, in standard deviations of one output: "
                                          "0.2 small, 0.5 medium, 0.8 large.")
    power = columns[1].slider("Power 1 − β", 0.5, 0.99, 0.8, key="plan_power")
    m = int(columns[2].number_input("Perturbations m", 1, 1000, max(1, len(chosen)), key="plan_m"))
    plan_alpha = columns[3].select_slider("α", [0.001, 0.01, 0.05, 0.1], 0.05, key="plan_alpha")
    needed = required_sample_size(effect, alpha=plan_alpha, power=power, m=m)
    st.metric("Samples per arm k needed", needed)
    st.caption(f"To detect a shift of {effect:g} standard deviations with probability {format_percent(power)} while "
               f"testing {m} perturbations at family-wise α = {plan_alpha:g}, a z-test needs about {needed} outputs "
               "per arm (k = 2((z₁₋α/(2m) + z₁₋β)/d)², the paper's z-test approximation, given up to its "
               "constant). Measured at d = 0.5, k = 63 on a normal shift along one axis, DBPA met it with the energy "
               f"distance ({format_percent(RULE_POWER_AT_63['energy', 1])} of simulated audits) but not with the "
               f"paper's JS distance ({format_percent(RULE_POWER_AT_63['js_distance', 1])}; "
               f"{format_percent(RULE_POWER_AT_63['js_distance', 16])} in 16-D) — check the plan by simulation.")
    plan_resamples = resamples_for(plan_alpha / m)
    sizes = sorted({max(2, needed // 4), max(2, needed // 2), needed, needed * 2})
    if plan_resamples > MAX_SIMULATED_RESAMPLES or sizes[-1] > MAX_SIMULATED_K:
        st.caption(f"No simulation for this plan: α/m = {plan_alpha / m:.2g} (B = {plan_resamples:,} re-splits) or "
                   f"k up to {sizes[-1]} (twice the plan) is beyond what a check by simulation can do here in "
                   "reasonable time.")
    elif st.button("Check by simulation", key="plan_simulate"):
        plan = dict(sample_sizes=sizes, generator=gaussian_shift(effect, dim=1), n_trials=60,
                    alpha=plan_alpha / m, n_resamples=plan_resamples, rng=settings.seed)

        def simulate():
            bar = st.progress(0.0, text="Simulating audits")
            simulated = simulate_power(**plan, progress=lambda f: bar.progress(f))
            bar.empty()
            return simulated

        inputs = (*sorted((k, v) for k, v in plan.items() if k != "generator"), ("shift", effect))
        curve = shared("power", inputs, simulate)  # computed once per plan, for everyone
        st.plotly_chart(power_curve(curve, target_power=power), width="stretch", key="plan_curve")
        st.markdown(read_power_check(curve, needed, power))
        st.caption(f"Each point is the share of simulated audits that reject at α/m = {plan_alpha / m:.2g} "
                   f"(B = {plan_resamples:,} re-splits): two arms of k outputs, one a normal shift of {effect:g} "
                   "standard deviations from the other, tested by DBPA with the energy distance; bars are 95 % "
                   "intervals.")

