"""The app's side of :mod:`dbpa_core.audit.timing`: a run's time said before it starts, learnt from the last runs.

One :class:`~dbpa_core.audit.timing.Throughput` per server process, kept in
``throughput.json`` beside the sample store (so a restart keeps what this
machine measured).  :func:`request_time` estimates an audit request from what
the store already holds; :func:`announced` times a run and teaches the
throughput its real duration.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import streamlit as st

from dbpa_core.audit.timing import Throughput, TimeEstimate, load_factor, request_estimate
from .cache import shared_function


@st.cache_resource(show_spinner=False)
def throughput() -> Throughput:
    from .resources import store

    return Throughput(Path(store().path).with_name("throughput.json"))


def loaded_models() -> tuple[str, ...]:
    """The models this process has loaded already (their loading is not paid again)."""
    minilm, local = sys.modules.get("dbpa_core.embedders.minilm"), sys.modules.get("dbpa_core.samplers.local")
    loaded = []
    if minilm is not None and getattr(minilm, "_MINILM_MODELS", None):
        loaded.append("minilm")
    if local is not None and (getattr(local, "_MODELS", None) or getattr(local, "_ENGINES", None)):
        loaded.append("local")
    return tuple(loaded)


def stored_outputs(request) -> int:
    """How many of ``request``'s generated outputs (not simulated) the sample store holds already."""
    from .resources import sampler_for, store

    k = request.sequential.k_max if request.sequential is not None else request.k
    held = 0
    for arm in request.arm_requests():
        if arm.sampler.backend == "simulated":
            continue
        description = sampler_for(arm.sampler).describe_request(arm.prompt, system=arm.system or None,
                                                                 temperature=arm.temperature,
                                                                 max_tokens=arm.max_tokens, seed=arm.seed)
        held += min(k, store().count_samples(description))
    return held


@shared_function()
def _simulated_missing(key: str, _request) -> tuple[int, int]:
    """(texts, texts not yet embedded) of ``_request``'s simulated arms (its digest ``key``).

    Simulated outputs are computed from their seed (≈ 0.15 ms each) and repeat across replicates, so most of a
    Resample's texts may be embedded already: a Resample announced as 13 s took under a second when they were
    (the first timed walk).  Shared by every session, per request.
    """
    from .resources import embedder_for, sampler_for, store

    k = _request.sequential.k_max if _request.sequential is not None else _request.k
    texts: set[str] = set()
    for arm in _request.arm_requests():
        if arm.sampler.backend == "simulated":
            texts.update(sampler_for(arm.sampler).sample(arm.prompt, k, system=arm.system or None,
                                                         temperature=arm.temperature, max_tokens=arm.max_tokens,
                                                         seed=arm.seed))
    if not texts:
        return 0, 0
    known = store().get_embeddings(embedder_for(_request.embedder).key, sorted(texts))
    return len(texts), len(texts) - len(known)


#: Seconds an announcement stands for the same run in a session: the caption under a button and the bar once it
#: is pressed say the same time (the timed walk saw "about 25 s" then "about 30 s" for one Resample, the load
#: average having moved in between).
ANNOUNCEMENT_SECONDS = 120.0


def request_time(request, *, fresh: bool = False, loaded: tuple[str, ...] | None = None) -> TimeEstimate:
    """How long ``request`` will take to run here.  ``fresh``: none of its generated outputs is stored (a new
    replicate); simulated outputs are counted by what the store lacks of their embeddings.  The same run (its
    tests' key) asked again within :data:`ANNOUNCEMENT_SECONDS` in a session gets the same answer."""
    tested = request.tests_only() if hasattr(request, "tests_only") else request
    memo_key = (tested.key, loaded)
    said = st.session_state.setdefault("_announced", {})
    now = time.monotonic()
    if memo_key in said and now - said[memo_key][0] < ANNOUNCEMENT_SECONDS:
        return said[memo_key][1]
    estimate = _request_time(request, fresh=fresh, loaded=loaded)
    said[memo_key] = (now, estimate)
    return estimate


def _request_time(request, *, fresh: bool, loaded: tuple[str, ...] | None) -> TimeEstimate:
    k = request.sequential.k_max if request.sequential is not None else request.k
    arms = request.arm_requests()
    generated = k * sum(arm.sampler.backend != "simulated" for arm in arms)
    held = 0 if fresh else stored_outputs(request)
    _, missing = _simulated_missing(request.key, request)
    # Outputs in the store were embedded as they were stored (dbpa_core.audit.runner.ArmSource); a simulated
    # arm's repeated texts are embedded once.
    needed = missing + max(0, generated - held)
    return request_estimate(request, throughput(), stored_outputs=held, stored_embeddings=k * len(arms) - needed,
                            loaded=loaded_models() if loaded is None else loaded, load=load_factor())


