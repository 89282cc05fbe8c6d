"""The home page's sections after its controls: 02 outputs and null, why one output is not enough (paper §2.2), 03 the family.

Drawn from the family the page ran (:func:`ui.runs.family`); the test of an
arm's two halves is shared like every derived view (:func:`ui.runs.self_comparison`).
"""

from __future__ import annotations

import streamlit as st

from dbpa_core.present.formatting import format_pvalue
from dbpa_core.present.readings import null_splits, read_family
from dbpa_core.stats.similarity import embedding_similarity_matrix

from .components import detection_and_control, family_downloads, show_table
from .exposition import exposition_table, missed_notes


def outputs_and_null_section(result, request, alpha, statistic, inputs, seed, beside, draw_strip) -> None:
    """Section 02: the clouds and the null (streamed in place on **Stream**), the strip, the numbers read."""
    from dbpa_core.present.figures import null_histogram

    from .cache import shared_figure
    from .components import clouds
    from .exposition import STATISTICS, show_result, stream_in_place
    from .lesson import presenting

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


def one_output_is_not_enough(result, request, alpha: float) -> None:
    """Two outputs of the same prompt differ, and the test of x₀'s two halves finds nothing (paper §2.2)."""
    from .runs import self_comparison

    original = result.original
    same = self_comparison(original, request)
    with st.expander("Why one output is not enough (paper §2.2)"):
        first, second = st.columns(2)
        similarity = float(embedding_similarity_matrix(original.embeddings[:2], "cosine")[0, 1])
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


def family_section(family, settings, request, *, label: str, simulated: bool, k: int, alpha: float,
                   explanations) -> None:
    """Section 03: the family with Bonferroni, its table, notes and downloads (``explanations()`` gives the
    "what changed" of every perturbation, computed when the downloads are drawn)."""
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
    explained = explanations() if st.session_state.get("home_show_changed") else None
    family_downloads(family, settings, name="family", explanations=explained, request=request)


def preset_times(slot, request, sizes) -> None:
    """Say under the k presets how long each would take here, before it is pressed (issue 45: k = 200 took 11 s
    with nothing said until it had started); a preset under the announcement threshold is not mentioned."""
    import dataclasses

    from dbpa_app.ui.timing import request_time

    said = []
    for size in sizes:
        if size != request.k:
            estimate = request_time(dataclasses.replace(request, k=size))
            if estimate.announced:
                said.append(f"k = {size}: {estimate.reading()}")
    if said:
        slot.caption(" · ".join(said))
