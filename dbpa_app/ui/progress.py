"""The one progress bar of a run (with its Cancel button): every run the app starts reports here.

:meth:`RunProgress.update` receives each :class:`~dbpa_core.audit.runner.RunUpdate`
(the drawn arms included) and forwards it to an optional listener, the one
place a live view (:class:`ui.live.LiveDraw`) can follow a run.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import streamlit as st

from dbpa_core.present.formatting import about_duration

if TYPE_CHECKING:
    from dbpa_core.audit.request import AuditRequest


class RunProgress:
    """One progress bar (and one Cancel button) for a run of many steps, with the time left.

    The time left is extrapolated from the throughput measured so far in this
    run, shown once a run has taken a few seconds; a cached run never shows
    the bar at all.  While a listener shows its own estimate (a live view
    with ``shows_time_left``), the bar shows none: one screen, one estimate.
    ``listener`` (optional) receives every
    :class:`~dbpa_core.audit.runner.RunUpdate` too, the arms as they are drawn
    included: the one place a live view (clouds, null) can follow a run.
    """

    def __init__(self, label: str, n_steps: int = 1, *, listener=None):
        self.label, self.n_steps, self.step = label, max(1, int(n_steps)), 0
        self.listener = listener
        self.started = time.monotonic()
        self.kept = 0  # outputs sampled so far in this run (all in the store)
        self._arm_done: dict[str, int] = {}
        self._request, self._shares = None, {}
        runs = st.session_state["_runs"] = st.session_state.get("_runs", 0) + 1
        self._cancel = st.empty()
        self._cancel.button("Cancel", key=f"cancel_{label}_{runs}", on_click=_cancelled, args=(label,),
                            help="Stop now; every sample drawn so far is kept in the store and reused.")
        self._bar = st.progress(0.0, text=label)
        st.session_state["_drawing"] = {"label": label, "kept": 0}

    def report(self, fraction_of_step: float, text: str) -> None:
        fraction = min(1.0, (self.step + min(1.0, fraction_of_step)) / self.n_steps)
        elapsed = time.monotonic() - self.started
        left = ""
        if elapsed > 3 and 0.02 < fraction < 1 and not getattr(self.listener, "shows_time_left", False):
            seconds = elapsed * (1 - fraction) / fraction
            left = " · almost done" if seconds < 1 else f" · {about_duration(seconds)} left"
        self._bar.progress(fraction, text=f"{self.label}: {text}{left}")

    def track(self, request: AuditRequest) -> None:
        """Measure the next updates against ``request``'s arms (k per arm, or at most k_max when sequential)."""
        self._request, self._shares, self._arm_done = request, {}, {}

    def update(self, update) -> None:
        """The run's progress hook (:class:`dbpa_core.audit.runner.RunUpdate`): samples, embeddings, drawn arms."""
        if update.stage == "sampling":
            before = self._arm_done.get(update.label, 0)
            self._arm_done[update.label] = max(before, update.done)
            self.count_sampled(self.kept + max(0, update.done - before))
        if self.listener is not None:
            self.listener(update)
        if update.stage in ("sample", "drawn"):  # for a live view; the bar moves on "sampling" and "embedding"
            return
        request = self._request
        if request is not None and request.sequential is not None:
            self.report(update.done / request.k, f"{update.text}: {update.done} of at most {request.k} per arm")
            return
        n_arms = len(request.perturbations) + 1 if request is not None else 1
        # Sampling is the first half of an arm's work, embedding the second; simulated and recorded outputs cost
        # nothing to draw, so there embedding is all of it (counting their sampling as half read "about 0 s
        # left" half-way through the last arm's embedding in the timed walk).  Each arm's share only grows, so
        # the bar never goes back when an arm drawn earlier (a live view's pair, drawn first) is read again
        # from the store as the rest of the family is drawn.
        instant = getattr(getattr(request, "sampler", None), "backend", None) in ("simulated", "recorded")
        sampling = 0.0 if instant else 0.5
        if update.stage == "embedding":
            share = sampling + (1 - sampling) * update.done / max(update.total, 1)
        else:
            share = sampling * update.done / max(update.total, 1)
        self._shares[update.label] = max(self._shares.get(update.label, 0.0), min(share, 1.0))
        self.report(min(sum(self._shares.values()), n_arms) / n_arms, f"{update.text} ({update.done}/{update.total})")

    def count_sampled(self, n: int) -> None:
        self.kept = n
        st.session_state["_drawing"] = {"label": self.label, "kept": n}

    def next_step(self) -> None:
        self.step += 1

    def close(self) -> None:
        """Remove the bar and the Cancel button, and a notice that the run before this one stopped."""
        self._bar.empty()
        self._cancel.empty()
        st.session_state.pop("_drawing", None)
        notice = st.session_state.pop("_interrupted_notice", None)
        if notice is not None:
            notice.empty()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        # Closed when the run ends or fails (no leftover bar or Cancel button; guard() shows the error).
        # A Cancel click is not an Exception (Streamlit stops the script with a BaseException): the
        # page is redrawn without the bar, and the sidebar says how many samples were kept.
        if kind is None or issubclass(kind, Exception):
            self.close()
        return False


def _cancelled(label: str) -> None:
    # Runs before the rerun the click causes: a page that draws by itself (the home page) reads it with
    # cancelled_draw() and waits to be asked again instead of resuming at once.
    st.session_state["_cancelled"] = label


def cancelled_draw() -> str | None:
    """The label of the run whose Cancel button caused this rerun, or None (ui.sidebar.interrupted_notice
    moves the click's mark here at the start of each run, so it holds for that run only)."""
    return st.session_state.get("_cancelled_now")
