"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama, llama.cpp).

Calls go through :func:`dbpa_core.samplers.endpoint_calls.call_endpoint`,
so a dead, stalled or rate-limiting endpoint fails the way a sampler's does:
an :class:`~dbpa_core.samplers.EndpointError` naming the URL (no credentials).
"""

from __future__ import annotations

import numpy as np

from .._validation import (DIMENSION_WHY, EMBED_BATCH_WHY, MAX_DIMENSION, MAX_EMBED_BATCH, MAX_RETRIES, MAX_TIMEOUT,
                           RETRIES_WHY, check_base_url, check_positive_float, check_positive_int, redact_url)
from ..samplers.base import EndpointError
from ..samplers.endpoint_calls import OPENAI_URL, call_endpoint, make_client, not_json_reason
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
        self.batch_size = check_positive_int(batch_size, "batch_size", maximum=MAX_EMBED_BATCH, why=EMBED_BATCH_WHY)
        self.timeout = check_positive_float(timeout, "timeout", maximum=MAX_TIMEOUT, why="an hour")
        self.max_retries = check_positive_int(max_retries, "max_retries", minimum=0, maximum=MAX_RETRIES,
                                              why=RETRIES_WHY)
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
        if isinstance(response, str | bytes):
            raise EndpointError(url, not_json_reason(response))
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != len(texts):
            raise EndpointError(url, f"the reply holds {len(data) if isinstance(data, list) else 0} embeddings for "
                                f"{len(texts)} texts; check that `model` is an embedding model.")
        try:
            return response_vectors([{"index": item.index, "embedding": item.embedding} for item in data])
        except (AttributeError, KeyError, TypeError, ValueError) as problem:
            # A reply of the wrong shape is the server's fault: never a crash, never a stored vector.
            raise EndpointError(url, f"the reply's embeddings cannot be used ({problem}); check that `model` is "
                                "an embedding model and `base_url` an OpenAI-compatible server.") from None


def response_vectors(data: list[dict]) -> np.ndarray:
    """One vector per input, in input order, from the ``data`` list of an embeddings response.

    Items are ordered by their ``index`` (the API does not promise input order), which must be
    exactly 0 … n − 1; every vector must have the same dimension (at most
    :data:`~dbpa_core._validation.MAX_DIMENSION`), finite numbers and a non-zero length.
    Raises ``ValueError`` naming what is wrong otherwise (a batch file's line, a server's reply).
    """
    indices = [item["index"] for item in data]
    if sorted(i if isinstance(i, int) and not isinstance(i, bool) else -1 for i in indices) != list(range(len(data))):
        raise ValueError(f"the `index` values are not 0 … {len(data) - 1}, each once")
    ordered = sorted(data, key=lambda item: item["index"])
    vectors = [_pooled(item["embedding"]) for item in ordered]
    dimensions = {vector.shape[0] for vector in vectors}
    if len(dimensions) > 1:
        raise ValueError(f"the embeddings have different dimensions ({', '.join(map(str, sorted(dimensions)))})")
    array = np.array(vectors, dtype=np.float32)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"embedding {int(np.argwhere(~np.isfinite(array))[0, 0])} holds NaN or infinity")
    norms = np.linalg.norm(array.astype(np.float64), axis=1)
    if not np.all(norms > 0):
        raise ValueError(f"embedding {int(np.argwhere(~(norms > 0))[0, 0])} is all zeros (no direction)")
    return array


def _pooled(embedding) -> np.ndarray:
    """One vector per text.  A llama.cpp server whose model has no pooling
    returns one vector per token; those are averaged (mean pooling, as
    sentence-transformers does for MiniLM)."""
    if not isinstance(embedding, list | tuple | np.ndarray) or not len(embedding):
        raise ValueError("an `embedding` is not a non-empty list of numbers")
    rows = embedding if len(embedding) and isinstance(embedding[0], list | tuple) else [embedding]
    if any(type(value) is bool for row in rows if isinstance(row, list | tuple) for value in row):
        raise ValueError("an `embedding` holds true/false, not numbers")  # NumPy would read them as 1.0 and 0.0
    array = np.asarray(embedding)
    if array.dtype.kind not in "iuf" or array.ndim not in (1, 2):
        raise ValueError("an `embedding` is not a list of numbers")
    array = array.astype(np.float32)
    if array.shape[-1] > MAX_DIMENSION:
        raise ValueError(f"an embedding has {array.shape[-1]:,} numbers; at most {MAX_DIMENSION:,} ({DIMENSION_WHY})")
    return array.mean(axis=0) if array.ndim == 2 else array
