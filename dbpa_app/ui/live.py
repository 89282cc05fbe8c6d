"""A draw followed live: outputs appear in the two clouds, P0/P1 and the null as they arrive.

On the local and OpenAI-compatible backends sampling takes seconds to
minutes.  :class:`LiveDraw` follows a run through its one progress hook (the
runner's ``"sample"`` updates, forwarded by :class:`ui.runs.RunProgress`):
each output is shown as soon as the sampler has stored it, and every
redraw is the test on the outputs drawn so far, run exactly as the final
test is run (:func:`dbpa_core.audit.runner.compare_arms`), marked as not the
final result.  The simulated and recorded backends draw in milliseconds and
keep their own views (the home page's Stream replays them).
"""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from dbpa_core.present.formatting import about_duration, counted, discrepancy_symbol

#: Backends whose outputs come from a model as the run goes (the others are computed or replayed at once).
LIVE_BACKENDS = ("local", "openai")
#: Shortest time between two redraws: a redraw embeds, tests and plots, and on the local backend sampling
#: waits for it, so the view is refreshed about once a second, and whenever an arm is complete.
REDRAW_SECONDS = 1.0
#: Height of the live charts (px): three side by side, with Cancel and the bar, fit in a 1280×900 window.
CHART_HEIGHT = 300


def is_live(request) -> bool:
    """Whether ``request`` draws from a model as it runs (local or OpenAI-compatible), in either arm."""
    return any(config.backend in LIVE_BACKENDS for config in (request.sampler, request.sampler_of(True)))


def time_left(n_left: int, n_new: int, elapsed: float, *, more_arms: int = 0) -> str:
    """The time left for the two arms on view, read from the throughput measured so far (outputs per second).

    It is re-read as each output arrives (a batch of long answers may end at once, so it can stand still a
    while); ``more_arms`` other arms drawn after these two are not in it, and it says so.
    """
    then = f" · then {counted(more_arms, 'more arm')} behind the bar" if more_arms else ""
    if n_left <= 0:
        return "all outputs drawn" + then
    if n_new < 2 or elapsed < 2:
        return "measuring the throughput…" + then
    rate = n_new / elapsed
    seconds = n_left / rate
    return (f"{rate:.2g} outputs/s measured · {about_duration(seconds)} left for these two arms (re-read at each "
            f"output){then}")


#: Brings the run's Cancel button (ui.runs.RunProgress), its bar and the live view below them into the window,
#: once per live view: the page may have been scrolled anywhere (the home page draws by itself).  Sent with each
#: redraw, and acted on by the first one that finds the view; the view keeps its full height from its first
#: redraw on, so that the page is tall enough to scroll that far.
_SCROLL = """<script>
(() => {
  const view = "%s";
  if (window.__dbpaLiveScrolled === view) return;
  let tries = 0;
  const go = () => {
    const found = document.querySelectorAll('[class*="st-key-cancel_"]');
    if (!found.length || !document.querySelector('[class*="st-key-' + view + '"]')) {
      if (tries++ < 50) setTimeout(go, 100);
      return;
    }
    window.__dbpaLiveScrolled = view;
    const cancel = found[found.length - 1];
    cancel.style.scrollMarginTop = "4.5rem";  // below Streamlit's fixed header
    cancel.scrollIntoView({block: "start"});
  };
  go();
})();
</script>"""


def _compact(figure, title: str):
    """A live chart ``CHART_HEIGHT`` px high, short title, no legend (the caption names the colours)."""
    return figure.update_layout(title=dict(text=title, font_size=13), height=CHART_HEIGHT,
                                showlegend=False, margin=dict(l=40, r=10, t=40, b=40))


