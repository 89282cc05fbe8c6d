"""The Stability page's results (the recorded study, a live run) and how one task of a study is drawn.

The recorded study (:func:`dbpa_core.paper.stability.stability_study` on the
shipped searches) and a live run (:func:`dbpa_core.stability.runs.live_runs`
on a user's model and questions) are each computed once per input and shared
by every session (bounded), in the one shared cache (:mod:`ui.cache`): the
live one under a :class:`~ui.runs.RunProgress`.
"""

from __future__ import annotations

import time

import streamlit as st

from dbpa_core.present.formatting import about_duration
from dbpa_core.requests.stability import target_name  # noqa: F401 - the page's label of its own target

from .components import show_table
from .resources import embedder_for, store
from .cache import shared
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

#: The criterion as the paper writes it (the page's intro says it in plain words; this is one click away).  It
#: avoids the word "items": tests/test_browser.py finds the live form's "Items" by its text, hidden blocks included.
NOTATION = r"""
The stability criterion of a model $f_\beta$ at an error rate $r$ (Liu, Li, Cui & Blanchet, §2.2) is the
smallest optimal-transport discrepancy from the distribution $\hat{\mathbb P}$ of the questions as asked to a shifted one
$\mathbb Q$ of (question, weight) pairs whose weighted error rate reaches $r$:

$$
\mathfrak R(\beta, r) = \inf_{\mathbb Q}\ \mathbb M_c(\mathbb Q, \hat{\mathbb P})\quad\text{s.t.}\quad
\mathbb E_{\mathbb Q}[W\,\ell(\beta, Z)] \ge r.
$$

Eq. (1)'s transport cost $c$ prices two moves:

- **rewriting** a question $\hat x$ into $x$: $\theta_1$ per unit of eq. (1)'s distance
  $d(x, \hat x) = (1 - \cos(\Phi(x), \Phi(\hat x))) \cdot \max(\#\mathrm{Token}(x) / \#\mathrm{Token}(\hat x),
  \#\mathrm{Token}(\hat x) / \#\mathrm{Token}(x))$, with $\Phi$ the embedding (the paper prints the cosine
  similarity; here the distance $1 - \cos$, as a cost must be 0 for no change). A rewrite the judge says changes
  the meaning costs $\infty$ (the paper's judge is GPT-4; here a calibrated embedding judge, or an LLM judge on a
  live run);
- **re-weighting** which questions are asked: $\theta_2\,(\phi(w) - \phi(\hat w))_+$ with
  $\phi(w) = w \log w - w + 1$, i.e. $\theta_2$ per unit of KL divergence.

$\theta_1, \theta_2 \ge 0$ with $1/\theta_1 + 1/\theta_2 = c$; here $c = 1$, so $\theta_1 = \theta_2 = 2$ at the
verdicts' setting ($r$ = 50 %). $\theta_1 = \infty$ leaves only re-weighting, $\theta_2 = \infty$ only rewriting.
Higher $\mathfrak R$: more stable. With $K$ candidate rewrites $x_1, \dots, x_K$ of each item it is solved by
its dual (§2.4):

$$
\mathfrak R(\beta, r) = \sup_{h \ge 0}\ h r - \theta_2 \log \mathbb E_{\mathbb P_0}\Big[\exp\Big(
\frac{\ell_{h, \theta_1}(\hat Z)}{\theta_2}\Big)\Big],
$$

$$
\ell_{h, \theta_1}(\hat z) = \max_k\ h\,\ell(f_\beta(x_k), \hat y) - \theta_1\, d(x_k, \hat x).
$$

The candidates come from a tree-of-attack search (§2.4): an assistant model proposes rewrites round after round,
the judge keeps those with the same meaning, the target answers them. Table 1 counts the share of questions a
kept rewrite breaks (Adversarial %) and the target's queries per success (# Avg. Queries); Figure 1 (§3) draws
$\mathfrak R$ against $\theta_1/\theta_2$ at $r$ = 50 % and against $r$ at $\theta_1 = \theta_2 = 2$.
"""


def recorded_study(cost: str, n_resamples: int, seed: int):
    """The study of the shipped searches (``n_resamples = 0``: no bootstrap, a fraction of a second), run as
    ``dbpa stability`` runs a recorded SPEC (:class:`~dbpa_core.requests.stability.StabilityRequest`), shared
    by every session; the bootstrap under a :class:`TimedBar` that says its time before it starts."""
    from dbpa_core.requests.dispatch import run
    from dbpa_core.requests.stability import StabilityRequest
    from dbpa_core.stability.runs import TARGETS
    from dbpa_core.stability.tasks import TASKS

    request = StabilityRequest(cost=cost, n_resamples=n_resamples, seed=seed)

    def compute():
        if n_resamples == 0:
            with st.spinner("Table 1 and Figure 1 from the recorded searches…"):
                return run(request).study
        from .timing import announced

        estimate = bootstrap_time(n_resamples, len(TARGETS) * len(TASKS))
        with TimedBar("Bootstrap of the items", estimate, groups=len(TASKS)) as bar, announced(estimate):
            return run(request, progress=bar.bootstrap).study

    return shared("stability_recorded", request, compute)


def bootstrap_time(n_resamples: int, n_targets: int):
    """The :class:`~dbpa_core.audit.timing.TimeEstimate` of a study's bootstrap here (every target re-solved on
    each resample), from the measured cost of one solve, this machine's learnt ratio and its load now."""
    from dbpa_core.audit.timing import bootstrap_estimate, load_factor

    from .timing import throughput

    return bootstrap_estimate(n_resamples, n_targets, throughput(), load=load_factor())


