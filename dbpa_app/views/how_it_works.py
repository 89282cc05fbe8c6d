"""How it works: the interactive exposition of DBPA (home page), panel by panel.

Header, 01 two prompts, 02 outputs and the permutation null (streamed or
replayed in place), why one output is not enough (paper §2.2), 03 a family of
perturbations with Bonferroni, 04 the method (paper §3, Algorithm 1).
"""

import streamlit as st

from dbpa_app.ui.sidebar import current_settings

settings = current_settings()
st.title("Did the intervention change what the model says?")
st.write(
    "**DBPA** (Rauba, Wei & van der Schaar, ICML 2025) draws many outputs for an original prompt *x₀* and a "
    "perturbed prompt *x₁*, embeds them, and asks a permutation test whether the two clouds differ more than chance."
)
from dbpa_app.ui.lesson import LESSON_CSS, lesson_k, presenting, verdict_strip  # noqa: E402

st.html(LESSON_CSS)
# The verdict strip: first on the page and sticky (ui.lesson), filled once the result exists and redrawn in
# place while streaming, as the exposition's header kept T, p and the decision in sight while the sliders moved.
strip = st.container(key="verdict").empty()
strip.caption("Testing …")

# The statistics stack is imported after the title is drawn: on a cold start
# its imports take a second, and the page should not be blank meanwhile.
from dbpa_core.present.readings import (declares_change, format_pvalue, null_splits,  # noqa: E402
                                        read_alone_beside_family, read_family)
from dbpa_app.ui.components import (cost_note, detection_and_control, family_downloads, guard,  # noqa: E402
                           provenance, recorded_cap_note, show_prompt, show_table, what_changed)
from dbpa_app.ui.exposition import (STATISTICS, exposition_table, home_request, load_embedder_in_background,  # noqa: E402
                                    missed_notes, scenario_recorded_limit, seed_first_view, show_result,
                                    stream_in_place, truth_note)
from dbpa_app.ui.resources import scenarios, store  # noqa: E402
from dbpa_app.ui.live import is_live  # noqa: E402
from dbpa_app.ui.runs import Audited, calls_a_paid_api, cancelled_draw, family_explanations  # noqa: E402
from dbpa_app.ui.runs import family as run_family  # noqa: E402

all_scenarios = scenarios()
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
        _outputs_and_null(result, request, alpha, statistic, inputs, seed, beside, draw_strip)


def _outputs_and_null(result, request, alpha, statistic, inputs, seed, beside, draw_strip):
    from dbpa_core.present.figures import null_histogram
    from dbpa_app.ui.components import clouds
    from dbpa_app.ui.runs import shared_figure

    label = STATISTICS[statistic][0]
    st.subheader("02 · Outputs and the permutation null")
    buttons = st.columns([1, 1, 1])
    stream = buttons[0].button("Stream", icon=":material/play_arrow:", key="home_stream", shortcut="space",
                               help="Replays the drawn outputs a few at a time: the clouds, the null and the "
                                    "p-value grow as evidence accumulates.")
    if buttons[1].button("Resample", icon=":material/casino:", key="home_resample_button", shortcut="D",
                         help="Draw new outputs for every arm (a new seed)."):
        st.session_state["home_resample"] += 1
        st.rerun(scope="app")
    if request.sampler.backend != "recorded":  # recorded: a Resample replays outputs already embedded
        import dataclasses

        from dbpa_app.ui.timing import request_time

        # Said before it starts (issue 45): a new replicate's outputs, less the embeddings the store holds.
        upcoming = request_time(dataclasses.replace(request, replicate=request.replicate + 1), fresh=True)
        if upcoming.announced:
            buttons[2].caption(f"Resample: {upcoming.reading()}")
    # Presentation mode stacks the two charts full width: larger on a projector.
    left, right = (st.container(), st.container()) if presenting() else st.columns(2)
    cloud_slot, null_slot = left.empty(), right.empty()
    right.caption(f"Grey: {label} on {null_splits(result.test.exact)} (chance); orange: splits at least as extreme "
                  "as observed, whose share is p; dashed: the observed statistic.")
    if stream:
        stream_in_place(result, request, statistic=statistic, seed=seed, slots=(cloud_slot, null_slot),
                        draw_strip=draw_strip)
    # The strip is written here, by the fragment, on every run: a fragment may redraw a container created outside
    # it only if it wrote to it in the last full run (StreamlitInvalidLayoutContextError otherwise).
    draw_strip(result, "")
    with cloud_slot.container():
        clouds(result.original, result.perturbed, method="pca", key="home_clouds", seed=seed)
    null_slot.plotly_chart(shared_figure(null_histogram, result.test, label=label, replay_frames=10),
                           width="stretch", key="home_null")
    with st.expander("The numbers behind the verdict: statistic, effect, p-value, each read"):
        show_result(result, alpha, statistic=statistic, inputs=inputs, beside=beside)


