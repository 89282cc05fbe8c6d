"""Calling an OpenAI-compatible endpoint: the client, and every failure handled by us, not by the client.

``timeout`` bounds each attempt as a whole (the HTTP client's own timeout
bounds only the gap between two bytes, so a server trickling one byte a
second would hold a call indefinitely); 408/409/429/5xx and timeouts are
retried ``max_retries`` times with exponential backoff or the server's
``Retry-After``; a Retry-After pauses every call of the sampler, not only
the one that was refused (:class:`RateGate`: the calls in flight would
otherwise keep hitting a server that asked for a pause, and each be refused
in turn); a refused connection fails at once (nothing listens there,
waiting will not help); a reply that is not a chat completion (an HTML page,
no ``choices``) is an error, never an empty sample.  Every failure is an
:class:`~.base.EndpointError` naming the URL, without credentials.  Used by
the chat sampler (:mod:`.openai_compatible`), the embedder and the Batch API.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.parse

from .._validation import redact_logs, register_secret
from .base import EndpointError

NO_KEY = "sk-no-key-required"  # local servers accept any key
OPENAI_URL = "https://api.openai.com/v1"
#: Statuses worth another attempt besides every 5xx (timeout, conflict, rate limit).
RETRY_STATUSES = frozenset({408, 409, 429})
#: Longest Retry-After honoured; a server asking for more is reported instead.
MAX_RETRY_AFTER = 60.0


def make_client(base_url: str | None, api_key: str | None, timeout: float, *, max_reply_bytes: int | None = None):
    """An ``openai.OpenAI`` client without its own retries; the key comes from the argument or ``OPENAI_API_KEY``.

    Every reply is capped while it is read (:mod:`._http`); the key, and a password written into
    ``base_url``, are registered with :func:`dbpa_core._validation.register_secret` so that no message
    can carry them.
    """
    from openai import OpenAI  # lazy: only the HTTP backends need it

    from ._http import MAX_REPLY_BYTES, capped_http_client

    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if base_url is None:
            raise ValueError("`api_key`: the OpenAI API needs a key; set OPENAI_API_KEY or enter it in the sidebar "
                             "(or give a `base_url` for a local server).")
        key = NO_KEY
    register_secret(key if key != NO_KEY else None)
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in key):
        # An HTTP header cannot carry it: the client would fail with "Connection error", read as the network's.
        where = "`api_key`" if api_key else "OPENAI_API_KEY"
        raise ValueError(f"{where} holds a space, a newline or another control character (often a newline pasted "
                         "at its end); remove it: a key is one word.")
    if base_url:
        register_secret(urllib.parse.urlsplit(base_url).password)
    redact_logs()
    return OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=0,
                  http_client=capped_http_client(max_reply_bytes or MAX_REPLY_BYTES))


class RateGate:
    """A pause shared by the concurrent calls of one sampler: set by a Retry-After, honoured by every call."""

    def __init__(self):
        self._lock = threading.Lock()
        self._until = 0.0

    def pause(self, seconds: float) -> None:
        """No call starts within ``seconds`` from now."""
        with self._lock:
            self._until = max(self._until, time.monotonic() + seconds)

    def wait(self) -> None:
        """Sleep until the pause (if any) is over."""
        while (left := self._until - time.monotonic()) > 0:
            time.sleep(left)


class _Deadline(Exception):
    """An attempt took longer than ``timeout`` in total."""


def _before_deadline(request, timeout: float):
    # The call runs in a daemon thread so that the caller can give up on it at
    # the deadline; the HTTP client's own timeout ends the thread later, and
    # a daemon thread never holds up the exit of the process.
    outcome: dict = {}
    finished = threading.Event()

    def run():
        try:
            outcome["value"] = request()
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error
        finally:
            finished.set()

    threading.Thread(target=run, daemon=True, name="endpoint-call").start()
    if not finished.wait(timeout):
        raise _Deadline
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _retry_after(headers) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms`` or ``Retry-After`` in seconds or as a date)."""
    import email.utils

    for header, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(header) if headers is not None else None
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            try:
                return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
            except (TypeError, ValueError):
                return None
    return None


