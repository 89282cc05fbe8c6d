"""The model catalogue: models (or sampler settings) that a page can put side by side."""

from __future__ import annotations

import dataclasses

from dbpa_core.audit.configs import SamplerConfig

from .settings import Settings


def model_options(settings: Settings) -> dict[str, SamplerConfig]:
    """Models (or sampler settings) a page can put side by side: label → sampler configuration.

    Live options draw with the sidebar's output cap; the recorded backend
    replays its answers as they were generated.
    """
    cap = settings.max_tokens

    def live(backend: str, temperature: float) -> SamplerConfig:
        return SamplerConfig(backend, temperature=temperature, max_tokens=cap)

    options = {
        "simulated T=0.5": live("simulated", 0.5),
        "simulated T=1.0": live("simulated", 1.0),
        "simulated T=2.0": live("simulated", 2.0),
        "recorded SmolLM2 T=0.7": SamplerConfig("recorded"),
        "local SmolLM2 T=0.7": live("local", 0.7),
        "local SmolLM2 T=1.2": live("local", 1.2),
        # the requantizations the recorded Figs 1–2 answers came from (dbpa_core.samplers.quantize)
        "local SmolLM2 Q8_0 T=0.7": SamplerConfig("local", model="smollm2-q8_0", temperature=0.7, max_tokens=cap),
        "local SmolLM2 Q3_K_M T=0.7": SamplerConfig("local", model="smollm2-q3_k_m", temperature=0.7,
                                                    max_tokens=cap),
    }
    if settings.sampler.backend == "openai":
        options[f"{settings.sampler.model} (API)"] = settings.sampler
    return options


def with_model(settings: Settings, config: SamplerConfig) -> Settings:
    """Settings whose sampler is ``config`` (a model option)."""
    return dataclasses.replace(settings, sampler=config)
