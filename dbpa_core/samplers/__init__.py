"""Samplers: step 1 of DBPA (Rauba, Wei & van der Schaar, ICML 2025, §3), drawing k outputs per arm.

``get_sampler(name, **settings)`` with name one of :data:`SAMPLERS`.  The
names, each backend's settings and its default temperature are listed here
once; the SPEC, the command line and the app import them.
"""

from __future__ import annotations

from types import MappingProxyType

from .._validation import redact, redact_logs, redact_url
from .base import (DEFAULT_TEMPERATURE, Completion, EndpointError, Sampler, SamplingCancelled, SamplingFailed,
                   sample_seed)

SAMPLERS = ("simulated", "recorded", "local", "openai")

#: Generation settings every backend takes per request.
GENERATION_SETTINGS = ("temperature", "max_tokens")

#: Constructor settings of each backend that a SPEC may set (never a key:
#: those come from the environment).
SAMPLER_SETTINGS = MappingProxyType({
    "simulated": ("model",),
    "recorded": ("path", "model"),
    "local": ("model", "model_path", "n_ctx", "logprobs", "batch_size"),
    "openai": ("model", "base_url", "max_concurrency", "timeout", "max_retries", "logprobs"),
})


def get_sampler(name: str, **settings) -> Sampler:
    """Build a sampler backend by name.

    Parameters
    ----------
    name : {"simulated", "recorded", "local", "openai"}
    **settings
        Passed to the backend's constructor (e.g. ``model``, ``base_url``,
        ``api_key`` for ``"openai"``; ``model`` (a name, e.g. ``"smollm2-q4_0"``) or ``model_path`` for ``"local"``).
    """
    if name == "simulated":
        from .simulated import SimulatedSampler

        return SimulatedSampler(**settings)
    if name == "recorded":
        from .recorded import RecordedSampler

        return RecordedSampler(**settings)
    if name == "local":
        from .local import LocalSampler

        return LocalSampler(**settings)
    if name == "openai":
        from .openai_compatible import OpenAISampler

        return OpenAISampler(**settings)
    raise ValueError(f"`name` must be one of {', '.join(map(repr, SAMPLERS))}; got {name!r}.")


__all__ = ["DEFAULT_TEMPERATURE", "GENERATION_SETTINGS", "SAMPLERS", "SAMPLER_SETTINGS", "Completion",
           "EndpointError", "Sampler", "SamplingCancelled", "SamplingFailed", "get_sampler", "redact", "redact_logs",
           "redact_url", "sample_seed"]
