"""How it works: the interactive exposition of DBPA (home page), panel by panel.

Header, 01 two prompts, 02 outputs and the permutation null (streamed or
replayed in place), why one output is not enough (paper §2.2), 03 a family of
perturbations with Bonferroni, 04 the method (paper §3, Algorithm 1).
"""

import streamlit as st

st.title("Did the intervention change what the model says?")
st.write(
    "**DBPA** (Rauba, Wei & van der Schaar, ICML 2025) draws many outputs for an original prompt *x₀* and a "
    "perturbed prompt *x₁*, embeds them, and asks a permutation test whether the two clouds differ more than chance."
)
from dbpa_app.ui.lesson import LESSON_CSS, lesson_k, verdict_strip  # noqa: E402

st.html(LESSON_CSS)
# The verdict strip: first on the page and sticky (ui.lesson), filled once the result exists and redrawn in
# place while streaming, as the exposition's header kept T, p and the decision in sight while the sliders moved.
strip = st.container(key="verdict").empty()
# The default view's verdict ships with the app (ui.first_verdict): drawn now, before the sidebar and the
# statistics stack, and redrawn below with the page's own result (the same numbers); any other view waits for
# its result.  The sidebar and the rest every page shares come right after it (app.py leaves them to this page).
from dbpa_app.ui.first_verdict import HOME_DEFAULTS, draw_first_verdict  # noqa: E402
from dbpa_app.ui.resources import import_figure_libraries, scenarios, store  # noqa: E402

all_scenarios = scenarios()
settings = draw_first_verdict(strip, st.session_state, all_scenarios)
import_figure_libraries()  # before any figure (issue 31's race), once the verdict is on screen

# The statistics stack is imported after the title is drawn: on a cold start
# its imports take a second, and the page should not be blank meanwhile.
from dbpa_app.ui.changes import what_changed  # noqa: E402
from dbpa_app.ui.components import cost_note, guard, provenance, recorded_cap_note, show_prompt  # noqa: E402
from dbpa_app.ui.exposition import (  # noqa: E402
    STATISTICS,
    home_request,
    load_embedder_in_background,
    scenario_recorded_limit,
    seed_first_view,
    truth_note,
)
from dbpa_app.ui.live import is_live  # noqa: E402
from dbpa_app.ui.runs import Audited, calls_a_paid_api, cancelled_draw, family_explanations  # noqa: E402
from dbpa_app.ui.runs import family as run_family  # noqa: E402
from dbpa_core.present.readings import read_alone_beside_family  # noqa: E402
from dbpa_core.stats.decision import declares_change  # noqa: E402

QUICK_PICKS = 9  # keys 1–9 pick the interventions (every one of the shipped scenarios: the strongest is 6th)


def pick_first_intervention():
    """A new scenario starts on its own first intervention (never the previous scenario's label)."""
    st.session_state["home_perturbation"] = all_scenarios[st.session_state["home_scenario"]].perturbations[0].id


def set_state(key, value):
    st.session_state[key] = value



@st.fragment
def outputs_and_null(result, request, alpha, statistic, inputs, seed, beside="", draw_strip=None):
    """Section 02; streaming reruns only this fragment, the clouds and null in place, the strip at the top."""
    with guard():
        from dbpa_app.ui.home import outputs_and_null_section

        outputs_and_null_section(result, request, alpha, statistic, inputs, seed, beside, draw_strip)


