"""Streamlit's frontend files (``/static/…``) answered from memory, gzip-compressed once (issue 45).

A first visit asks the server for Streamlit's JavaScript chunks, CSS and fonts, all under ``/static/``.
Streamlit serves each from disk on every request: the file looked up, opened, read in 64 KiB pieces and
closed, each step handed to a worker thread, behind the whole middleware stack and the router, and sent
uncompressed.  That was most of the server's CPU for a new session (bench/RESULTS.md, "Static files
from memory").  This middleware, placed in front of Streamlit's by :mod:`dbpa_app.serve`, keeps each
answer the first time Streamlit gives it — its status, headers and bytes exactly, kept only when
Streamlit itself marked it ``immutable`` (the content-hashed files, cached by browsers for a year) — and
answers every later request for the same file from memory, gzip-compressed once for browsers that
accept it (a room's Wi-Fi then carries about a quarter of the bytes).  The first answer goes to its
browser as Streamlit gives it and is compressed afterwards, in a worker thread: a fresh server's first
visitor, the one a class waits for, never waits for compression (bench/bench_first_decision.py).

Only the files that exist under Streamlit's static folder when the server starts can be kept (so memory
is bounded by that folder, ≈ 26 MB with the compressed copies), and only plain ``GET`` requests: a
``Range`` or a conditional request, the HTML, the websocket, the app's media and everything else go to
Streamlit as before.
"""

from __future__ import annotations

import asyncio
import gzip
from dataclasses import dataclass
from pathlib import Path

#: Types worth compressing (JavaScript, CSS, JSON, SVG, source maps); fonts (woff2) and images already are.
COMPRESSIBLE = (b"text/", b"application/javascript", b"application/json", b"image/svg+xml")
#: zlib's level 6: within ≈ 2 % of level 9's size here at about half its one-time CPU.
LEVEL = 6
#: Headers a request may carry that ask for something other than the whole file as it is.
PASS_THROUGH = (b"range", b"if-none-match", b"if-modified-since", b"if-range")


@dataclass(frozen=True)
class Kept:
    """One file's answer as Streamlit gave it, and its gzip-compressed form (``None``: not made yet, or not worth
    it: ``compressible`` says which)."""

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    gzipped: bytes | None
    gzipped_headers: tuple[tuple[bytes, bytes], ...]
    compressible: bool = False


def frontend_files(directory: Path) -> frozenset[str]:
    """The URL paths (``/static/…``) of every file in Streamlit's static folder ``directory``."""
    return frozenset("/" + path.relative_to(directory).as_posix()
                     for path in (directory / "static").rglob("*") if path.is_file())


def _keep(status: int, headers: list[tuple[bytes, bytes]], body: bytes, *, compress: bool = True) -> Kept:
    """The answer to keep; with ``compress``, its compressed form too when the type compresses (in a worker
    thread: level 6 takes ≈ 0.1 s for Streamlit's largest chunk)."""
    named = {name.lower(): value for name, value in headers}
    kind = named.get(b"content-type", b"")
    if len(body) < 1000 or b"content-encoding" in named or not kind.startswith(COMPRESSIBLE):
        return Kept(status, tuple(headers), body, None, ())
    # Both forms say that they vary with Accept-Encoding, so a shared cache on the way keeps them apart.
    plain = tuple((name, value) for name, value in headers if name.lower() != b"vary") + (
        (b"vary", b"Accept-Encoding"),)
    if not compress:
        return Kept(status, plain, body, None, (), compressible=True)
    packed = gzip.compress(body, compresslevel=LEVEL, mtime=0)
    etag = named.get(b"etag")
    rewritten = []
    for name, value in plain:
        lower = name.lower()
        if lower == b"content-length":
            value = str(len(packed)).encode()
        elif lower == b"etag" and etag is not None:  # another representation, another validator (RFC 9110 8.8.3)
            value = etag[:-1] + b'-gzip"' if etag.endswith(b'"') else etag + b"-gzip"
        rewritten.append((name, value))
    rewritten.append((b"content-encoding", b"gzip"))
    return Kept(status, plain, body, packed, tuple(rewritten), compressible=True)


