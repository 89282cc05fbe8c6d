"""The Stability page's results (the recorded study, a live run) and how one task of a study is drawn.

The recorded study (:func:`dbpa_core.paper.stability.stability_study` on the
shipped searches) and a live run (:func:`dbpa_core.stability.runs.live_runs`
on a user's model and questions) are each computed once per input and shared
by every session (bounded), in the one shared cache (:mod:`ui.cache`): the
live one under a :class:`~ui.runs.RunProgress`.
"""

from __future__ import annotations

import streamlit as st

from dbpa_core.requests.stability import target_name  # noqa: F401 - the page's label of its own target

from .components import show_table
from .resources import embedder_for, store
from .cache import shared, shared_function
from .progress import RunProgress

#: Where the live run's rewrites and verdicts come from: short labels (a selectbox cuts a long chosen value at
#: 1024-1280 px, half a row wide), the whole explanation in the widget's help (:data:`ASSISTANT_HELP`).
ASSISTANTS = {"local": "Packaged SmolLM2 (offline)", "endpoint": "The sidebar's API model"}
JUDGES = {"embedding": "Embedding similarity", "llm": "LLM judge (sidebar's API)"}
#: The perturbation costs (:data:`~dbpa_core.stability.criterion.COSTS`) in words, short enough for their box.
COST_LABELS = {"paper": "The paper's eq. (1)", "cosine_length": "Cosine + length", "cosine": "Cosine only"}
ASSISTANT_HELP = ("Packaged SmolLM2 (offline): the packaged SmolLM2-135M, the recorded study's assistant. The "
                  "sidebar's API model: the OpenAI-compatible model chosen in the sidebar proposes the rewrites.")
JUDGE_HELP = ("Embedding similarity: a rewrite keeps the meaning when its embedding's cosine similarity to the item "
              "as written is at least a threshold calibrated on the shipped labelled pairs. LLM judge: the sidebar's "
              "OpenAI-compatible model answers yes / no.")


@shared_function(spinner="Table 1 and Figure 1 from the recorded searches…")
def recorded_study(cost: str, n_resamples: int, seed: int):
    """The study of the shipped searches (``n_resamples = 0``: no bootstrap, a fraction of a second), run as
    ``dbpa stability`` runs a recorded SPEC (:class:`~dbpa_core.requests.stability.StabilityRequest`)."""
    from dbpa_core.requests.dispatch import run
    from dbpa_core.requests.stability import StabilityRequest

    return run(StabilityRequest(cost=cost, n_resamples=n_resamples, seed=seed)).study


@st.cache_resource(show_spinner="Loading SmolLM2's tokenizer…")
def token_counter():
    """#Token of eq. (1): the packaged SmolLM2's tokenizer (vocabulary only), shared by every session."""
    from dbpa_core.stability.search import smollm2_token_count

    return smollm2_token_count()


def stability_result(settings, request, *, run: bool = True):
    """The :class:`~dbpa_core.requests.stability.StabilityAuditResult` of a request, shared per request key
    (bounded); None when not run for exactly this request and ``run`` is False.

    Run through :func:`dbpa_core.requests.dispatch.run` (as ``dbpa stability``) with the session's key, the
    shared samplers, embedder and tokenizer; a live search shows one progress bar over every item of every
    target (what is in the store is replayed).
    """
    from dbpa_core.requests.dispatch import run as dispatch

    from .requests import session_sampler_for

    def compute():
        if request.source == "recorded":
            return dispatch(request)
        if settings.problem:
            raise ValueError(settings.problem)
        with RunProgress("Searching rewrites", n_steps=1 + len(request.compare)) as bar:
            def progress(update):
                bar.report(update.done / update.total, f"{update.label}: {update.done}/{update.total} items")
                if update.done == update.total:
                    bar.next_step()

            return dispatch(request, store=store(), progress=progress, sampler_for=session_sampler_for(settings),
                            embedder=embedder_for(request.embedder, settings.keys.embedder),
                            token_count=token_counter())

    return shared("stability", request, compute if run else None)


def live_study(settings, request, *, run: bool):
    """The study of a live run (a ``StabilityRequest``), shared per request; None when not run for exactly it."""
    found = stability_result(settings, request, run=run)
    return None if found is None else found.study


