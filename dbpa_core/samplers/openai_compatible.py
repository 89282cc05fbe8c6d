"""Any OpenAI-compatible chat endpoint: OpenAI, vLLM, Ollama, a llama.cpp server.

One class serves every endpoint through ``base_url``; extra endpoints are
configuration, not subclasses.  Each sample is one call with its own seed
(servers that ignore ``n`` or ``seed`` are handled the same way); calls run
``max_concurrency`` at a time.

Failures are ours to handle, not the client's (:mod:`.endpoint_calls`: each
attempt bounded as a whole, retries with backoff or the server's
``Retry-After``, one pause for every call of the sampler); a reply that is
not a chat completion is an error, never an empty sample.  Every failure is
an :class:`~.base.EndpointError` naming the URL, without credentials.

Today's OpenAI models (:mod:`.openai_models`): GPT-5-class and o-series
models get ``max_completion_tokens`` instead of ``max_tokens``, and any model
whose server refuses the one sent gets the other from then on (remembered by
the sampler); a temperature that a reasoning model refuses is a
:class:`~.openai_models.TemperatureRefused` (a ``ValueError``) before any
call where the model is known, or at the server's first refusal.  What a reply
says about itself (the served ``model``, ``system_fingerprint``, token
``usage``) travels with each completion (:attr:`~.base.Completion.meta`) into
the sample store and the report's ``provenance``.
"""

from __future__ import annotations

from .._validation import (CONCURRENCY_WHY, MAX_CONCURRENCY, MAX_RETRIES, MAX_TIMEOUT, RETRIES_WHY, check_base_url,
                           check_completion_text, check_positive_float, check_positive_int, redact_url)
from .base import Completion, DEFAULT_TEMPERATURE, EndpointError, Sampler, sample_seed
from .endpoint_calls import OPENAI_URL, RateGate, call_endpoint, make_client, not_json_reason
from .openai_models import (TOKEN_PARAMETERS, OtherParameter, TemperatureRefused, check_model_temperature,
                            fixed_temperature, parameter_refused, reply_meta, temperature_refused, token_parameter)


