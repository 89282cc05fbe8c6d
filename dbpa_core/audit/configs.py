"""Which backend, model and embedder an analysis uses: frozen configs, validated once, never holding a credential.

Every request kind (:class:`~.request.AuditRequest` and the sibling audits of :mod:`dbpa_core.requests`)
names its samplers and embedder with these; they are part of its key, its report's settings and the sample
store's key, so a key typed into a field is refused here, naming the field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .._validation import (MAX_TOKENS, TOKENS_WHY, check_base_url, check_choice, check_positive_int,
                           check_temperature, has_credentials, redact, redact_url)
from ..embedders import EMBEDDER_SETTINGS, EMBEDDERS
from ..samplers import SAMPLER_SETTINGS, SAMPLERS


def _options(value, allowed, owner: str) -> tuple[tuple[str, Any], ...]:
    items = dict(value.items() if isinstance(value, dict) else value)
    for name in items:
        if name not in allowed:
            raise ValueError(f"`{owner}.{name}` is not a setting of this backend; allowed: "
                             f"{', '.join(sorted(allowed)) or '(none)'}.")
        no_credential(items[name], f"{owner}.{name}")
    return tuple(sorted((str(k), v) for k, v in items.items() if v is not None))


def no_credential(value, name: str) -> None:
    # A request is a cache key, a report's settings and a store key: a key typed into a field never enters it.
    if isinstance(value, str) and redact(value) != value:
        raise ValueError(f"`{name}` looks like a credential (an API key or a password); pass keys separately "
                         "(OPENAI_API_KEY, or the sidebar's key field).")


def _url(value, name: str) -> str:
    url = check_base_url(value, name) or ""
    if has_credentials(url):
        # A request is a cache key, a report's settings and a store key: credentials never enter it.
        raise ValueError(f"`{name}` holds a credential ({redact_url(url)}); remove it and pass the key "
                         "separately (OPENAI_API_KEY, or the sidebar's key field).")
    return url


@dataclass(frozen=True)
class SamplerConfig:
    """Which model draws an arm's outputs, and how (never a credential).

    Attributes
    ----------
    backend : {"simulated", "recorded", "local", "openai"}
    model : str
        The model name the backend knows ("" for the backend's own).
    base_url : str
        An OpenAI-compatible server ("" for the backend's default); never holds credentials.
    temperature, max_tokens : float, int or None
        Generation settings of every request (None: the backend's default).
    options : tuple of (name, value)
        Other constructor settings of the backend (:data:`dbpa_core.samplers.SAMPLER_SETTINGS`),
        sorted by name.
    """

    backend: str = "simulated"
    model: str = ""
    base_url: str = ""
    temperature: float | None = None
    max_tokens: int | None = None
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        backend = check_choice(self.backend, "sampler.backend", SAMPLERS)
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "model", str(self.model or ""))
        no_credential(self.model, "sampler.model")
        object.__setattr__(self, "base_url", _url(self.base_url, "sampler.base_url"))
        if self.temperature is not None:
            object.__setattr__(self, "temperature", check_temperature(self.temperature, "sampler.temperature"))
        if backend == "openai":  # a reasoning model's one temperature: refused here, before any paid call
            from ..samplers.openai_models import check_model_temperature

            check_model_temperature(self.model, self.temperature, "sampler.temperature")
        if self.max_tokens is not None:
            object.__setattr__(self, "max_tokens", check_positive_int(self.max_tokens, "sampler.max_tokens",
                                                                      maximum=MAX_TOKENS, why=TOKENS_WHY))
        allowed = set(SAMPLER_SETTINGS[backend]) - {"model", "base_url"}
        object.__setattr__(self, "options", _options(self.options, allowed, "sampler"))

    @classmethod
    def from_mapping(cls, mapping: dict) -> SamplerConfig:
        """From a SPEC's ``sampler`` mapping (``backend``, generation settings, constructor settings)."""
        values = dict(mapping)
        return cls(backend=values.pop("backend", "simulated"), model=values.pop("model", ""),
                   base_url=values.pop("base_url", None) or "", temperature=values.pop("temperature", None),
                   max_tokens=values.pop("max_tokens", None), options=values)

    def as_mapping(self) -> dict:
        """The SPEC's ``sampler`` mapping of this configuration (what a report records)."""
        mapping = {"backend": self.backend, **({"model": self.model} if self.model else {}),
                   **({"base_url": self.base_url} if self.base_url else {}), **dict(self.options)}
        if self.temperature is not None:
            mapping["temperature"] = self.temperature
        if self.max_tokens is not None:
            mapping["max_tokens"] = self.max_tokens
        return mapping

    def constructor_settings(self) -> dict:
        """Keyword arguments of :func:`dbpa_core.samplers.get_sampler` (generation settings excluded)."""
        return {**({"model": self.model} if self.model else {}),
                **({"base_url": self.base_url} if self.base_url else {}), **dict(self.options)}

    @property
    def instance(self) -> SamplerConfig:
        """The same backend without generation settings: what one sampler instance serves."""
        return dataclasses.replace(self, temperature=None, max_tokens=None)

    @property
    def label(self) -> str:
        return self.model or self.backend


@dataclass(frozen=True)
class EmbedderConfig:
    """Which embedder turns outputs into vectors (never a credential).

    Attributes
    ----------
    name : {"minilm", "openai"}
    model, base_url : str
        For the OpenAI-compatible embedder ("" for its defaults).
    options : tuple of (name, value)
        Other constructor settings (:data:`dbpa_core.embedders.EMBEDDER_SETTINGS`).
    """

    name: str = "minilm"
    model: str = ""
    base_url: str = ""
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        name = check_choice(self.name, "embedder.name", EMBEDDERS)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "model", str(self.model or ""))
        no_credential(self.model, "embedder.model")
        object.__setattr__(self, "base_url", _url(self.base_url, "embedder.base_url"))
        allowed = set(EMBEDDER_SETTINGS[name]) - {"model", "base_url"}
        object.__setattr__(self, "options", _options(self.options, allowed, "embedder"))

    @classmethod
    def from_mapping(cls, mapping: dict) -> EmbedderConfig:
        values = dict(mapping)
        return cls(name=values.pop("name", "minilm"), model=values.pop("model", ""),
                   base_url=values.pop("base_url", None) or "", options=values)

    def as_mapping(self) -> dict:
        return {"name": self.name, **self.constructor_settings()}

    def constructor_settings(self) -> dict:
        return {**({"model": self.model} if self.model else {}),
                **({"base_url": self.base_url} if self.base_url else {}), **dict(self.options)}

    @property
    def label(self) -> str:
        return self.model or self.name