class LiveDraw:
    """The live view of a request with one perturbation: its original and perturbed arms as they arrive.

    Call it with each :class:`~dbpa_core.audit.arms.RunUpdate` (it is a
    :class:`ui.runs.RunProgress` listener); it draws in the place where it was
    created and :meth:`close` removes it.  ``more_arms``: arms of the same
    run drawn after this pair (the time left shown covers the pair only, and
    says how many follow).
    """

    def __init__(self, request, *, embedder, store, more_arms: int = 0):
        from dbpa_core.present.explanation_readings import ARM_NAMES

        self.request = request
        self.arms = ("original", request.perturbations[0].label)
        self.names = ARM_NAMES
        self.k = request.k
        self.more_arms = more_arms  # arms of the family drawn after this pair (not in the time left)
        self.outputs: dict[str, dict[int, str]] = {arm: {} for arm in self.arms}
        self.new = 0  # outputs that came from the model in this run (the throughput's count)
        self.started = time.monotonic()
        self.last_draw = float("-inf")
        self.embedder, self.store = embedder, store
        #: Read by the run's bar (ui.runs.RunProgress), which then shows no estimate of its own.
        self.shows_time_left = True
        self.slot = st.empty()
        self.draw()  # at once: the frame of the view, its counter at 0

    def __call__(self, update) -> None:
        if update.stage != "sample" or update.label not in self.outputs:
            return
        arm = self.outputs[update.label]
        arm[update.index] = update.output
        self.new += not update.stored
        # Redrawn at most once a second, but at once when an arm is complete or a chart can first be drawn
        # (the clouds at two outputs, the null and P0/P1 at two per arm): a chart never waits for the clock.
        if (len(arm) == self.k or self.charts() != self.drawn_charts
                or time.monotonic() - self.last_draw >= REDRAW_SECONDS):
            self.draw()
            self.last_draw = time.monotonic()  # the time spent drawing does not count towards the next redraw

    @property
    def counts(self) -> tuple[int, int]:
        return tuple(len(self.outputs[arm]) for arm in self.arms)

    def charts(self) -> int:
        """How many live charts the outputs so far allow: 0, 1 (the clouds) or 3 (with the null and P0/P1)."""
        n0, n1 = self.counts
        return 3 if min(n0, n1) >= 2 else 1 if n0 + n1 >= 2 else 0

    def _arm(self, label: str, prompt):
        from dbpa_core.audit.results import Arm

        outputs = self.outputs[label]
        texts = tuple(outputs[i] for i in sorted(outputs))
        # Kept in the store: an output is embedded once, here or when its arm is complete.
        vectors = self.embedder.embed(list(texts), store=self.store) if texts else np.empty((0, 0), np.float32)
        return Arm(label, prompt.prompt, prompt.system, texts, vectors)

    def draw(self) -> None:
        """Redraw the view from the outputs drawn so far."""
        from dbpa_core.audit.runner import compare_arms
        from dbpa_core.present.figures import null_histogram, output_clouds, similarity_histograms
        from dbpa_core.present.formatting import format_pvalue, p_relation
        from dbpa_core.present.projection import project

        request = self.request
        n0, n1 = self.counts
        self.drawn_charts = self.charts()
        n_left = 2 * self.k - n0 - n1
        arms = [self._arm(label, prompt) for label, prompt in
                zip(self.arms, (request.original, request.perturbations[0].prompt))]
        with self.slot.container(border=True, key=f"live_{id(self)}_{n0}_{n1}"):
            left = time_left(n_left, self.new, time.monotonic() - self.started, more_arms=self.more_arms)
            st.markdown(f"**Live: {n0} of {self.k} {self.names[0]} and {n1} of {self.k} {self.names[1]} outputs "
                        f"drawn** · {left}")
            # Three short charts side by side: with Cancel and the bar above them they fit in a 1280×900
            # window, so everything that moves is in view while it moves.
            # Each chart in a box of fixed height from the first redraw on: the view does not jump as they come.
            columns = [column.container(height=CHART_HEIGHT + 20, border=False) for column in st.columns(3)]
            if n0 + n1 >= 2:
                coordinates = project(np.vstack([a.embeddings for a in arms if len(a.texts)]), "pca")
                figure = output_clouds(coordinates, (n0, n1), [*arms[0].texts, *arms[1].texts])
                columns[0].plotly_chart(_compact(figure, "Outputs so far (PCA)"), width="stretch",
                                        key=f"live_clouds_{n0}_{n1}")
            if min(n0, n1) >= 2:
                partial = compare_arms(*arms, label=self.arms[1], similarity=request.similarity,
                                       discrepancy=request.discrepancy, n_resamples=request.n_resamples,
                                       rng=np.random.default_rng(request.seed)).test
                p_text = p_relation(format_pvalue(partial.pvalue, partial.n_resamples, exact=partial.exact))
                columns[1].plotly_chart(_compact(null_histogram(partial, label=discrepancy_symbol(request.discrepancy)),
                                                 f"Null so far: p {p_text}"),
                                        width="stretch", key=f"live_null_{n0}_{n1}")
                columns[2].plotly_chart(_compact(similarity_histograms(partial), "P0 (blue) and P1 (red)"),
                                        width="stretch", key=f"live_sims_{n0}_{n1}")
                st.caption(f"On {n0} and {n1} outputs so far, p {p_text}: the share of re-splits at "
                           "least as extreme as the observed one (orange bars). Blue is the original arm, red the "
                           "perturbed one. It settles as outputs arrive; each output is in the store as soon as it "
                           "appears (Cancel keeps it). Not the final result.")
            else:
                columns[1].caption("The permutation null and P0/P1 appear once each arm has two outputs.")
                st.caption("Each output appears as soon as the model has written it and is in the store (Cancel "
                           "keeps it).")
            st.html(_SCROLL % f"live_{id(self)}_", unsafe_allow_javascript=True)

    def close(self) -> None:
        """Remove the view (the page then draws the final result)."""
        self.shows_time_left = False
        self.slot.empty()
