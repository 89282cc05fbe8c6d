"""Whether a request's run would call a model or an embedder, read from the store without running it.

A caller that shows a progress bar, follows a draw live, or asks before a
paid call (the app) needs to know this before it runs; running the request
offline to find out (and running it again when that fails) would test the
same arms twice.  The check reads exactly what :func:`dbpa_core.audit.runner.run`
would read: each arm's first k samples (a computed backend — simulated,
recorded — recomputes them, which costs no model call) and their embeddings.
"""

from __future__ import annotations

from collections.abc import Callable

from .request import AuditRequest, SamplerConfig
from .arms import COMPUTED_BACKENDS


def fully_stored(request: AuditRequest, *, store, sampler_for: Callable[[SamplerConfig], object],
                 embedder) -> bool:
    """True when ``store`` holds every sample and embedding that running ``request`` reads.

    Parameters
    ----------
    request : AuditRequest
    store : SampleStore
        The store the run would use (samples and embeddings).
    sampler_for : callable(SamplerConfig) -> Sampler
        As passed to :func:`~dbpa_core.audit.runner.run`.
    embedder : Embedder
        The run's embedder (only its ``key`` is read).

    Notes
    -----
    A sequential request is checked at ``k_max`` (it may stop earlier, so a
    False here can still be a run that draws nothing new).
    """
    k = request.sequential.k_max if request.sequential is not None else request.k
    samplers: dict = {}
    for arm in request.arm_requests():
        config = arm.sampler.instance
        sampler = samplers.setdefault(config, sampler_for(config))
        settings = {"temperature": arm.temperature, "max_tokens": arm.max_tokens, "seed": arm.seed}
        system = arm.system or None
        if getattr(sampler, "name", "") in COMPUTED_BACKENDS:
            texts = sampler.sample(arm.prompt, k, system=system, store=store, **settings)
        else:
            description = sampler.describe_request(arm.prompt, system=system, **settings)
            stored = store.get_samples(description, range(k))
            texts = [text for text, _ in (stored.get(i, ("", None)) for i in range(k))]
            if not all(text.strip() for text in texts):
                return False
        if len(store.get_embeddings(embedder.key, list(texts))) < len(set(texts)):
            return False
    return True
