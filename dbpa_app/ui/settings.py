"""The settings a page runs with: which sampler and embedder (with their generation settings), and the seed.

Frozen: the sampler and embedder are the same configuration objects an audit
request holds (:class:`dbpa_core.audit.configs.SamplerConfig`,
:class:`~dbpa_core.audit.configs.EmbedderConfig`), so a page's request is
exactly what the command line would run.  The keys typed in the sidebar are
kept apart (:class:`Keys`): they are never part of a request, a cache key or
an export.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dbpa_core.audit.configs import EmbedderConfig, SamplerConfig

EMBEDDER_LABELS = {
    "minilm": "MiniLM-L6 (offline)",
    "openai": "OpenAI-compatible",
}

BACKEND_LABELS = {
    "simulated": "Simulated (instant, known truth)",
    "recorded": "Recorded SmolLM2 (replay)",  # "… samples (replay)" was cut at 190 px of 212 (issue 45)
    "local": "Local SmolLM2-135M (CPU)",
    "openai": "OpenAI-compatible API",
}

#: How the recorded answers were generated (scripts/record_samples.py); replaying cannot change it.
RECORDED_GENERATION = (0.7, 80)


@dataclass(frozen=True)
class Keys:
    """API keys typed in the sidebar: kept in memory for the session, never in a request or on disk."""

    sampler: str = field(default="", repr=False)
    embedder: str = field(default="", repr=False)


@dataclass(frozen=True)
class Settings:
    """The sidebar's choices.

    Attributes
    ----------
    sampler : SamplerConfig
        Backend, model, URL and generation settings (none for the recorded backend, which replays).
    embedder : EmbedderConfig
    seed : int
    keys : Keys
    problem : str
        Why the sidebar's endpoint cannot be used (a malformed URL); every run refuses with it.
    """

    sampler: SamplerConfig
    embedder: EmbedderConfig
    seed: int
    keys: Keys = field(default_factory=Keys)
    problem: str = ""

    @property
    def temperature(self) -> float:
        """The temperature outputs are drawn at (the recording's, for the recorded backend)."""
        return self.sampler.temperature if self.sampler.temperature is not None else RECORDED_GENERATION[0]

    @property
    def max_tokens(self) -> int:
        """The output cap (the recording's, for the recorded backend)."""
        return self.sampler.max_tokens if self.sampler.max_tokens is not None else RECORDED_GENERATION[1]
