"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama, llama.cpp).

Calls go through :func:`dbpa_core.samplers.openai_compatible.call_endpoint`,
so a dead, stalled or rate-limiting endpoint fails the way a sampler's does:
an :class:`~dbpa_core.samplers.EndpointError` naming the URL (no credentials).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_base_url, check_positive_float, check_positive_int, redact_url
from ..samplers.base import EndpointError
from ..samplers.openai_compatible import OPENAI_URL, call_endpoint, make_client, not_json_reason
from .base import Embedder


class OpenAIEmbedder(Embedder):
    """An OpenAI-compatible embeddings endpoint (same client settings as the sampler)."""

    name = "openai"

    def __init__(self, model: str = "text-embedding-3-small", *, base_url: str | None = None,
                 api_key: str | None = None, timeout: float = 60.0, max_retries: int = 5, batch_size: int = 64):
        if not isinstance(model, str) or not model.strip():
            raise ValueError("`model` must name the embedding model served at `base_url`.")
        self._model = model
        base_url = check_base_url(base_url)
        self.base_url = redact_url(base_url)  # part of the store key: never a credential
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.timeout = check_positive_float(timeout, "timeout")
        self.max_retries = check_positive_int(max_retries, "max_retries", minimum=0)
        self._client = make_client(base_url, api_key, self.timeout)

    @property
    def key(self) -> str:
        return f"openai:{self.base_url or 'api.openai.com'}:{self._model}"

    def embeddings_request(self, texts: list[str]) -> dict:
        """The body of the ``/v1/embeddings`` call for one batch of texts (also what batch files hold)."""
        # encoding_format given: the client then hands back the reply as it came, so that a reply
        # that is not JSON reaches the checks of embed_batch instead of failing inside the client.
        return {"model": self._model, "input": list(texts), "encoding_format": "float"}

    def embed_batch(self, texts):
        url = f"{self.base_url or OPENAI_URL}/embeddings"
        body = self.embeddings_request(texts)
        response = call_endpoint(lambda: self._client.embeddings.create(**body), url=url, timeout=self.timeout,
                                 max_retries=self.max_retries)
        data = getattr(response, "data", None)
        if isinstance(response, str | bytes):
            raise EndpointError(url, not_json_reason(response))
        if not data or len(data) != len(texts):
            raise EndpointError(url, f"the reply holds {len(data or ())} embeddings for {len(texts)} texts; check "
                                "that `model` is an embedding model.")
        return response_vectors([{"index": item.index, "embedding": item.embedding} for item in data])


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