with guard():
    st.session_state.setdefault("home_scenario", "seasons_question")
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
    alpha = controls[1].select_slider("α", [0.001, 0.005, 0.01, 0.05, 0.1], 0.05, key="home_alpha")
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
        statistic = st.radio("Statistic", list(STATISTICS), format_func=lambda s: STATISTICS[s][1],
                             key="home_statistic")
        st.caption("JSD compares the *distributions of pairwise similarities* (within x₀'s outputs against across "
                   "the arms), so it also sees a change in spread or in the mix of answers; the centroid distance "
                   "compares only the *average* output, simpler to picture but blind to changes that keep the "
                   "average.")
        more = st.columns([1, 1])
        n_resamples = more[0].select_slider("Permutations B", [100, 200, 400, 800, 2000, 5000], 800, key="home_b")
        # One button per distinct size: on the recorded backend (20 per prompt) both presets would read "k = 20".
        presets = {min(preset, limit): preset for preset in (200, 40)}
        for column, (size, preset) in zip(more[1].columns(2), sorted(presets.items())):
            column.button(f"k = {size}", key=f"home_n_{preset}", on_click=set_state, args=("home_k", size),
                          width="stretch")
    resample = st.session_state.setdefault("home_resample", 0)

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

    from dbpa_app.ui.runs import self_comparison

    original = result.original
    same = self_comparison(original, request)
    with st.expander("Why one output is not enough (paper §2.2)"):
        first, second = st.columns(2)
        similarity = float(original.embeddings[0] @ original.embeddings[1])
        first.caption("output 1 for x₀")
        first.code(original.texts[0], language=None, wrap_lines=True)
        second.caption("output 2 for the *same* prompt x₀")
        second.code(original.texts[1], language=None, wrap_lines=True)
        half = same.test.n_original
        shown_p = format_pvalue(same.test.pvalue, same.test.n_resamples, exact=same.test.exact)
        st.write(f"Nothing changed between these two outputs, yet they differ (cosine similarity {similarity:.2f}, "
                 f"where 1 means the same meaning). Comparing one output per prompt would mistake this "
                 f"sampling noise for an effect. The test on two halves of x₀'s own outputs ({half} against "
                 f"{half}) gives p {shown_p if shown_p.startswith('≤') else '= ' + shown_p}: "
                 + ("no change declared, as it should be." if same.test.pvalue > alpha else
                    "a false alarm, which happens with probability α when nothing changed."))

    st.subheader("03 · A family of perturbations")
    # The method working at a glance, whichever intervention is picked above: a detection beside a control.
    detection_and_control(family.recorrected("bonferroni", alpha))
    table = exposition_table(family, label=label, simulated=simulated, k=k)
    # A static table: its cells wrap, so every column stays visible at a projector's 1024 px.
    show_table(table)
    m = len(table)
    if simulated:
        for note in missed_notes(family, k):
            st.caption(note)
    st.caption(f"Bonferroni multiplies each p by {m} (capped at 1), so that the chance of *any* false alarm among "
               f"the {m} stays below α. " + read_family(family.adjusted.n_rejected, m, alpha, "bonferroni",
                                                        n_resamples=family.results[0].test.n_resamples,
                                                        exact=family.results[0].test.exact) + " "
               + ("True effect: the share of answer content the simulated model moves, known by construction."
                  if simulated else "The true effects of a real model are unknown."))
    # What changed in each arm goes into the downloads once its panel is open, as on Many perturbations: the
    # clustering took ≈ 1.7 s of a fresh server's first view (sklearn's import included; py-spy, issue 45).
    explained = family_explanations(shown, fdr=fdr) if st.session_state.get("home_show_changed") else None
    family_downloads(family, settings, name="family", explanations=explained, request=request)

    from dbpa_app.ui.lesson import show_method

    show_method(backend=settings.sampler.backend, scenario=scenario, perturbation=perturbation, k=k,
                statistic=statistic, n_resamples=n_resamples, alpha=alpha)

# After everything is on screen: load MiniLM for whatever the user asks next.
load_embedder_in_background(settings)
