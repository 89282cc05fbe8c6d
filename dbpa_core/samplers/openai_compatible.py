"""Any OpenAI-compatible chat endpoint: OpenAI, vLLM, Ollama, a llama.cpp server.

One class serves every endpoint through ``base_url``; extra endpoints are
configuration, not subclasses.  Each sample is one call with its own seed
(servers that ignore ``n`` or ``seed`` are handled the same way); calls run
``max_concurrency`` at a time; the ``openai`` client retries 408/409/429/5xx
and connection errors with exponential backoff (``max_retries``) and stops a
call after ``timeout`` seconds.
"""

from __future__ import annotations

import os

from .._validation import check_positive_float, check_positive_int
from .base import Completion, Sampler, sample_seed

NO_KEY = "sk-no-key-required"  # local servers accept any key


def make_client(base_url: str | None, api_key: str | None, timeout: float, max_retries: int):
    """An ``openai.OpenAI`` client; the key comes from the argument or ``OPENAI_API_KEY``."""
    from openai import OpenAI  # lazy: only the HTTP backends need it

    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if base_url is None:
            raise ValueError("`api_key`: the OpenAI API needs a key; set OPENAI_API_KEY or enter it in the sidebar "
                             "(or give a `base_url` for a local server).")
        key = NO_KEY
    return OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)


class OpenAISampler(Sampler):
    """Chat completions from an OpenAI-compatible server.

    Parameters
    ----------
    model : str
        Model name as the server knows it.
    base_url : str, optional
        e.g. ``http://127.0.0.1:8000/v1``; None for api.openai.com.
    api_key : str, optional
        Never stored; default ``OPENAI_API_KEY``.
    max_concurrency : int
        Calls in flight at once.
    timeout : float
        Seconds per call.
    max_retries : int
        Retries with exponential backoff on 408/409/429/5xx and connection errors.
    logprobs : bool
        Ask for per-token log-probabilities (not every server supports it).
    """

    name = "openai"
    default_temperature = 0.7
    default_max_tokens = 256

    def __init__(self, model: str = "gpt-4o-mini", *, base_url: str | None = None, api_key: str | None = None,
                 max_concurrency: int = 4, timeout: float = 60.0, max_retries: int = 5, logprobs: bool = False):
        if not isinstance(model, str) or not model.strip():
            raise ValueError("`model` must name the model served at `base_url`.")
        self._model = model
        self.base_url = base_url or None
        self.max_concurrency = check_positive_int(max_concurrency, "max_concurrency")
        self.logprobs = bool(logprobs)
        self._client = make_client(self.base_url, api_key, check_positive_float(timeout, "timeout"),
                                   check_positive_int(max_retries, "max_retries", minimum=0))

    @property
    def model(self) -> str:
        return self._model

    def identity(self) -> dict:
        # The key is deliberately absent: it does not change outputs and must never be stored.
        return {"backend": self.name, "model": self._model, "base_url": self.base_url or "api.openai.com"}

    def chat_request(self, prompt: str, *, system: str | None, temperature: float, max_tokens: int, seed: int,
                     index: int) -> dict:
        """The body of the chat-completions call for sample ``index``.

        :meth:`complete` sends exactly this, and :mod:`dbpa_core.audit.batch`
        writes exactly this into batch files, so a result computed offline
        lands in the same store slot as a live call would.
        """
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        body = {"model": self._model, "messages": messages, "temperature": temperature, "max_tokens": max_tokens,
                "seed": sample_seed(seed, index), "n": 1}
        if self.logprobs:
            body["logprobs"] = True
        return body

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        response = self._client.chat.completions.create(
            **self.chat_request(prompt, system=system, temperature=temperature, max_tokens=max_tokens, seed=seed,
                                index=index))
        choice = response.choices[0]
        logprobs = None
        if self.logprobs and choice.logprobs is not None and choice.logprobs.content:
            logprobs = tuple(float(t.logprob) for t in choice.logprobs.content)
        return Completion(choice.message.content or "", logprobs)
