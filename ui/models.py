"""The model catalogue: models (or sampler settings) that a page can put side by side."""

from __future__ import annotations

import dataclasses

from .settings import SamplerConfig, Settings


def model_options(settings: Settings) -> dict[str, tuple[SamplerConfig, float]]:
    """Models (or sampler settings) a page can put side by side: label → (config, temperature)."""
    options = {
        "simulated T=0.5": (SamplerConfig("simulated"), 0.5),
        "simulated T=1.0": (SamplerConfig("simulated"), 1.0),
        "simulated T=2.0": (SamplerConfig("simulated"), 2.0),
        "recorded SmolLM2 T=0.7": (SamplerConfig("recorded"), 0.7),
        "local SmolLM2 T=0.7": (SamplerConfig("local"), 0.7),
        "local SmolLM2 T=1.2": (SamplerConfig("local"), 1.2),
    }
    if settings.sampler.backend == "openai":
        options[f"{settings.sampler.model} (API)"] = (settings.sampler, settings.temperature)
    return options


def with_model(settings: Settings, option: tuple[SamplerConfig, float]) -> Settings:
    """Settings whose sampler and temperature are those of a model option."""
    config, temperature = option
    return dataclasses.replace(settings, sampler=config, temperature=temperature)
