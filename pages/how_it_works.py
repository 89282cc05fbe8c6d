"""How it works: the interactive exposition of DBPA (home page)."""

import dataclasses
import time

import streamlit as st

settings = st.session_state["settings"]
st.title("Did the intervention change what the model says?")
st.write(
    "**Distribution-based perturbation analysis** (DBPA) samples many outputs for an original prompt *x* and a "
    "perturbed prompt *x′*, embeds them, compares the similarity distributions within and across the two arms, "
    "and asks a permutation test how surprising that difference is if the intervention changed nothing."
)

# The statistics stack is imported after the title is drawn: on a cold start
# its imports take seconds, and the page should not be blank meanwhile.
from dbpa_core.present.readings import family_table  # noqa: E402
from ui.components import clouds, family_downloads, guard, result_strip, show_prompt  # noqa: E402
from ui.runs import compare_pair, scenario_family  # noqa: E402
from ui.resources import scenarios  # noqa: E402

with guard():
    controls = st.columns([2, 1, 1, 1])
    all_scenarios = scenarios()
    scenario_id = controls[0].selectbox("Scenario", list(all_scenarios), index=list(all_scenarios).index(
        "seasons_question"), format_func=lambda s: all_scenarios[s].title, key="home_scenario")
    k = controls[1].slider("Samples per arm N", 5, 100, 40, key="home_k")
    alpha = controls[2].select_slider("α", [0.001, 0.005, 0.01, 0.05, 0.1], 0.05, key="home_alpha")
    n_resamples = controls[3].select_slider("Permutations B", [100, 200, 400, 800, 2000, 5000], 800, key="home_b")
    scenario = all_scenarios[scenario_id]
    resample = st.session_state.setdefault("home_resample", 0)
    settings = dataclasses.replace(settings, seed=settings.seed + 1000 * resample)

    st.subheader("01 · Two prompts")
    left, right = st.columns(2)
    with left:
        show_prompt("x₀ · original", scenario.prompt, scenario.system)
    with right:
        perturbation_id = st.selectbox(
            "Intervention", [p.id for p in scenario.perturbations], key="home_perturbation",
            format_func=lambda p: f"{scenario.perturbation(p).label}  "
                                  f"({'should change the answer' if scenario.perturbation(p).is_target else 'should not change it'})")
        perturbation = scenario.perturbation(perturbation_id)
        prompt, system = scenario.apply(perturbation)
        show_prompt("x₁ · perturbed, exactly as sent", prompt, system if system != scenario.system else "")

    result = compare_pair(settings, ("original", scenario.prompt, scenario.system), (perturbation.label, prompt, system),
                          k=k, n_resamples=n_resamples, similarity="cosine", discrepancy="jsd",
                          label=perturbation.label, kind=perturbation.kind,
                          true_effect=scenario.true_effect(perturbation))
    result_strip(result.test, alpha, label="JSD")
    if settings.sampler.backend == "simulated":
        st.caption(f"Ground truth of the simulated model: this intervention moves "
                   f"{result.true_effect:.0%} of the answer-content distribution (total variation)."
                   if result.true_effect else "Ground truth of the simulated model: this intervention changes "
                                              "nothing, so any rejection is a false positive.")
    if st.button("Resample outputs", help="Draw new outputs for both arms (a new seed)."):
        st.session_state["home_resample"] += 1
        st.rerun()

    st.subheader("02 · Outputs and the permutation null")
    left, right = st.columns(2)
    with left:
        clouds(result.original, result.perturbed, method="pca", key="home_clouds", seed=settings.seed)
    with right:
        from dbpa_core.present.figures import null_histogram

        placeholder = st.empty()
        placeholder.plotly_chart(null_histogram(result.test, label="JSD"), width="stretch", key="home_null")
        if st.button("Watch the null build up", help="Replays the re-splits one batch at a time."):
            steps = sorted({max(1, int(result.test.n_resamples * f)) for f in (0.01, 0.03, 0.06, 0.1, 0.2, 0.35, 0.5,
                                                                                0.7, 0.85, 1.0)})
            for shown in steps:
                placeholder.plotly_chart(null_histogram(result.test, shown=shown, label="JSD"),
                                         width="stretch", key=f"home_null_{shown}")
                time.sleep(0.15)
        st.caption("Each grey bar counts random re-splits of the pooled outputs; the dashed line is the observed "
                   "split. Few re-splits beyond the line means a small p-value.")

    st.subheader("03 · A family of perturbations")
    family = scenario_family(settings, scenario, [p.id for p in scenario.perturbations], k=k,
                             n_resamples=n_resamples, alpha=alpha)
    table = family_table([r.label for r in family.results], [r.kind for r in family.results],
                         [r.test.statistic for r in family.results], [r.test.pvalue for r in family.results],
                         family.adjusted)
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={"ω": st.column_config.NumberColumn(format="%.4f"),
                                "p": st.column_config.NumberColumn(format="%.4f"),
                                "p adjusted (bonferroni)": st.column_config.NumberColumn(format="%.4f")})
    st.caption(f"Testing {len(table)} perturbations at α = {alpha:g} each would raise false alarms; Bonferroni "
               f"multiplies each p by {len(table)} so that the chance of *any* false alarm stays below α. "
               f"{family.adjusted.n_rejected} of {len(table)} perturbations change the output distribution.")
    family_downloads(family.recorrected("bonferroni", alpha), settings, name="family")

    st.subheader("04 · The method")
    st.markdown("**Sampling.** Draw $k$ outputs $y_i \\sim S(x)$ and $k$ outputs $y'_i \\sim S(x')$.")
    st.markdown("**Distributions.** Embed every output once; with cosine similarity $s$:")
    st.latex(r"P_0 = \{ s(y_i, y_j) : i < j \}, \qquad P_1 = \{ s(y_i, y'_j) : i, j = 1..k \}")
    st.markdown("**Discrepancy.** The Jensen–Shannon divergence (bits) between the histograms of $P_0$ and $P_1$:")
    st.latex(r"T_{\mathrm{obs}} = \omega(P_0, P_1) = \tfrac12 \mathrm{KL}(P_0 \| M) + \tfrac12 \mathrm{KL}(P_1 \| M),"
             r"\quad M = \tfrac12 (P_0 + P_1)")
    st.markdown("**Permutation test** (Algorithm 1): pool the $2k$ outputs, split them at random $B$ times, "
                "recompute $\\omega$ on the same similarity matrix, and count:")
    st.latex(r"p = \frac{1 + \#\{ b : T_b \ge T_{\mathrm{obs}} \}}{1 + B}")
    st.markdown("**Many perturbations.** With $m$ perturbations, reject when $p \\le \\alpha / m$ (Bonferroni); "
                "the samples needed grow as")
    st.latex(r"k_{\mathrm{adj}} \propto \left( \frac{z_{1-\alpha/(2m)} + z_{1-\beta}}{\omega} \right)^2")
    st.code("""for b in 1..B:
    shuffle the pooled indices; first k -> arm A, rest -> arm B
    T_b = omega(P0(A), P1(A, B))        # re-index the fixed similarity matrix
p = (1 + #{T_b >= T_obs}) / (1 + B)""", language=None)

    st.subheader("Cite")
    st.code("Rauba, P., Wei, Q., & van der Schaar, M. (2025). Statistical Hypothesis Testing for Auditing "
            "Robustness in Language Models. ICML 2025.", language=None, wrap_lines=True)