def _unreachable(error: BaseException) -> str | None:
    """Why no connection can be made ('connection refused', an unknown host), or None if it may be transient."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ConnectionRefusedError) or "connection refused" in str(error).lower():
            return "connection refused: nothing is listening there. Start the server, or correct the host and port"
        if isinstance(error, socket.gaierror) or "name or service not known" in str(error).lower():
            return "unknown host name. Correct the host in `base_url`"
        error = error.__cause__ or error.__context__
    return None


def _redirect_loop(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is httpx's TooManyRedirects."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if type(error).__name__ == "TooManyRedirects":
            return True
        error = error.__cause__ or error.__context__
    return False


def _status_reason(error, attempts: int) -> str:
    status = error.status_code
    detail = str(getattr(error, "message", "") or "").strip().replace("\n", " ")[:200]
    detail = f" ({detail})" if detail else ""
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if status in (401, 403):
        return f"HTTP {status}: the key was refused{detail}. Set OPENAI_API_KEY (or the key field) to a valid key."
    if status == 404:
        return (f"HTTP 404: not found{detail}. Check that `base_url` is the API root (usually ending in /v1) and "
                "that the server serves `model`.")
    if status == 429:
        return (f"HTTP 429: rate limited{tries}{detail}. Lower `max_concurrency`, raise `max_retries`, or try "
                "again later.")
    if status >= 500:
        return f"HTTP {status}: server error{tries}{detail}. Check the server's log, or try again later."
    return f"HTTP {status}{detail}. Check the request settings (model, max_tokens, temperature)."


def call_endpoint(request, *, url: str, timeout: float, max_retries: int, gate: RateGate | None = None,
                  refusal=None):
    """Run ``request()`` (one client call) with a deadline per attempt and retries.

    Parameters
    ----------
    request : callable
        Makes one HTTP call with an ``openai`` client and returns its reply.
    url : str
        For messages (credentials already removed).
    timeout : float
        Seconds each attempt may take, from the request to the last byte.
    max_retries : int
        Extra attempts after a timeout, a dropped connection, 408/409/429
        or 5xx; waits ``Retry-After`` if the server sends it, else
        0.5 s, 1 s, 2 s, … (at most 8 s).
    gate : RateGate, optional
        Shared by the calls of one sampler: a server's Retry-After pauses
        them all, and every attempt first waits for the pause to end.
    refusal : callable(openai.APIStatusError) -> Exception or None, optional
        Asked about every status that is not retried: an exception it returns
        is raised instead of the generic :class:`EndpointError` (a 400 that
        refuses a parameter or a temperature, :mod:`.openai_models`).

    Raises
    ------
    EndpointError
        Naming ``url``, what went wrong and the fix.
    """
    import openai

    for attempt in range(max_retries + 1):
        wait = min(8.0, 0.5 * 2**attempt)
        if gate is not None:
            gate.wait()
        try:
            return _before_deadline(request, timeout)
        except openai.APIStatusError as error:
            if not (error.status_code in RETRY_STATUSES or error.status_code >= 500) or attempt == max_retries:
                replaced = refusal(error) if refusal is not None else None
                raise (replaced or EndpointError(url, _status_reason(error, attempt + 1))) from None
            asked = _retry_after(error.response.headers)
            if asked is not None and asked > MAX_RETRY_AFTER:
                raise EndpointError(url, f"HTTP {error.status_code}: the server asks to wait {asked:.0f} s "
                                    "before trying again; try again later.") from None
            if asked is not None:
                wait = asked
                if gate is not None:
                    gate.pause(asked)
                    wait = 0.0  # gate.wait() at the next attempt
        except (_Deadline, openai.APITimeoutError):
            if attempt == max_retries:
                raise EndpointError(url, f"no complete reply within `timeout` = {timeout:g} s, {attempt + 1} "
                                    "attempt(s): the server is stalled or too slow. Raise `timeout` or "
                                    "check the server.") from None
        except openai.APIResponseValidationError as error:
            raise EndpointError(url, f"the reply does not have the expected form ({error}).") from None
        except (ValueError, RecursionError) as error:
            # The client could not parse the reply (not JSON, cut short, nested beyond reason): the server's
            # fault, never the user's input.
            raise EndpointError(url, f"the reply is not valid JSON ({type(error).__name__}: "
                                     f"{str(error)[:80]}): the server sent something else than an API "
                                     "reply, or cut it short. Check `base_url` and the server.") from None
        except openai.APIConnectionError as error:
            unreachable = _unreachable(error)
            if _redirect_loop(error):
                raise EndpointError(url, "the server redirects in a loop (too many redirects); check `base_url` "
                                    "(http:// or https://, and its path).") from None
            if unreachable:
                raise EndpointError(url, f"{unreachable} in `base_url`.") from None
            if attempt == max_retries:
                raise EndpointError(url, f"the connection failed {attempt + 1} times ({error}); check `base_url` "
                                    "and the network.") from None
        time.sleep(wait)
    raise AssertionError("unreachable")  # the loop returns or raises


def not_json_reason(reply) -> str:
    """Why a reply that is not the expected JSON object cannot be used."""
    if isinstance(reply, str | bytes):
        text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else reply
        snippet = " ".join(text.split())[:60]
        return (f"the reply is not JSON but text starting {snippet!r}: `base_url` should be the API root of an "
                "OpenAI-compatible server, usually ending in /v1.")
    return f"the reply has an unexpected form ({type(reply).__name__})."
