"""The settings a page runs with: which sampler and embedder, temperature, tokens, seed.

Frozen and hashable, so they key the cached samplers and the session's memo of
drawn arms: a result always belongs to the settings it was made with.
"""

from __future__ import annotations

from dataclasses import dataclass

EMBEDDER_LABELS = {
    "minilm": "MiniLM-L6 (offline)",
    "openai": "OpenAI-compatible",
}

BACKEND_LABELS = {
    "simulated": "Simulated (instant, known truth)",
    "recorded": "Recorded SmolLM2 samples (replay)",
    "local": "Local SmolLM2-135M (CPU)",
    "openai": "OpenAI-compatible API",
}


@dataclass(frozen=True)
class SamplerConfig:
    """A hashable description of a sampler (the key of its cached instance)."""

    backend: str = "simulated"
    model: str = ""
    base_url: str = ""
    api_key: str = ""  # kept in memory for the session only; never stored
    max_concurrency: int = 4

    @property
    def label(self) -> str:
        return self.model or self.backend


@dataclass(frozen=True)
class Settings:
    sampler: SamplerConfig
    embedder: SamplerConfig
    temperature: float
    max_tokens: int
    seed: int