def _accepts_gzip(scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"accept-encoding":
            return any(part.split(b";")[0].strip() == b"gzip" and not part.replace(b" ", b"").endswith(b"q=0")
                       for part in value.lower().split(b","))
    return False


class StaticFromMemory:
    """ASGI middleware: Streamlit's immutable frontend files answered from memory after their first request.

    Parameters
    ----------
    app : ASGI application
        Streamlit's application (its middleware and routes), which answers everything else and gives each
        file's first answer.
    directory : path-like, optional
        Streamlit's static folder (default: the installed Streamlit's, ``streamlit.file_util.get_static_dir``).
    base_url : str, optional
        ``server.baseUrlPath`` when the app is served under a prefix (default: read from Streamlit's config).
    """

    def __init__(self, app, *, directory=None, base_url: str | None = None) -> None:
        if directory is None:
            from streamlit import file_util

            directory = file_util.get_static_dir()
        if base_url is None:
            from streamlit import config

            base_url = config.get_option("server.baseUrlPath") or ""
        self.app = app
        self.known = frontend_files(Path(directory))
        self.prefix = "/" + base_url.strip("/") if base_url.strip("/") else ""
        self.kept: dict[str, Kept] = {}
        self._pending: dict[str, asyncio.Future] = {}
        self._compressing: set[asyncio.Task] = set()

    def _file(self, scope) -> str | None:
        """The static file this request is for (its path without any prefix), or ``None``."""
        if scope["type"] != "http" or scope.get("method") != "GET":
            return None
        path = scope.get("path", "")
        for prefix in (scope.get("root_path", ""), self.prefix):
            if prefix and (path == prefix or path.startswith(prefix + "/")):
                path = path[len(prefix):]
        if path not in self.known or any(name in PASS_THROUGH for name, _ in scope.get("headers", ())):
            return None
        return path

    async def __call__(self, scope, receive, send) -> None:
        path = self._file(scope)
        if path is None:
            await self.app(scope, receive, send)
            return
        kept = self.kept.get(path)
        if kept is None:
            pending = self._pending.get(path)
            if pending is not None:  # another request is fetching it: wait for that answer
                kept = await asyncio.shield(pending)
                if kept is None:  # Streamlit's answer was not one to keep, or never came: ask Streamlit
                    await self.app(scope, receive, send)
                    return
            else:  # the first request for it: answered as Streamlit gives it
                await self._first(path, scope, receive, send)
                return
        gzipped = kept.gzipped is not None and _accepts_gzip(scope)
        await send({"type": "http.response.start", "status": kept.status,
                    "headers": list(kept.gzipped_headers if gzipped else kept.headers)})
        await send({"type": "http.response.body", "body": kept.gzipped if gzipped else kept.body})

    async def _first(self, path: str, scope, receive, send) -> None:
        """Streamlit answers the first request, passed on to its browser as it comes; the answer is kept if it
        is immutable, its compressed form made afterwards in a worker thread (the first visitor of a fresh
        server, the one a class waits for, never waits for compression)."""
        future = asyncio.get_running_loop().create_future()
        self._pending[path] = future
        start, parts = {}, []

        async def relay(message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
            await send(message)

        kept = None
        try:
            await self.app(scope, receive, relay)
            headers = list(start.get("headers", ()))
            cache = b"".join(value for name, value in headers if name.lower() == b"cache-control")
            if start.get("status") == 200 and b"immutable" in cache:
                kept = _keep(200, headers, b"".join(parts), compress=False)
                self.kept[path] = kept
                if kept.compressible:
                    task = asyncio.get_running_loop().create_task(self._compress(path, kept))
                    self._compressing.add(task)
                    task.add_done_callback(self._compressing.discard)
        finally:  # a failed or cancelled request (its browser went away) leaves nothing kept: the ones waiting
            future.set_result(kept)  # for it ask Streamlit themselves
            del self._pending[path]

    async def settled(self) -> None:
        """Return once every compression under way has finished (the tests wait for it)."""
        while self._compressing:
            await asyncio.gather(*self._compressing)

    async def _compress(self, path: str, kept: Kept) -> None:
        """Replace the kept answer by one with its compressed form (made in a worker thread)."""
        self.kept[path] = await asyncio.to_thread(_keep, kept.status, list(kept.headers), kept.body)