def live_time(settings, request):
    """The time of a live run, said before it starts: every call of every item and target (an upper bound: a
    search stops at its first failure), then the bootstrap."""
    from dbpa_core.audit.timing import TimeEstimate

    from .timing import calls_time

    targets, rewrites = 1 + len(request.compare), request.n_candidates * request.depth
    calls = calls_time(settings.sampler.backend, len(request.items) * targets * (1 + 2 * rewrites))
    boot = bootstrap_time(request.n_resamples, targets)
    return TimeEstimate(calls.seconds + boot.seconds, key=calls.key, ratio=calls.ratio, load=calls.load)


def elapsed_and_left(started: float, fraction: float) -> str:
    """" · 12 s elapsed, about 30 s left" on a bar (the time left once a little of the run is done)."""
    elapsed = time.monotonic() - started
    text = f" · {elapsed:.0f} s elapsed"
    if elapsed > 1 and 0.02 < fraction < 1:
        text += f", {about_duration(elapsed * (1 - fraction) / fraction)} left"
    return text


def bootstrap_rate() -> str:
    """What the recorded study's B costs here, said beside its input before it is changed (issue 45: B = 1,000
    took 16 s, said only once it had started)."""
    from dbpa_core.stability.runs import TARGETS
    from dbpa_core.stability.tasks import TASKS

    # Per 100 of B, each resampling both tasks (the bar counts tasks × B: "per 100 resamples" read as per 100 of
    # those in the third walk), with one B worked out.
    per_hundred = bootstrap_time(100, len(TARGETS) * len(TASKS)).seconds
    return f"Each 100 of B: about {per_hundred:.1f} s on this machine (B = 1,000: about {10 * per_hundred:.0f} s)."


class TimedBar:
    """A progress bar whose label says the announced time (:func:`ui.timing.with_time`) from its start, then the
    time elapsed and left: the recorded study's bootstrap (no Cancel button: changing B stops it).  ``groups``:
    the tasks resampled one after the other, B times each (the bar counts them all: "2,000" for B = 1,000 read
    as a mistake in the second timed walk)."""

    def __init__(self, label: str, estimate, *, groups: int = 1):
        from .timing import with_time

        self.label, self.started, self.groups = with_time(label, estimate), time.monotonic(), groups
        self._bar = st.progress(0.0, text=self.label)

    def bootstrap(self, update) -> None:
        """The run's progress hook: the bootstrap's resamples (:class:`~dbpa_core.audit.arms.RunUpdate`)."""
        if update.label == "stability: bootstrap":
            fraction = update.done / max(update.total, 1)
            each = f" ({self.groups} tasks × B = {update.total // self.groups:,})" if self.groups > 1 else ""
            self._bar.progress(min(1.0, fraction), text=f"{self.label}: {update.done:,} of {update.total:,} "
                                                        f"resamples{each}{elapsed_and_left(self.started, fraction)}")

    def __enter__(self) -> TimedBar:
        return self

    def __exit__(self, *exc) -> bool:
        self._bar.empty()
        return False


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
        from .timing import announced, with_time

        # Its time said on the bar from the start (issue 45); the bootstrap is the last step.
        estimate = live_time(settings, request)
        steps = 1 + len(request.compare) + (request.n_resamples > 0)
        with RunProgress(with_time("Searching rewrites", estimate), n_steps=steps) as bar, announced(estimate):
            def progress(update):
                fraction = update.done / max(update.total, 1)
                if update.stage == "bootstrap":
                    if update.label == "stability: bootstrap":
                        bar.report(fraction, f"bootstrap: {update.done:,} of {update.total:,} resamples"
                                             f"{elapsed_and_left(bar.started, 0)}")
                    return
                bar.report(fraction, f"{update.label}: {update.done}/{update.total} items"
                                     f"{elapsed_and_left(bar.started, 0)}")
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
    """Table 1 beside the paper's printed one, Figure 1 and the most sensitive items of one task (its verdict,
    :func:`show_verdicts`, is drawn above the tasks: the charts' readings do not spell its order again)."""
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
        column.caption(sr.read_figure(study, task, curve, order_said=True))
    with st.expander("Not in the paper: the θ curve again at r = 75 %"):
        left, _ = st.columns(2)
        left.plotly_chart(stability_figure(study, task, "ratio_high"), width="stretch",
                          key=f"{key}_{task}_ratio_high")
        left.caption(sr.read_high_r_note(study, task) + " " + sr.read_figure(study, task, "ratio_high",
                                                                              order_said=True))

    st.markdown("**Most sensitive items** and their winning rewrites")
    sensitive = sr.sensitive_frame(study, task)
    if len(sensitive):
        # Whole sentences, wrapped: a grid cut every answer after 400 px (issue 29).
        show_table(sensitive)
    st.caption(sr.read_sensitive(study, task))


def show_verdicts(study) -> None:
    """Which model is most stable on each task and how sure: what the ranking means said once, then per task a
    plain verdict first and its numbers after, each read in a sentence (a model alone: why there is no ranking)."""
    from dbpa_core.present import stability_verdicts as sv

    if any(len(study.task_rows(task)) > 1 for task in study.tasks):
        st.caption(sv.read_ranking_basis(study.settings["n_resamples"]))
    for task in study.tasks:
        st.markdown(sv.ranking_verdict(study, task))
        # One caption per task (its numbers, then whether the order holds): the two verdicts fit the first
        # screen at 1280×900 (tests/test_browser.py::test_the_stability_verdict_is_on_the_first_screen).
        numbers = " ".join(line for line in (sv.read_ranking_numbers(study, task), sv.read_supports(study, task),
                                             sv.read_ranking_agreement(study, task)) if line)
        if numbers:
            st.caption(numbers)


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