def total_time(requests, *, fresh: bool = False) -> TimeEstimate:
    """Several requests run one after another (TPR / FPR: one per model, scenario and seed)."""
    requests = list(requests)
    if not requests:
        return TimeEstimate(0.0)
    # Models are loaded once, by the first request that needs them.
    estimates = [request_time(requests[0], fresh=fresh)]
    estimates += [request_time(request, fresh=fresh, loaded=("minilm", "local")) for request in requests[1:]]
    seconds = sum(e.seconds for e in estimates)
    first = estimates[0]
    same = all(e.key == first.key for e in estimates)
    return TimeEstimate(seconds, key=first.key if same else "", ratio=first.ratio if same else 1.0, load=first.load)


def with_time(label: str, estimate: TimeEstimate) -> str:
    """A progress label with the time announced: "Sampling — about 70 s on this machine"."""
    return f"{label} — {estimate.reading()}" if estimate.announced else label


def prompts_time(settings, prompts, k: int, *, models=None, n_resamples: int = 1000) -> TimeEstimate:
    """The time of drawing and testing ``k`` outputs of each prompt with each model (label → SamplerConfig;
    default the sidebar's sampler), nothing being stored yet: what a page's cost note says before its Run."""
    from dbpa_core.audit.timing import model_seconds

    prompts, loaded, load = list(prompts), set(loaded_models()), load_factor()
    total, keys, ratio = 0.0, set(), 1.0
    embedder = settings.embedder.name
    for sampler in (models or {"": settings.sampler}).values():
        backend = sampler.backend
        parallel = int(dict(sampler.options).get("max_concurrency", 1)) if backend == "openai" else 1
        loads = tuple(name for name in (embedder, backend) if name not in loaded)
        loaded.update(loads)
        modelled = model_seconds(backend=backend, embedder=embedder,
                                 new_outputs=0 if backend == "simulated" else len(prompts) * k,
                                 new_embeddings=len(prompts) * k, tests=max(0, len(prompts) - 1), k=k,
                                 n_resamples=n_resamples, parallel_calls=parallel, loads=loads)
        key = f"{backend}/{embedder}"
        ratio = throughput().ratio(key)
        total += modelled * ratio * load
        keys.add(key)
    return TimeEstimate(total, key=keys.pop() if len(keys) == 1 else "", ratio=ratio if len(keys) <= 1 else 1.0,
                        load=load)


def time_line(estimate: TimeEstimate) -> str:
    """The cost note's line on time ("" under 5 s)."""
    if not estimate.announced:
        return ""
    return (f"Time: {estimate.reading()} if none of it is stored yet (outputs already in the sample store are "
            "reused), estimated from this machine's measured throughput.")


@contextlib.contextmanager
def announced(estimate: TimeEstimate):
    """Time the run inside; teach the throughput what it really took (a cancelled or failed run teaches
    nothing)."""
    started = time.monotonic()
    yield
    if estimate.key:
        throughput().observe(estimate, time.monotonic() - started)
    st.session_state["_last_timed"] = {"announced": round(estimate.seconds, 1),
                                       "real": round(time.monotonic() - started, 1)}


def paper_view_time(view: str, size: int) -> TimeEstimate:
    """The time of a paper view computed when it opens (:data:`dbpa_core.audit.timing.PAPER_VIEW_SECONDS`)."""
    from dbpa_core.audit.timing import paper_view_estimate

    return paper_view_estimate(view, size, throughput(), load=load_factor())


def rut_time(n: int, m: int) -> TimeEstimate:
    """The time of a live RUT audit of ``n`` prompts with ``m`` reference answers each, here."""
    from dbpa_core.audit.timing import rut_estimate

    return rut_estimate(n, m, throughput(), loaded=loaded_models(), load=load_factor())


def calls_time(backend: str, calls: int, *, embeddings: int = 0) -> TimeEstimate:
    """The time of ``calls`` generation calls on ``backend`` (and ``embeddings`` texts embedded) here."""
    from dbpa_core.audit.timing import calls_estimate

    return calls_estimate(backend, calls, throughput(), embeddings=embeddings, loaded=loaded_models(),
                          load=load_factor())
