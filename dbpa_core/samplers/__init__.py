"""Samplers: step 1 of DBPA (Rauba, Wei & van der Schaar, ICML 2025, §3), drawing k outputs per arm.

``get_sampler(name, **settings)`` with name one of :data:`SAMPLERS`.
"""

from __future__ import annotations

from .base import Completion, Sampler, SamplingCancelled, sample_seed

SAMPLERS = ("simulated", "recorded", "local", "openai")


def get_sampler(name: str, **settings) -> Sampler:
    """Build a sampler backend by name.

    Parameters
    ----------
    name : {"simulated", "recorded", "local", "openai"}
    **settings
        Passed to the backend's constructor (e.g. ``model``, ``base_url``,
        ``api_key`` for ``"openai"``; ``model_path`` for ``"local"``).
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


__all__ = ["SAMPLERS", "Completion", "Sampler", "SamplingCancelled", "get_sampler", "sample_seed"]
