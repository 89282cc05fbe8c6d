"""Checking a SPEC's fields: :class:`SpecError` (naming the dotted key, never the value), the shared
validators of :mod:`dbpa_core._validation` wrapped to raise it, and the ``sampler`` and ``embedder`` blocks,
each backend with its own settings and none with a credential (:mod:`dbpa_core.audit.spec` reads the rest)."""

from __future__ import annotations

from .._validation import (CONCURRENCY_WHY, EMBED_BATCH_WHY, MAX_CONCURRENCY, MAX_EMBED_BATCH, MAX_N_CTX, MAX_RETRIES,
                           MAX_TIMEOUT, MAX_TOKENS, N_CTX_WHY, RETRIES_WHY, TOKENS_WHY, InvalidValue, check_base_url,
                           check_choice, check_positive_float, check_positive_int, check_temperature, has_credentials,
                           redact)
from ..embedders import EMBEDDER_SETTINGS, EMBEDDERS
from ..samplers import GENERATION_SETTINGS, SAMPLER_SETTINGS, SAMPLERS


class SpecError(ValueError):
    """The SPEC is malformed; the message names the key (and, from :func:`load_spec`, its line) and what is
    allowed, never the value written there (a SPEC may hold a key typed into the wrong field)."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


def fail(key: str, message: str):
    raise SpecError(f"`{key}` {message}", key)


def checked(check, value, key: str, *args, **kwargs):
    """A shared validator from :mod:`dbpa_core._validation`, its error re-raised as a SpecError naming ``key``
    (and not the value)."""
    try:
        return check(value, key, *args, **kwargs)
    except InvalidValue as error:
        raise SpecError(error.without_value, key) from None
    except ValueError as error:
        raise SpecError(str(error), key) from None


def mapping(value, key: str, allowed) -> dict:
    if not isinstance(value, dict):
        fail(key, "must be a mapping.")
    for name in value:
        if name not in allowed:
            fail(f"{key}.{name}", f"is not a known key; allowed: {', '.join(sorted(allowed))}.")
    return dict(value)


def _url(value, key: str) -> str | None:
    url = checked(check_base_url, value, key)
    if has_credentials(url):
        # A SPEC is a file that gets shared and committed: keys stay in the environment.
        fail(key, "holds a credential (user:password@ or a key parameter); remove it and set "
                   "OPENAI_API_KEY in the environment instead.")
    return url


def _no_credentials(settings: dict, key: str) -> None:
    # A key typed into `model` (or any other field) would be shown, stored and shared with the SPEC.
    for name, item in settings.items():
        if name != "base_url" and isinstance(item, str) and redact(item) != item:
            fail(f"{key}.{name}", "looks like a credential (an API key or a password); keys never go into a SPEC: "
                                   "set OPENAI_API_KEY in the environment instead.")


def sampler_block(value, key: str) -> dict:
    if isinstance(value, dict) and "api_key" in value:
        fail(f"{key}.api_key", "must not be in a SPEC; set OPENAI_API_KEY in the environment instead.")
    if not isinstance(value, dict):
        fail(key, "must be a mapping with a `backend`.")
    backend = checked(check_choice, value.get("backend"), f"{key}.backend", SAMPLERS)
    # Each backend takes its own settings: a key another backend would use is an error here,
    # not a TypeError from the constructor later.
    sampler = mapping(value, key, {"backend", *GENERATION_SETTINGS, *SAMPLER_SETTINGS[backend]})
    sampler["backend"] = backend
    _no_credentials(sampler, key)
    if backend == "openai" and not sampler.get("model"):
        fail(f"{key}.model", "is required for the openai backend (the model name the server knows).")
    if backend == "local" and "model" in sampler:
        from ..samplers.quantize import LOCAL_MODELS

        sampler["model"] = checked(check_choice, sampler["model"], f"{key}.model", LOCAL_MODELS)
    if sampler.get("temperature") is not None:
        sampler["temperature"] = checked(check_temperature, sampler["temperature"], f"{key}.temperature")
        if backend == "openai":  # a reasoning model accepts only temperature 1: said before any paid call
            from ..samplers.openai_models import check_model_temperature

            checked(lambda value, name: check_model_temperature(sampler["model"], value, name),
                     sampler["temperature"], f"{key}.temperature")
    if "max_tokens" in sampler:
        sampler["max_tokens"] = checked(check_positive_int, sampler["max_tokens"], f"{key}.max_tokens",
                                         maximum=MAX_TOKENS, why=TOKENS_WHY)
    for name, minimum, maximum, why in (("max_concurrency", 1, MAX_CONCURRENCY, CONCURRENCY_WHY),
                                        ("n_ctx", 16, MAX_N_CTX, N_CTX_WHY),
                                        ("max_retries", 0, MAX_RETRIES, RETRIES_WHY)):
        if name in sampler:
            sampler[name] = checked(check_positive_int, sampler[name], f"{key}.{name}", minimum=minimum,
                                     maximum=maximum, why=why)
    if "timeout" in sampler:
        sampler["timeout"] = checked(check_positive_float, sampler["timeout"], f"{key}.timeout",
                                      maximum=MAX_TIMEOUT, why="an hour")
    if "base_url" in sampler:
        sampler["base_url"] = _url(sampler["base_url"], f"{key}.base_url")
    _typed(sampler, key)
    return sampler


#: Settings of a fixed type: a YAML string such as 'no' is not false, and a list is not a model name.
_BOOLEANS = ("logprobs",)


_STRINGS = ("model", "path", "model_path")


def _typed(settings: dict, key: str) -> None:
    """Refuse a boolean setting that is not a boolean and a text setting that is not a string."""
    for name in _BOOLEANS:
        if name in settings and not isinstance(settings[name], bool):
            fail(f"{key}.{name}", "must be true or false (unquoted); a quoted 'no' or 'false' is text.")
    for name in _STRINGS:
        if name in settings and settings[name] is not None and not isinstance(settings[name], str):
            fail(f"{key}.{name}", f"must be a text, not a {type(settings[name]).__name__}.")


def embedder_block(value) -> dict:
    if isinstance(value, dict) and "api_key" in value:
        fail("embedder.api_key", "must not be in a SPEC; set OPENAI_API_KEY in the environment instead.")
    if not isinstance(value, dict):
        fail("embedder", "must be a mapping with a `name`.")
    name = checked(check_choice, value.get("name", "minilm"), "embedder.name", EMBEDDERS)
    embedder = mapping(value, "embedder", {"name", *EMBEDDER_SETTINGS[name]})
    embedder["name"] = name
    _no_credentials(embedder, "embedder")
    if "batch_size" in embedder:
        embedder["batch_size"] = checked(check_positive_int, embedder["batch_size"], "embedder.batch_size",
                                          maximum=MAX_EMBED_BATCH, why=EMBED_BATCH_WHY)
    for name, minimum, maximum, why in (("max_retries", 0, MAX_RETRIES, RETRIES_WHY),):
        if name in embedder:
            embedder[name] = checked(check_positive_int, embedder[name], f"embedder.{name}", minimum=minimum,
                                      maximum=maximum, why=why)
    if "timeout" in embedder:
        embedder["timeout"] = checked(check_positive_float, embedder["timeout"], "embedder.timeout",
                                       maximum=MAX_TIMEOUT, why="an hour")
    if "base_url" in embedder:
        embedder["base_url"] = _url(embedder["base_url"], "embedder.base_url")
    if "device" in embedder:
        from ..embedders.minilm import check_device

        embedder["device"] = checked(check_device, embedder["device"], "embedder.device")
    return embedder
