"""The app's thin adapter over :mod:`dbpa_core.audit`: requests, one progress bar, shared bounded caches.

Every page builds an :class:`~dbpa_core.audit.request.AuditRequest` (the
object ``python -m dbpa_core audit`` builds from a SPEC) and calls
:func:`family`.  Results are cached with ``st.cache_data``, keyed by the
request's digest, shared by every session and bounded; a session keeps only
what its user chose.  A request whose samples or embeddings are not all in
the store is run live, outside the cache, under a :class:`RunProgress` (the
one place a run reports progress: :meth:`RunProgress.update` receives each
:class:`~dbpa_core.audit.runner.RunUpdate`, the drawn arms included), and its
result is then put in the cache; sessions asking for the same request
meanwhile wait for it (:func:`one_run_at_a_time`) instead of sampling again.

What pages derive from results — projections, the test of an arm's halves,
figures, an uploaded file's test — is shared the same way, keyed by a digest
of every byte of its inputs (:func:`shared_call`, :func:`shared_figure`), so a
new session of a view anyone has computed costs the server only its rendering.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import threading
import time
from dataclasses import dataclass

import streamlit as st

from dbpa_core.audit.request import AuditRequest, PerturbedPrompt, Prompt, SamplerConfig

from .resources import EmbeddingsOnly, embedder_for, sampler_for, store
from .settings import Settings

#: Results of different requests kept by the shared cache (each a few MB at most: k × 384 floats per arm).
MAX_RESULTS = 128
#: Derived views (projections, self-comparisons, figures, …) kept by the shared caches, per kind of cache.
MAX_VIEWS = 256


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
            left = f" · about {seconds:.0f} s left" if seconds < 120 else f" · about {seconds / 60:.0f} min left"
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
        # Sampling is the first half of an arm's work, embedding the second.  Each arm's share only grows, so
        # the bar never goes back when an arm drawn earlier (a live view's pair, drawn first) is read again
        # from the store as the rest of the family is drawn.
        share = (0.5 if update.stage == "embedding" else 0.0) + 0.5 * update.done / max(update.total, 1)
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


# ----------------------------------------------------------------- requests
def scenario_request(settings: Settings, scenario, perturbation_ids=None, **test) -> AuditRequest:
    """The request of a scenario's perturbations with the sidebar's sampler, embedder and seed."""
    return AuditRequest.from_scenario(scenario, perturbation_ids, sampler=settings.sampler,
                                      embedder=settings.embedder, **{"seed": settings.seed, **test})


def typed_request(settings: Settings, original: Prompt, perturbed: Prompt, **test) -> AuditRequest:
    """The request of two typed prompts (no scenario: the true effect is unknown)."""
    return AuditRequest(original, (PerturbedPrompt("perturbed", "perturbed", perturbed),), sampler=settings.sampler,
                        embedder=settings.embedder, **{"seed": settings.seed, **test})


def models_request(settings: Settings, prompt: Prompt, reference: SamplerConfig, other: SamplerConfig, *,
                   label: str, **test) -> AuditRequest:
    """One prompt, another model against a reference model (a system perturbation)."""
    return AuditRequest(prompt, (PerturbedPrompt(label, label, prompt),), sampler=reference, perturbed_sampler=other,
                        embedder=settings.embedder, **{"seed": settings.seed, **test})


# -------------------------------------------------------------------- runs
def _backends(settings: Settings, request: AuditRequest) -> dict:
    """How a request of this session is run: its samplers (with the session's key), embedder and store."""
    if settings.problem:
        raise ValueError(settings.problem)
    simulated = request.sampler.backend == "simulated" and request.sampler_of(True).backend == "simulated"
    return {"sampler_for": lambda config: sampler_for(config, settings.keys.sampler),
            "embedder": embedder_for(request.embedder, settings.keys.embedder),
            # Simulated outputs are recomputed from their seed faster than SQLite stores them.
            "store": EmbeddingsOnly(store()) if simulated else store()}


@st.cache_data(max_entries=MAX_RESULTS, show_spinner="Running the permutation tests…")
def _result(key: str, _request: AuditRequest, _backends: dict, _computed=None):
    """The result of the request whose digest is ``key``: shared by every session, at most MAX_RESULTS kept.

    Computed here only from what the store holds (``offline``: no model is
    called, so no progress bar is needed); a run that must sample raises
    ``NotStored``, runs live in :func:`family` and comes back as ``_computed``.
    """
    from dbpa_core.audit.runner import run

    if _computed is not None:
        return _computed
    return run(_request, offline=True, **_backends)


def calls_a_paid_api(settings: Settings, request: AuditRequest) -> bool:
    """Whether running ``request`` now would call an OpenAI-compatible API (which may bill for it).

    False when the shared cache or the store already holds every output and
    embedding it needs (nothing is called), and for the simulated, recorded
    and local backends (free, on this machine).  A page that runs by itself
    (the home page) asks before such a run instead of spending unasked.
    """
    from dbpa_core.audit.runner import NotStored

    if all(config.backend != "openai" for config in (request.sampler, request.sampler_of(True))):
        return False
    tested = request.tests_only()
    try:
        _result(tested.key, tested, _backends(settings, tested))
    except NotStored:
        return True
    return False


def _within_recorded(request: AuditRequest, backends: dict, k_label: str) -> None:
    """Refuse, before any work, a k above what the recorded backend holds for an arm, naming the page's k box.

    The sampler's own message names its parameter ``n``, which no page shows, and came only after the other
    arms were drawn and embedded (trial 5).  An arm with nothing recorded is left to the sampler's message.
    """
    k = request.sequential.k_max if request.sequential is not None else request.k
    for arm in request.arm_requests():
        if arm.sampler.backend != "recorded":
            continue
        available = backends["sampler_for"](arm.sampler).available(arm.prompt, arm.system)
        if 0 < available < k:
            raise ValueError(f"`{k_label}`: only {available} responses were recorded for the arm “{arm.label}”; "
                             f"set {k_label} to at most {available}, or pick a live backend in the sidebar.")


def family(settings: Settings, request: AuditRequest, *, progress: RunProgress | None = None,
           label: str = "Sampling", live: str | None = None, k_label: str = "Samples per arm k"):
    """The :class:`~dbpa_core.audit.results.FamilyResult` of ``request``, from the shared cache or run now.

    ``progress`` is the run's overall bar when this request is one step of a
    longer run.  ``live`` is the id of a perturbation to follow as it is
    drawn: on the local and OpenAI-compatible backends its two arms are drawn
    first, in a :class:`ui.live.LiveDraw` (outputs in the clouds, P0/P1 and
    the null as they arrive), then the other arms behind the bar.  A fixed-k
    result is cached without its correction and α (they only re-read the
    same p-values) and re-corrected here.  ``k_label`` is the page's name of
    its k box, which an error about k names.
    """
    from dbpa_core.audit.runner import NotStored

    tested = request.tests_only()
    backends = _backends(settings, tested)
    _within_recorded(tested, backends, k_label)
    try:
        result = _result(tested.key, tested, backends)
    except NotStored:
        with one_run_at_a_time(tested.key):
            try:  # another session may have run it while this one waited
                result = _result(tested.key, tested, backends)
            except NotStored:
                # Any widget interaction (Cancel included) stops the running script; the samples drawn so far
                # are already in the store.  Its time is said before it starts (ui.timing, issue 45).
                from .timing import announced, request_time, with_time

                estimate = request_time(tested)
                with RunProgress(with_time(label, estimate)) if progress is None else contextlib.nullcontext(
                        progress) as bar, announced(estimate):
                    computed = _draw(tested, bar, backends, live)
                result = _result(tested.key, tested, backends, computed)
    if request.sequential is not None:
        return result
    return result.recorrected(request.correction, request.alpha)


# ------------------------------------------------------------ one run per request
_RUN_LOCKS: dict[str, threading.Lock] = {}
_RUN_LOCKS_LOCK = threading.Lock()


@contextlib.contextmanager
def one_run_at_a_time(key: str):
    """Hold the run of ``key`` while it runs outside the cache (live sampling, a progress bar).

    When a room presses the same button at once, the first session runs and
    the others wait here, then find its result in the shared cache: one
    sampling of each output, not one per person.  (``st.cache_data`` does the
    same for what it computes itself; a live run is outside it.)
    """
    with _RUN_LOCKS_LOCK:
        if len(_RUN_LOCKS) > 4 * MAX_RESULTS:  # forget locks nobody holds (the runs they guarded are over)
            for stale in [k for k, lock in _RUN_LOCKS.items() if not lock.locked()]:
                del _RUN_LOCKS[stale]
        lock = _RUN_LOCKS.setdefault(key, threading.Lock())
    if not lock.acquire(blocking=False):
        with st.spinner("Another session is running exactly this; its result will be shown here too…"):
            lock.acquire()
    try:
        yield
    finally:
        lock.release()


# ------------------------------------------------------------ what changed
@dataclass(frozen=True, eq=False)
class Audited:
    """A shown two-arm result with what identifies its outputs, so that its "What changed" is cached with it.

    A page keeps this (not the bare result) as its result: when the inputs
    change, the kept result and its explanation still belong together.

    Attributes
    ----------
    key : str
        Identifies the two arms' outputs and embeddings: the request's digest
        and the perturbation's index, or an uploaded file's content hash with
        its arm choice and embedder.
    result : PerturbationResult
    n_resamples, seed : int
        B and the seed of the explanation's re-splits (the test's own).
    request : AuditRequest or None
        The request the result came from (None for an uploaded file).
    family : FamilyResult or None
        The whole family of that request, when the page shows it.
    """

    key: str
    result: object
    n_resamples: int
    seed: int
    request: AuditRequest | None = None
    family: object = None

    @classmethod
    def of_request(cls, request: AuditRequest, index: int, family) -> Audited:
        """Perturbation ``index`` of ``request``'s result ``family``."""
        tested = request.tests_only()
        return cls(f"{tested.key}:{index}", family.results[index], tested.n_resamples, tested.seed, request, family)

    @classmethod
    def of_upload(cls, digest: str, result, *, original_arm: str, embedder: str, n_resamples: int,
                  seed: int) -> Audited:
        """The result of an uploaded file whose content has the SHA-256 ``digest``."""
        identity = json.dumps(["upload", digest, original_arm, embedder], ensure_ascii=False)
        return cls(hashlib.sha256(identity.encode()).hexdigest(), result, int(n_resamples), int(seed))


@st.cache_data(max_entries=MAX_RESULTS, show_spinner="Finding what changed…")
def _explanation(key: str, fdr: float, n_resamples: int, seed: int, _original, _perturbed):
    """:func:`dbpa_core.explain_change` of the arms ``key`` names: shared by every session, bounded."""
    from dbpa_core.stats.explain import explain_change

    return explain_change(list(_original.texts), list(_perturbed.texts), _original.embeddings, _perturbed.embeddings,
                          fdr=fdr, n_resamples=n_resamples, rng=seed)


def explanation(audited: Audited, *, fdr: float):
    """What changed between the two arms of ``audited`` (a :class:`~dbpa_core.stats.explain.ChangeExplanation`).

    Cached by the arms' key, the FDR level and B, with the test's own B and
    seed (as ``explain: true`` in a SPEC computes it): computed once for all
    sessions, and an FDR level re-read from the cache when it comes back.
    """
    result = audited.result
    return _explanation(audited.key, float(fdr), audited.n_resamples, audited.seed, result.original, result.perturbed)


def family_explanations(audited: Audited, *, fdr: float) -> list:
    """One explanation per perturbation of ``audited``'s family (a SPEC's ``explain: true``), in order."""
    return [explanation(Audited.of_request(audited.request, i, audited.family), fdr=fdr)
            for i in range(len(audited.family.results))]


def _draw(request: AuditRequest, bar: RunProgress, backends: dict, live: str | None):
    """Run ``request`` under ``bar``; perturbation ``live`` (an id) and the original arm first, followed live."""
    import dataclasses

    from dbpa_core.audit.runner import run

    from .live import LiveDraw, is_live

    followed = [p for p in request.perturbations if p.id == live]
    if not followed or not is_live(request):
        bar.track(request)
        return run(request, progress=bar.update, **backends)
    # The two arms have the same seeds alone as in the family (arm_seed): drawn first, they are then reused.
    pair = dataclasses.replace(request, perturbations=tuple(followed))
    view = LiveDraw(pair, embedder=backends["embedder"], store=backends["store"],
                    more_arms=len(request.perturbations) - 1)
    before = bar.listener
    bar.listener = view
    bar.track(request)  # the whole family, once: the pair's arms are its first two
    try:
        result = run(pair, progress=bar.update, **backends)
    finally:
        bar.listener = before
    view.close()
    if len(request.perturbations) == 1:
        return result
    return run(request, progress=bar.update, **backends)


class _Missing(LookupError):
    """Nothing was computed yet for these inputs."""


@st.cache_data(max_entries=32, show_spinner=False)
def _kept(kind: str, key: str, _value=None):
    if _value is None:
        raise _Missing(kind)
    return _value


def shared(kind: str, key: str, compute=None):
    """A result computed once for ``(kind, key)`` and shared by every session (bounded), or None.

    ``compute()`` runs (outside the cache, so it may draw a progress bar) only
    when nothing is kept for these inputs and a compute is given; a page
    never shows a result computed for other inputs.  ``key`` must name every
    input of ``compute``.
    """
    try:
        return _kept(kind, key)
    except _Missing:
        if compute is None:
            return None
        with one_run_at_a_time(f"{kind}:{key}"):
            try:
                return _kept(kind, key)
            except _Missing:
                return _kept(kind, key, compute())


# ----------------------------------------------------------------- derived views
def digest(*parts) -> str:
    """A digest of ``parts`` by value: every byte of their pickle (arrays in full, results field by field).

    The key of a derived view: equal inputs, and only they, share it.
    (``st.cache_data``'s own hash samples arrays of ≥ 500 000 numbers, so two
    uploads that differ in a few rows could share one; this does not.)
    """
    return hashlib.sha256(pickle.dumps(tuple(map(_plain, parts)), protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()


def _plain(part):
    # A request stands for itself by its own digest (its pickle would change once ``.key`` is cached on it).
    return ("AuditRequest", part.key) if isinstance(part, AuditRequest) else part


def _call_key(function, args, kwargs) -> str:
    """The digest of a call: the function's name, its arguments and keyword arguments."""
    return digest(function.__module__, function.__qualname__, len(args), *args,
                  *((name, _plain(value)) for name, value in sorted(kwargs.items())))


@st.cache_data(max_entries=MAX_VIEWS, show_spinner=False)
def _value(key: str, _compute):
    return _compute()


def shared_call(function, *args, **kwargs):
    """``function(*args, **kwargs)`` computed once for equal arguments and shared by every session (bounded).

    For pure functions of their arguments (a projection, the test of an arm
    against itself); each session gets its own copy of the value.
    """
    return _value(_call_key(function, args, kwargs), lambda: function(*args, **kwargs))


@st.cache_resource(max_entries=MAX_VIEWS, show_spinner=False)
def _figure(key: str, _build):
    return _build()


def shared_figure(build, *args, **kwargs):
    """The figure ``build(*args, **kwargs)`` (a :mod:`dbpa_core.present.figures` function), built once for equal
    arguments and shared by every session (bounded).

    Building a Plotly figure validates every property (≈ 15–35 ms each, most
    of a page's rendering); ``st.plotly_chart`` only copies it.  Every
    session gets the same object: never change a figure after this returns.
    """
    return _figure(_call_key(build, args, kwargs), lambda: build(*args, **kwargs))


def projection(embeddings, method: str, *, seed: int = 0):
    """The 2-D coordinates of the output clouds (:func:`dbpa_core.present.projection.project`), shared."""
    from dbpa_core.present.projection import project

    return shared_call(project, embeddings, method, rng=seed)


def self_comparison(arm, request: AuditRequest):
    """The test of an arm's two halves (:func:`dbpa_core.audit.exposition.self_comparison`), shared.

    Only the request's tests matter (α and the correction do not change it).
    """
    from dbpa_core.audit.exposition import self_comparison as compare_halves

    return shared_call(compare_halves, arm, request.tests_only())
