"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama, llama.cpp)."""

from __future__ import annotations

import numpy as np

from .._validation import check_positive_int
from .base import Embedder


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

    def embeddings_request(self, texts: list[str]) -> dict:
        """The body of the ``/v1/embeddings`` call for one batch of texts (also what batch files hold)."""
        return {"model": self._model, "input": list(texts)}

    def embed_batch(self, texts):
        response = self._client.embeddings.create(**self.embeddings_request(texts))
        return response_vectors([{"index": item.index, "embedding": item.embedding} for item in response.data])


def response_vectors(data: list[dict]) -> np.ndarray:
    """One vector per input, in input order, from the ``data`` list of an embeddings response.

    Items are ordered by their ``index`` (the API does not promise input order).
    """
    ordered = sorted(data, key=lambda item: item["index"])
    return np.array([_pooled(item["embedding"]) for item in ordered], dtype=np.float32)


def _pooled(embedding) -> np.ndarray:
    """One vector per text.  A llama.cpp server whose model has no pooling
    returns one vector per token; those are averaged (mean pooling, as
    sentence-transformers does for MiniLM)."""
    array = np.asarray(embedding, dtype=np.float32)
    return array.mean(axis=0) if array.ndim == 2 else array