class OpenAISampler(Sampler):
    """Chat completions from an OpenAI-compatible server.

    Parameters
    ----------
    model : str
        Model name as the server knows it.
    base_url : str, optional
        e.g. ``http://127.0.0.1:8000/v1``; None for api.openai.com.
        Credentials written into it are used for the calls but never stored,
        logged or shown (:func:`dbpa_core.samplers.redact_url`).
    api_key : str, optional
        Never stored; default ``OPENAI_API_KEY``.
    max_concurrency : int
        Calls in flight at once (default 4: several in flight, well below
        the per-key request limits of hosted APIs; a local vLLM server
        takes 32 or more).  A 429 with Retry-After pauses all of them.
    timeout : float
        Seconds each attempt of a call may take in total.
    max_retries : int
        Extra attempts on 408/409/429/5xx, timeouts and dropped connections.
    logprobs : bool
        Ask for per-token log-probabilities (not every server supports it).

    Notes
    -----
    A reasoning model (o-series, ``gpt-5``, ``gpt-5-mini``, ``gpt-5-nano``)
    defaults to temperature 1, the only one it accepts; asking it for another
    raises :class:`~.openai_models.TemperatureRefused` before any call.  Its
    ``max_tokens`` is sent as ``max_completion_tokens`` and also bounds the
    hidden reasoning tokens, so give it room (a reply cut off while still
    reasoning comes back empty and is refused).
    """

    name = "openai"
    default_temperature = DEFAULT_TEMPERATURE["openai"]
    default_max_tokens = 256

    def __init__(self, model: str = "gpt-4o-mini", *, base_url: str | None = None, api_key: str | None = None,
                 max_concurrency: int = 4, timeout: float = 60.0, max_retries: int = 5, logprobs: bool = False):
        if not isinstance(model, str) or not model.strip():
            raise ValueError("`model` must name the model served at `base_url`.")
        self._model = model
        base_url = check_base_url(base_url)
        self.base_url = redact_url(base_url)  # what may be shown and stored
        self.max_concurrency = check_positive_int(max_concurrency, "max_concurrency", maximum=MAX_CONCURRENCY,
                                                  why=CONCURRENCY_WHY)
        self.logprobs = bool(logprobs)
        self.timeout = check_positive_float(timeout, "timeout", maximum=MAX_TIMEOUT, why="an hour")
        self.max_retries = check_positive_int(max_retries, "max_retries", minimum=0, maximum=MAX_RETRIES,
                                              why=RETRIES_WHY)
        self._client = make_client(base_url, api_key, self.timeout)
        self._gate = RateGate()
        # The length parameter this server takes for this model; switched (once) when a server refuses it.
        self._token_parameter = token_parameter(model)
        # Temperatures the server refused (their error): asked again, they fail before any call.
        self._refused: dict[float, str] = {}
        if fixed_temperature(model) is not None:
            self.default_temperature = fixed_temperature(model)  # the only one such a model accepts

    @property
    def model(self) -> str:
        return self._model

    @property
    def endpoint(self) -> str:
        return self.base_url or OPENAI_URL

    def identity(self) -> dict:
        # The key is deliberately absent: it does not change outputs and must never be stored.
        return {"backend": self.name, "model": self._model, "base_url": self.base_url or "api.openai.com"}

    @property
    def token_parameter(self) -> str:
        """``"max_tokens"`` or ``"max_completion_tokens"``: how the length limit is sent to this server."""
        return self._token_parameter

    def _settings(self, temperature, max_tokens):
        temperature, max_tokens = super()._settings(temperature, max_tokens)
        check_model_temperature(self._model, temperature)
        if temperature in self._refused:
            raise TemperatureRefused(self._refused[temperature])
        return temperature, max_tokens

    def _refusal(self, temperature: float, sent: str):
        """What a non-retried HTTP error of a call means (:func:`~.endpoint_calls.call_endpoint`'s ``refusal``)."""

        def meaning(error):
            if parameter_refused(error, sent):
                return OtherParameter()
            refused = temperature_refused(error, self._model, temperature)
            if refused is not None:
                self._refused[temperature] = str(refused)
            return refused

        return meaning

    def chat_request(self, prompt: str, *, system: str | None, temperature: float, max_tokens: int, seed: int,
                     index: int) -> dict:
        """The body of the chat-completions call for sample ``index``.

        :meth:`complete` sends exactly this, and :mod:`dbpa_core.audit.batch`
        writes exactly this into batch files, so a result computed offline
        lands in the same store slot as a live call would.
        """
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        body = {"model": self._model, "messages": messages, "temperature": temperature,
                self._token_parameter: max_tokens, "seed": sample_seed(seed, index), "n": 1}
        if self.logprobs:
            body["logprobs"] = True
        return body

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        url = f"{self.endpoint}/chat/completions"
        for switched in (False, True):
            body = self.chat_request(prompt, system=system, temperature=temperature, max_tokens=max_tokens,
                                     seed=seed, index=index)
            sent = self._token_parameter
            try:
                response = call_endpoint(lambda body=body: self._client.chat.completions.create(**body), url=url,
                                         timeout=self.timeout, max_retries=self.max_retries, gate=self._gate,
                                         refusal=self._refusal(temperature, sent))
            except OtherParameter:
                if switched:
                    raise EndpointError(url, "HTTP 400: the server refuses both `max_tokens` and "
                                             "`max_completion_tokens`. Check `model` and the server.") from None
                # Remembered for every later call of this sampler (concurrent calls may switch it too).
                self._token_parameter = TOKEN_PARAMETERS[1] if sent == TOKEN_PARAMETERS[0] else TOKEN_PARAMETERS[0]
                continue
            return chat_completion(response, url, logprobs=self.logprobs)
        raise AssertionError("unreachable")  # the loop returns or raises


def chat_completion(response, url: str, *, logprobs: bool = False) -> Completion:
    """The :class:`Completion` of a chat-completions reply; any other shape is the server's fault
    (:class:`EndpointError`), never an empty sample or a crash."""
    if isinstance(response, str | bytes):
        raise EndpointError(url, not_json_reason(response))
    choices = getattr(response, "choices", None)
    if not choices:
        raise EndpointError(url, "the reply has no `choices`: the server did not return a chat completion. "
                                 "Check `base_url` and `model`.")
    try:
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        tokens = None
        if logprobs and getattr(choice, "logprobs", None) is not None and choice.logprobs.content:
            tokens = tuple(float(t.logprob) for t in choice.logprobs.content)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise EndpointError(url, "the reply's `choices` are not a list of chat choices: the server did not "
                                 "return a chat completion. Check `base_url` and `model`.") from None
    if content is not None and not isinstance(content, str) or message is None or isinstance(message, str):
        raise EndpointError(url, "the reply's `choices[0].message.content` is not text: the server did not "
                                 "return a chat completion. Check `base_url` and `model`.")
    problem = check_completion_text(content or "")
    if problem:
        raise EndpointError(url, f"the reply cannot be stored: {problem}. Check the server.")
    # A null content (content filter, tool call) comes back as "" and is refused by Sampler.sample.
    return Completion(content or "", tokens, reply_meta(response))
