"""Today's OpenAI models: what a chat request must say (length parameter, temperature), what a reply tells.

Two rules of the hosted API that older servers (vLLM, Ollama, llama.cpp) do
not share:

* GPT-5-class and o-series models refuse ``max_tokens`` with HTTP 400
  ("Unsupported parameter: 'max_tokens' … Use 'max_completion_tokens'
  instead"); they take ``max_completion_tokens``, which also counts the
  hidden reasoning tokens.  :func:`token_parameter` picks the parameter by
  the model's name, and :func:`parameter_refused` recognises the refusal so
  that a sampler switches once and remembers it (a model name this table
  does not know, or a server that renames models, is handled the same way).
* Reasoning models (o-series; ``gpt-5``, ``gpt-5-mini``, ``gpt-5-nano``)
  accept only temperature 1.  :func:`check_model_temperature` refuses any
  other temperature for a model known to be fixed *before* any call is made
  (a SPEC, the sidebar, the Python API), and :func:`temperature_refused`
  turns a server's first refusal of a temperature into the same clear
  :class:`TemperatureRefused` (a ``ValueError``: the CLI exits 2), never a
  result.

The store key of a sample does not depend on which parameter carried the
limit: the model sees the same request either way.

:func:`reply_meta` keeps what a reply says about itself (the served
``model``, the provider's ``system_fingerprint``, token ``usage``): stored
beside each sample (:mod:`dbpa_core.data.provenance`), it lets a report say
which model actually answered and what the run cost.
"""

from __future__ import annotations

import re

from .._validation import redact

#: The two names of the length limit of a chat completion.
TOKEN_PARAMETERS = ("max_tokens", "max_completion_tokens")

# A model name as the hosted API spells it, after any "provider/" prefix (OpenRouter: "openai/gpt-5").
_COMPLETION_TOKENS = re.compile(r"(gpt-5|o[1-9])(?=$|[-._:])")
# Reasoning models whose only temperature is 1: the o-series and GPT-5 itself (not gpt-5-chat-*, not the
# gpt-5.x releases, which take a temperature when their reasoning is off; a refusal from them is caught
# after the first call instead).
_FIXED_TEMPERATURE = re.compile(r"(o[1-9]|gpt-5)(?=$|[-_:])(?!.*chat)")


def _base_name(model: str) -> str:
    return str(model).strip().lower().rsplit("/", 1)[-1]


def token_parameter(model: str) -> str:
    """``"max_completion_tokens"`` for GPT-5-class and o-series models, else ``"max_tokens"``."""
    return TOKEN_PARAMETERS[1] if _COMPLETION_TOKENS.match(_base_name(model)) else TOKEN_PARAMETERS[0]


def fixed_temperature(model: str) -> float | None:
    """The one temperature a model known to be a reasoning model accepts (1.0), or None."""
    return 1.0 if _FIXED_TEMPERATURE.match(_base_name(model)) else None


class OtherParameter(Exception):
    """The server refused the length parameter sent: the other one is to be sent instead."""


class TemperatureRefused(ValueError):
    """A model accepts only one temperature and was asked for another; the message says the fix."""


def temperature_message(model: str, temperature: float, allowed: float = 1.0, *, name: str = "temperature",
                        server: str = "") -> str:
    said = f" (the server: {server})" if server else ""
    return (f"`{name}` = {temperature:g} is refused by {model}{said}: it is a reasoning model that accepts only "
            f"temperature {allowed:g}. Set temperature: {allowed:g} for {model} (the SPEC's "
            f"`sampler.temperature`, or the sidebar's Temperature slider); nothing was sampled at "
            f"{temperature:g}.")


def check_model_temperature(model: str, temperature: float | None, name: str = "temperature") -> None:
    """Refuse, before any call, a temperature that ``model`` is known to refuse (:class:`TemperatureRefused`)."""
    allowed = fixed_temperature(model)
    if allowed is not None and temperature is not None and float(temperature) != allowed:
        raise TemperatureRefused(temperature_message(model, float(temperature), allowed, name=name))


def _server_words(error) -> tuple[str, str]:
    """(the refused parameter, the server's message) of an ``openai.APIStatusError``."""
    body = getattr(error, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    message = str(message or getattr(error, "message", "") or "")
    return str(getattr(error, "param", None) or ""), " ".join(message.split())[:300]


def parameter_refused(error, sent: str) -> bool:
    """Whether a 400 reply says that the length parameter ``sent`` is not supported (use the other one)."""
    if getattr(error, "status_code", None) != 400:
        return False
    param, message = _server_words(error)
    other = TOKEN_PARAMETERS[1] if sent == TOKEN_PARAMETERS[0] else TOKEN_PARAMETERS[0]
    lowered = message.lower()
    return param == sent or f"unsupported parameter: '{sent}'" in lowered or (
        sent in lowered and f"use '{other}'" in lowered) or (sent == "max_tokens" and other in lowered)


def temperature_refused(error, model: str, temperature: float) -> TemperatureRefused | None:
    """The :class:`TemperatureRefused` of a 400 reply that refuses the temperature, else None."""
    if getattr(error, "status_code", None) != 400:
        return None
    param, message = _server_words(error)
    if param != "temperature" and "temperature" not in message.lower():
        return None
    # OpenAI: "Only the default (1) value is supported."
    found = re.search(r"default \(([0-9.]+)\)", message)
    allowed = float(found.group(1)) if found else 1.0
    return TemperatureRefused(temperature_message(model, temperature, allowed, server=repr(message[:160])))


#: Token counts kept from a reply's ``usage`` (``reasoning_tokens``: hidden, billed as output).
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens")


def _field(source, name: str, default=None):
    """An attribute of the client's reply object, or a key of a JSON body (a batch result line)."""
    return source.get(name, default) if isinstance(source, dict) else getattr(source, name, default)


def reply_meta(response) -> dict | None:
    """What a chat completion says about itself: the served ``model``, ``system_fingerprint`` and ``usage``.

    Only short strings and non-negative integers are kept (a server may send anything there); None when the
    reply says nothing.  ``response`` is the client's reply object or the JSON body of a batch result line.
    """
    meta: dict = {}
    for name in ("model", "system_fingerprint"):
        value = _field(response, name, None)
        if isinstance(value, str) and value.strip() and len(value) <= 200:
            meta[name] = redact(value)  # a server echoing a key into its reply never gets it into a report
    usage = _field(response, "usage", None)
    counts = {}
    for name in USAGE_FIELDS:
        source = _field(usage, "completion_tokens_details", None) if name == "reasoning_tokens" else usage
        value = _field(source, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40:
            counts[name] = value
    if counts:
        meta["usage"] = counts
    return meta or None
