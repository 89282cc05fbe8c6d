"""The app's calls of :func:`dbpa_core.requests.dispatch.run`: the request kinds beside the DBPA family.

Each function builds nothing but the resources a session lends (the shared
samplers, embedder and scorer, the session's key for an endpoint) and keys
its result by the request's own digest in the shared, bounded cache of
:mod:`ui.cache` (one run per request for the whole room: :func:`ui.cache.shared`).
"""

from __future__ import annotations

from .resources import embedder_for, sampler_for, store
from .cache import shared
from .progress import RunProgress
from .settings import Settings


def session_sampler_for(settings: Settings):
    """``sampler_for`` of a dispatch run in this session: shared samplers, the session's key for an endpoint only
    (a local model is loaded once, whoever asks)."""
    return lambda config: sampler_for(config, settings.keys.sampler if config.backend == "openai" else "")


def two_sample_request(settings: Settings, table, original: str, perturbed: str, *, similarity: str,
                       discrepancy: str, n_resamples: int):
    """The :class:`~dbpa_core.requests.two_sample.TwoSampleRequest` of an uploaded file's two arms (as
    ``python -m dbpa_core test`` builds it) with the sidebar's embedder and seed.

    It refuses a text measure on a file without texts, or a test too large, before anything is embedded
    (issue 30), as on the command line.
    """
    from dbpa_core.requests.two_sample import TwoSampleRequest

    return TwoSampleRequest.from_table(table, original, perturbed, embedder=settings.embedder, similarity=similarity,
                                       discrepancy=discrepancy, n_resamples=n_resamples, seed=settings.seed)


def two_sample_result(settings: Settings, request):
    """The :class:`~dbpa_core.audit.results.PerturbationResult` of ``request``, run through
    :func:`dbpa_core.requests.dispatch.run` (as ``python -m dbpa_core test``), shared.

    Keyed by the request's digest (the file's rows, every byte of any embeddings, the arms chosen, the
    embedder, the test's settings and the seed) — a class given one example file tests it once.  The
    embedder's key is used, never part of the key.
    """
    from dbpa_core.requests.dispatch import run

    def compute():
        embedder = None if request.embedded else embedder_for(request.embedder, settings.keys.embedder)
        return run(request, store=store(), embedder=embedder).result

    return shared("two_sample", request, compute)


def uploaded_test(settings: Settings, table, original: str, perturbed: str, *, similarity: str, discrepancy: str,
                  n_resamples: int):
    """:func:`two_sample_result` of :func:`two_sample_request` (the test of an uploaded file's two arms)."""
    return two_sample_result(settings, two_sample_request(settings, table, original, perturbed, similarity=similarity,
                                                          discrepancy=discrepancy, n_resamples=n_resamples))


def rut_audit(settings: Settings, request, *, run: bool = True):
    """The :class:`~dbpa_core.requests.rut.RUTAuditResult` of a RUT request (recorded or live), shared per
    request key (bounded); with ``run=False`` only a result already computed for exactly it (None if none).

    Run through :func:`dbpa_core.requests.dispatch.run` as ``python -m dbpa_core rut`` runs it, with the shared
    recorded pools, the shared reference scorer and the session's key for an endpoint.  Cached without α (it
    only reads the p-value: the page reads the decision at its own α).
    """
    request = request.tests_only()
    from dbpa_core.requests.dispatch import run as dispatch

    from .resources import reference_scorer
    from .rut import rut_pools

    def compute():
        if settings.problem and request.source == "live":
            raise ValueError(settings.problem)
        if request.source == "recorded":
            return dispatch(request, pools=rut_pools())
        from .timing import announced, rut_time, with_time

        # Said before it starts (issue 45): n prompts × (m reference answers + the target's), each scored.
        estimate = rut_time(request.n, request.m)
        with RunProgress(with_time("Generating and scoring answers", estimate)) as progress, announced(estimate):
            return dispatch(request, store=store(), sampler_for=session_sampler_for(settings),
                            scorer=reference_scorer(),
                            progress=lambda u: progress.report(u.done / max(u.total, 1),
                                                               f"{u.done}/{u.total} prompts"))

    return shared("rut", request, compute if run else None)
