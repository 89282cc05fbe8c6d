"""The embedder interface: one abstract method, everything else shared (Rauba, Wei & van der Schaar, ICML 2025, §3, step 2).

An embedder implements :meth:`Embedder.embed_batch`; the base class adds
batching, unit normalisation, the store cache and progress.  Empty outputs are
embedded like any other text: never dropped, so the arms keep their sizes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from .._validation import check_positive_int
from ..data.store import text_hash


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
            vectors = unit_rows(np.asarray(self.embed_batch(batch), dtype=np.float32), self.name)
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


def unit_rows(vectors: np.ndarray, name: str) -> np.ndarray:
    """Rows scaled to norm 1 (zero rows kept), as the store holds them; ``name`` labels errors."""
    if vectors.ndim != 2 or not np.all(np.isfinite(vectors)):
        raise RuntimeError(f"{name} returned embeddings that are not a finite 2-D array.")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.where(norms > 0, vectors / np.where(norms > 0, norms, 1), vectors)