with guard():
    st.session_state.setdefault("home_scenario", HOME_DEFAULTS["home_scenario"])
    scenario = all_scenarios[st.session_state["home_scenario"]]
    if st.session_state.get("home_perturbation") not in [p.id for p in scenario.perturbations]:
        pick_first_intervention()
    limit = scenario_recorded_limit(scenario) if settings.sampler.backend == "recorded" else 200
    if limit < 5:
        raise ValueError("`Backend`: fewer than 5 responses per arm were recorded for this scenario; pick another "
                         "scenario or a live backend in the sidebar.")
    st.session_state["home_k"] = lesson_k(st.session_state.get("home_k"), st.session_state.get("home_k_limit"),
                                          limit)
    st.session_state["home_k_limit"] = limit

    # The lesson's four controls, on the first screen.
    ids = [p.id for p in scenario.perturbations]
    top = st.container(key="lesson_choice").columns([1, 1.25])
    top[0].selectbox("Scenario", list(all_scenarios), format_func=lambda s: all_scenarios[s].title,
                     key="home_scenario", on_change=pick_first_intervention)
    perturbation_id = top[1].selectbox(
        "Intervention", ids, key="home_perturbation",
        format_func=lambda p: f"{ids.index(p) + 1} · {scenario.perturbation(p).label}",
        help="Targets should change the answer; controls should not (the table in 03 says which is which).")
    controls = st.columns([2, 1])
    k = controls[0].slider("Samples per arm k", 5, limit, key="home_k")
    alpha = controls[1].select_slider("α", [0.001, 0.005, 0.01, 0.05, 0.1], HOME_DEFAULTS["home_alpha"],
                                      key="home_alpha")
    picks = st.columns([1.6] + [1] * min(QUICK_PICKS, len(ids)) + [3])
    picks[0].caption(f"Keys 1–{min(QUICK_PICKS, len(ids))} pick:")
    for number, (column, pid) in enumerate(zip(picks[1:1 + QUICK_PICKS], ids), start=1):
        column.button("", icon=f":material/counter_{number}:", key=f"home_pick_{number}", shortcut=str(number),
                      type="tertiary", help=scenario.perturbation(pid).label, on_click=set_state,
                      args=("home_perturbation", pid))
    if settings.sampler.backend == "recorded":
        # At k = the recorded count every recorded output is in use: a Resample replays the same outputs in
        # another order (trial 7 read "Draw new outputs" and saw the same statistic).
        st.caption(recorded_cap_note(limit) + (f" At k = {limit} all of them are in use, so **Resample** replays the "
                                               "same outputs: only the test's re-splits change." if k == limit else ""))
    with st.expander("More settings: the statistic (JSD or centroid T), permutations B, k presets"):
        statistic = st.radio("Statistic", list(STATISTICS), list(STATISTICS).index(HOME_DEFAULTS["home_statistic"]),
                             format_func=lambda s: STATISTICS[s][1], key="home_statistic")
        st.caption("JSD compares the *distributions of pairwise similarities* (within x₀'s outputs against across "
                   "the arms), so it also sees a change in spread or in the mix of answers; the centroid distance "
                   "compares only the *average* output, simpler to picture but blind to changes that keep the "
                   "average.")
        more = st.columns([1, 1])
        n_resamples = more[0].select_slider("Permutations B", [100, 200, 400, 800, 2000, 5000], HOME_DEFAULTS["home_b"],
                                            key="home_b")
        # One button per distinct size: on the recorded backend (20 per prompt) both presets would read "k = 20".
        presets = {min(preset, limit): preset for preset in (200, 40)}
        for column, (size, preset) in zip(more[1].columns(2), sorted(presets.items())):
            column.button(f"k = {size}", key=f"home_n_{preset}", on_click=set_state, args=("home_k", size),
                          width="stretch")
        preset_note = more[1].empty()  # each preset's time, said once the page's own result is drawn
    resample = st.session_state.setdefault("home_resample", HOME_DEFAULTS["home_resample"])

    st.subheader("01 · Two prompts")
    perturbation = scenario.perturbation(perturbation_id)
    prompt, system = scenario.apply(perturbation)
    left, right = st.columns(2)
    with left:
        show_prompt("x₀ · original", scenario.prompt, scenario.system)
    with right:
        show_prompt("x₁ · perturbed, exactly as sent", prompt, system if system != scenario.system else "")

    seed_first_view(str(store().path))
    request = home_request(settings, scenario, k=k, resample=resample, statistic=statistic,
                           n_resamples=n_resamples, alpha=alpha)
    if cancelled_draw() and is_live(request):
        # The page draws by itself: after a Cancel it waits to be asked, instead of resuming at once.
        st.info("Drawing stopped. Every output drawn so far is in the store; continuing starts from there.")
        st.button("Continue drawing", type="primary", key="home_continue")
        st.stop()
    if calls_a_paid_api(settings, request):
        # The page draws by itself on free backends; an API that may bill is called only when asked.
        cost_note(settings, [scenario.prompt] + [scenario.apply(p)[0] for p in scenario.perturbations], k)
        if not st.button(f"Draw from {settings.sampler.model}", type="primary", key="home_draw_api",
                         help="Every output drawn is kept in the store: a later visit reuses it."):
            strip.caption("Nothing has been sent yet: the page draws once you press the button.")
            st.stop()
    # On a live backend the chosen intervention's two arms are drawn first, followed live, then the others.
    family = run_family(settings, request, label="Sampling every arm of the scenario", live=perturbation_id)
    chosen = ids.index(perturbation_id)
    result = family.results[chosen]
    label = STATISTICS[statistic][0]
    simulated = settings.sampler.backend == "simulated"
    inputs = (f"{scenario.title} · {perturbation.label} · k = {k} per arm · B = {n_resamples:,} · {label} · "
              f"sidebar seed {settings.seed}" + (f" · resample {resample}" if resample else ""))

    def draw_strip(shown_result, note=""):
        verdict_strip(strip, shown_result, alpha, intervention=f"{chosen + 1} · {perturbation.label}", label=label,
                      k=len(shown_result.original.texts), note=note, simulated=simulated)

    provenance(request)
    st.caption(truth_note(settings, result))

    # The strip tests this intervention alone (p against α); the family table below, all of them (α/m).
    beside = read_alone_beside_family(result.test.pvalue, alpha, declared_in_family=bool(family.adjusted.reject[chosen]),
                                      m=len(family.results))
    outputs_and_null(result, request, alpha, statistic, inputs, settings.seed, beside, draw_strip)
    shown = Audited.of_request(request, chosen, family)
    fdr = st.session_state.get("home_fdr", 0.1)
    # What changed is one click away (a toggle, not an expander: the panel has expanders of its own).
    if st.toggle("What changed: the themes that moved between the two arms", key="home_show_changed"):
        fdr = what_changed(shown, key="home", declared=declares_change(result.test, alpha), seed=settings.seed).fdr

    from dbpa_app.ui.home import family_section, one_output_is_not_enough

    one_output_is_not_enough(result, request, alpha)
    family_section(family, settings, request, label=label, simulated=simulated, k=k, alpha=alpha,
                   explanations=lambda: family_explanations(shown, fdr=fdr))

    from dbpa_app.ui.lesson import show_method

    show_method(backend=settings.sampler.backend, scenario=scenario, perturbation=perturbation, k=k,
                statistic=statistic, n_resamples=n_resamples, alpha=alpha)
    from dbpa_app.ui.home import preset_times

    preset_times(preset_note, request, sorted(presets))

# After everything is on screen: load MiniLM for whatever the user asks next.
load_embedder_in_background(settings)
