"""The app's thin adapter over :mod:`dbpa_core.audit`: a page's request, run once, kept in the shared cache.

Every page builds an :class:`~dbpa_core.audit.request.AuditRequest` (the
object ``python -m dbpa_core audit`` builds from a SPEC) and calls
:func:`family`.  Its result is kept in the one shared, bounded cache
(:mod:`ui.cache`) under the request's key, and computed by exactly one
``run()``: under the run's :class:`~ui.progress.RunProgress` (and a live view
of the followed pair) when the store lacks a sample or an embedding, under a
spinner when it holds them all (:func:`dbpa_core.audit.stored.fully_stored`
tells which, without running).  Sessions asking for the same request
meanwhile wait for that run instead of sampling again.
"""

from __future__ import annotations

import contextlib

import streamlit as st

from dbpa_core.audit.request import AuditRequest, PerturbedPrompt, Prompt, SamplerConfig

from .cache import digest, shared, shared_call, shared_figure
from .progress import RunProgress, cancelled_draw
from .resources import EmbeddingsOnly, embedder_for, sampler_for, store
from .settings import Settings

__all__ = ["RunProgress", "cancelled_draw", "digest", "shared", "shared_call", "shared_figure", "family",
           "calls_a_paid_api", "scenario_request", "typed_request", "models_request", "projection",
           "self_comparison", "Audited", "explanation", "family_explanations"]


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


def _stored(request: AuditRequest, backends: dict) -> bool:
    from dbpa_core.audit.stored import fully_stored

    return fully_stored(request, **backends)


def calls_a_paid_api(settings: Settings, request: AuditRequest) -> bool:
    """Whether running ``request`` now would call an OpenAI-compatible API (which may bill for it).

    False when the shared cache or the store already holds every output and
    embedding it needs (nothing is called), and for the simulated, recorded
    and local backends (free, on this machine).  A page that runs by itself
    (the home page) asks before such a run instead of spending unasked.
    """
    if all(config.backend != "openai" for config in (request.sampler, request.sampler_of(True))):
        return False
    tested = request.tests_only()
    if shared("family", tested) is not None:
        return False
    return not _stored(tested, _backends(settings, tested))


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
    """The :class:`~dbpa_core.audit.results.FamilyResult` of ``request``, from the shared cache or run now (once).

    ``progress`` is the run's overall bar when this request is one step of a
    longer run.  ``live`` is the id of a perturbation to follow as it is
    drawn: on the local and OpenAI-compatible backends its two arms are drawn
    first, in a :class:`ui.live.LiveDraw` (outputs in the clouds, P0/P1 and
    the null as they arrive), then the request is run behind the bar.  A
    fixed-k result is kept without its correction and α (they only re-read
    the same p-values) and re-corrected here.  ``k_label`` is the page's name
    of its k box, which an error about k names.
    """
    tested = request.tests_only()
    backends = _backends(settings, tested)
    _within_recorded(tested, backends, k_label)

    def compute():
        if _stored(tested, backends):  # nothing to draw: no bar, no Cancel button
            from dbpa_core.audit.runner import run

            with st.spinner("Running the permutation tests…"):
                return run(tested, **backends)
        # Any widget interaction (Cancel included) stops the running script; the samples drawn so far are
        # already in the store.
        # Its time is said before it starts (ui.timing, issue 45).
        from .timing import announced, request_time, with_time

        estimate = request_time(tested)
        with RunProgress(with_time(label, estimate)) if progress is None else contextlib.nullcontext(
                progress) as bar, announced(estimate):
            return _draw(tested, bar, backends, live)

    result = shared("family", tested, compute)
    if request.sequential is not None:
        return result
    return result.recorrected(request.correction, request.alpha)


def _draw(request: AuditRequest, bar: RunProgress, backends: dict, live: str | None):
    """Run ``request`` once under ``bar``, perturbation ``live`` (an id) followed in a live view.

    On a fixed-k request the followed pair (the original arm and ``live``'s)
    is drawn first — sampled and embedded into the store, not tested — and
    the one run then reads it from there; a sequential request is followed as
    its run draws it (its length is not known in advance).
    """
    import dataclasses

    from dbpa_core.audit.arms import draw_arm
    from dbpa_core.audit.runner import run

    from .live import LiveDraw, is_live

    followed = [p for p in request.perturbations if p.id == live]
    bar.track(request)  # the whole family, once: the pair's arms are its first two
    if not followed or not is_live(request):
        return run(request, progress=bar.update, **backends)
    pair = dataclasses.replace(request, perturbations=tuple(followed))
    view = LiveDraw(pair, embedder=backends["embedder"], store=backends["store"],
                    more_arms=len(request.perturbations) - 1)
    before, bar.listener = bar.listener, view
    try:
        if request.sequential is not None:
            result = run(request, progress=bar.update, **backends)
        else:
            for arm in pair.arm_requests():  # the same seeds alone as in the family (arm_seed)
                draw_arm(backends["sampler_for"](arm.sampler.instance), arm.prompt, request.k, label=arm.label,
                         system=arm.system, temperature=arm.temperature, max_tokens=arm.max_tokens,
                         seed=arm.seed, embedder=backends["embedder"], store=backends["store"],
                         progress=bar.update)
    finally:
        bar.listener = before
    view.close()
    if request.sequential is not None:
        return result
    # The pair is in the store now: with no other arm, the run only reads it back (nothing for the bar to say).
    return run(request, **backends) if len(request.perturbations) == 1 else run(request, progress=bar.update,
                                                                                **backends)


# ----------------------------------------------------------------- derived views
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


from .changes import Audited, explanation, family_explanations  # noqa: E402  (re-exported: pages import them here)
