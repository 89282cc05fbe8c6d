"""HTTP for the OpenAI-compatible backends: every reply is size-capped while it is read, not after.

The ``openai`` client reads a whole reply into memory before anything can
look at it, so a server that answers with gigabytes (an endless body, a
wrong ``Content-Length``, a small gzip body that inflates a thousandfold)
would fill the memory before any check ran.  :func:`capped_http_client`
gives the client a transport that counts the bytes of each reply as they
arrive — after decompression, which it does itself — and stops at
``max_bytes`` with :class:`ReplyTooLarge`, an :class:`EndpointError` that
the client passes through untouched (it is an ``openai.OpenAIError`` too)
and that is never retried: the same request would get the same reply.
"""

from __future__ import annotations

import zlib

import httpx2
import openai

from .._validation import redact_url
from .base import EndpointError

#: Largest reply read from a chat or embeddings endpoint: a chat completion of 32 768 tokens with their
#: log-probabilities is ≈ 10 MB, 512 embeddings of 3 072 dimensions ≈ 33 MB.
MAX_REPLY_BYTES = 64 * 2**20
#: Largest file downloaded from a Batch API (OpenAI's output files of 50 000 requests stay well below).
MAX_FILE_BYTES = 2 * 2**30


class ReplyTooLarge(EndpointError, openai.OpenAIError):
    """A reply longer than the cap (read up to the cap, then dropped)."""


def _too_large(url: str, limit: int) -> ReplyTooLarge:
    return ReplyTooLarge(url, f"the reply is larger than {limit / 2**20:,.0f} MB, more than any answer to this "
                              "request can be: the server is misbehaving or `base_url` points at something else "
                              "(a file server, a proxy's error page). Check the server.")


class _CappedStream(httpx2.SyncByteStream):
    """The reply's bytes, decompressed here (gzip, deflate), stopped at ``limit`` decoded bytes."""

    def __init__(self, raw, encoding: str, limit: int, url: str):
        self._raw, self._limit, self._url = raw, limit, url
        self._decoder = None
        if encoding in ("gzip", "x-gzip"):
            self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._decoder = zlib.decompressobj(zlib.MAX_WBITS)

    def __iter__(self):
        total = 0
        for chunk in self._raw:
            if self._decoder is not None:
                try:
                    # At most one byte beyond the cap is inflated: a bomb never gets the chance.
                    chunk = self._decoder.decompress(chunk, self._limit - total + 1)
                except zlib.error as error:
                    raise EndpointError(self._url, f"the reply's compressed body is corrupt ({error}). "
                                                   "Check the server or a proxy in between.") from None
                if self._decoder.unconsumed_tail:
                    raise _too_large(self._url, self._limit)
            total += len(chunk)
            if total > self._limit:
                raise _too_large(self._url, self._limit)
            if chunk:
                yield chunk

    def close(self) -> None:
        self._raw.close()


def _ask_for_capped_encodings(request) -> None:
    # Only encodings inflated here under the cap are asked for (never br or zstd).
    request.headers["Accept-Encoding"] = "gzip, deflate"


def _capped(max_bytes: int):
    def cap(response) -> None:
        """Replace the reply's byte stream by one that stops at ``max_bytes`` (an httpx response hook: it runs
        before the body is read, for every transport, proxies included)."""
        url = redact_url(str(response.request.url.copy_with(query=None)))
        encoding = response.headers.get("content-encoding", "identity").strip().lower() or "identity"
        length = response.headers.get("content-length", "")
        if encoding == "identity" and length.isdigit() and int(length) > max_bytes:
            raise _too_large(url, max_bytes)
        if encoding not in ("identity", "gzip", "x-gzip", "deflate"):
            raise EndpointError(url, f"the reply is compressed with {encoding!r}, which was not asked for and "
                                     "cannot be read safely. Check the server or a proxy in between.")
        if encoding != "identity":
            # Decoded here: the length and encoding headers no longer describe the body handed on.
            del response.headers["content-encoding"]
            response.headers.pop("content-length", None)
        response.stream = _CappedStream(response.stream, encoding, max_bytes, url)

    return cap


def capped_http_client(max_bytes: int = MAX_REPLY_BYTES):
    """The ``http_client`` of an ``openai.OpenAI`` client whose replies are capped at ``max_bytes``."""
    return openai.DefaultHttpxClient(event_hooks={"request": [_ask_for_capped_encodings],
                                                  "response": [_capped(int(max_bytes))]})
