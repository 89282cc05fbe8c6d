"""Embedders: step 2 of DBPA (Rauba, Wei & van der Schaar, ICML 2025, §3), one unit-norm vector per output.

``get_embedder(name, **settings)`` with name one of :data:`EMBEDDERS`.  The
backends are peers behind one interface (:class:`~.base.Embedder`, one
abstract method); they are imported on first use, so that asking for the
OpenAI-compatible embedder never imports torch.
"""

from __future__ import annotations

from types import MappingProxyType

from .base import Embedder

EMBEDDERS = ("minilm", "openai")

#: Constructor settings of each embedder that a SPEC may set (keys come from the environment).
EMBEDDER_SETTINGS = MappingProxyType({
    "minilm": ("model_path", "batch_size", "device"),
    "openai": ("model", "base_url", "timeout", "max_retries", "batch_size"),
})


def get_embedder(name: str = "minilm", **settings) -> Embedder:
    """Build an embedder by name: ``"minilm"`` (default, offline) or ``"openai"``."""
    if name == "minilm":
        from .minilm import MiniLMEmbedder

        return MiniLMEmbedder(**settings)
    if name == "openai":
        from .openai_compatible import OpenAIEmbedder

        return OpenAIEmbedder(**settings)
    raise ValueError(f"`name` must be one of {', '.join(map(repr, EMBEDDERS))}; got {name!r}.")


def __getattr__(name):
    # The backends' classes and minilm_path stay reachable from the package (lazily).
    if name in ("MiniLMEmbedder", "minilm_path"):
        from . import minilm

        return getattr(minilm, name)
    if name == "OpenAIEmbedder":
        from .openai_compatible import OpenAIEmbedder

        return OpenAIEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["EMBEDDERS", "EMBEDDER_SETTINGS", "Embedder", "MiniLMEmbedder", "OpenAIEmbedder", "get_embedder", "minilm_path"]