def show_task(study, task: str, *, key: str):
    """Table 1 beside the paper's printed one, Figure 1 and the most sensitive items of one task.

    Returns the place beside the r = 75 % chart where :func:`show_ranking`
    draws the ranking finding (the page fills it once the bootstrap is done).
    """
    from dbpa_core.present import stability_report as sr
    from dbpa_core.present.stability_figures import stability_figure

    ours = sr.table1_frame(study, task)
    # One above the other: side by side, each grid cut its last columns at a projector's 1024 px.
    left = right = st.container()
    left.markdown("**Table 1 · ours**")
    # The grid keeps the CSV's numbers and writes them as the readings do ("50 %"): a click on a header sorts
    # by number ("9 %" before "100 %", not after it as text), and a number that is not defined reads "—".
    columns = ["model", sr.TABLE1_SHARES[0], sr.TABLE1_SHARES[1], sr.TABLE1_QUERIES]
    left.dataframe(ours[columns].style.format(sr.table1_formatters(), subset=columns[1:], na_rep=sr.NOT_DEFINED),
                   hide_index=True, width="stretch", key=f"{key}_{task}_table1", placeholder=sr.NOT_DEFINED,
                   column_config={sr.TABLE1_SHARES[0]: st.column_config.Column("error as written")})
    if gaps := sr.read_table1_gaps(ours):
        left.caption(gaps)
    printed = sr.paper_table1_frame(task)
    right.markdown(f"**Table 1 · paper (printed)** · {printed['dataset'].iloc[0]}")
    share, queries = "Adversarial % (paper, printed)", "# Avg. Queries (paper, printed)"
    # As printed, to one decimal, spelt "80.2 %" as every other percentage on the page; sorted by number.
    printed = printed.drop(columns="dataset")
    right.dataframe(printed.style.format({share: lambda v: f"{v * 100:.1f} %", queries: "{:.2f}"}),
                    hide_index=True, width="stretch", key=f"{key}_{task}_paper", placeholder=sr.NOT_DEFINED,
                    # The heading above says "paper (printed)"; the columns keep the paper's own names.
                    column_config={share: st.column_config.Column("Adversarial %"),
                                   queries: st.column_config.Column("# Avg. Queries")})
    for row in study.task_rows(task):
        st.caption(sr.read_table1_row(row))
    st.caption("The paper's models (6–13 B parameters, GPT-4 judge, Vicuna-13B proposing rewrites) are not ours: "
               "its printed numbers give the scale, they are not a row-by-row comparison.")

    st.markdown("**Figure 1** · every model on one chart")
    left, right = st.columns(2)
    for column, curve in ((left, "ratio"), (right, "risk")):
        column.plotly_chart(stability_figure(study, task, curve), width="stretch", key=f"{key}_{task}_{curve}")
        column.caption(sr.read_figure(study, task, curve))
    left, right = st.columns(2)
    left.plotly_chart(stability_figure(study, task, "ratio_high"), width="stretch", key=f"{key}_{task}_ratio_high")
    left.caption(sr.read_high_r_note(study, task) + " " + sr.read_figure(study, task, "ratio_high"))
    ranking = right.container()

    st.markdown("**Most sensitive items** and their winning rewrites")
    sensitive = sr.sensitive_frame(study, task)
    if len(sensitive):
        # Whole sentences, wrapped: a grid cut every answer after 400 px (issue 29).
        show_table(sensitive)
    st.caption(sr.read_sensitive(study, task))
    return ranking


def show_ranking(study, task: str) -> None:
    """Whether the models' curves cross, and how often each keeps its place in the bootstrap."""
    from dbpa_core.present import stability_report as sr

    st.markdown("**Do the rankings cross?**")
    st.write(sr.ranking_finding(study, task))
    rows = study.task_rows(task)
    for row in rows if len(rows) > 1 else ():  # one model "keeps its place" in every resample: nothing to say
        st.caption(sr.read_rank_support(row.target, row.rank_support, study.settings["n_resamples"]))


@st.cache_resource(show_spinner=False)
def recorded_searches():
    """The shipped searches (:func:`dbpa_core.stability.runs.load_searches`), read once per process."""
    from dbpa_core.stability.runs import load_searches

    return load_searches()[1]


def show_searches(task: str, *, key: str) -> None:
    """Browse the recorded searches of one task: pick a model and an item, see its tree of rewrites."""
    from dbpa_core.present import stability_report as sr

    searches = [s for s in recorded_searches() if s.item.task == task]
    from dbpa_core.paper.stability import target_label

    columns = st.columns([3, 2])  # the item, a whole question, gets a row of its own below
    target = columns[0].selectbox("Model", list(dict.fromkeys(s.target for s in searches)), format_func=target_label,
                                  key=f"{key}_{task}_model")
    mine = [s for s in searches if s.target == target]

    def label(i: int) -> str:
        search = mine[i]
        tag = (" · fails as written" if search.original_loss == 1 else
               " · broken by a rewrite" if search.adversarial else " · held")
        return f"{i + 1}. {search.item.prompt[:90]}{tag}"

    # Opens on the first item a rewrite broke: the search worth seeing first.
    first = next((i for i, search in enumerate(mine) if search.adversarial), 0)
    index = st.selectbox("Item", range(len(mine)), index=first, format_func=label, key=f"{key}_{task}_item")
    search = mine[index]
    show_table(sr.search_frame(search))  # whole prompts and answers, wrapped (a grid cut them)
    st.caption(sr.read_search(search) + " Similarity: cosine of the embeddings to the item as written; the judge "
               "keeps a rewrite at or above its calibrated threshold.")
