"""Streamlit's frontend files from memory (issue 45): ``dbpa_app.static_cache`` in front of Streamlit's handler.

The middleware is driven through ASGI in front of Streamlit's own static-file handler (the real one, on the
installed Streamlit's folder): what it answers must be what Streamlit answers, byte for byte, and it must ask
Streamlit once per file.  Then the app as users start it (``python -m dbpa_app``) in Chromium: a second
person's first visit must be answered without the server reading the frontend files again (the server's
``rchar`` in /proc/PID/io counts every byte its read calls returned), compressed, and show the same page.
"""

from __future__ import annotations

import asyncio
import gzip
import os
import sys
from pathlib import Path

import pytest
from streamlit import file_util
from streamlit.web.server.starlette.starlette_static_routes import create_streamlit_static_handler

from dbpa_app.static_cache import StaticFromMemory, frontend_files
from servers import CHROMIUM, CHROMIUM_ARGS, free_port, serve
from test_browser import settle

REPO = Path(__file__).resolve().parents[1]
STATIC = Path(file_util.get_static_dir())
INDEX_JS = next((STATIC / "static" / "js").glob("index.*.js"))
INDEX_PATH = "/static/js/" + INDEX_JS.name
FONT = next((STATIC / "static" / "media").glob("*.woff2"))


class Counted:
    """Streamlit's static handler, counting the requests that reach it."""

    def __init__(self) -> None:
        self.handler = create_streamlit_static_handler(str(STATIC), None)
        self.calls: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        self.calls.append(scope["path"])
        await self.handler(scope, receive, send)


async def ask(app, path: str, *headers: tuple[str, str], method: str = "GET"):
    """One HTTP request through ASGI: (status, headers as a dict of lowercase names, body)."""
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "headers": [(name.encode(), value.encode()) for name, value in headers],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8501)}
    start, body = {}, []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            start.update(message)
        else:
            body.append(message.get("body", b""))

    await app(scope, receive, send)
    return start["status"], {name.decode(): value.decode() for name, value in start["headers"]}, b"".join(body)


def test_a_file_is_asked_of_streamlit_once_and_answered_as_streamlit_answers_it():
    async def scenario():
        inner = Counted()
        app = StaticFromMemory(inner, directory=STATIC, base_url="")
        direct = await ask(create_streamlit_static_handler(str(STATIC), None), INDEX_PATH)
        first = await ask(app, INDEX_PATH, ("accept-encoding", "gzip"))
        compressing = app.kept[INDEX_PATH].gzipped is None  # the first visitor did not wait for compression
        await app.settled()
        answers = [await ask(app, INDEX_PATH) for _ in range(3)]
        packed = [await ask(app, INDEX_PATH, ("accept-encoding", "gzip, deflate, br")) for _ in range(2)]
        font = [await ask(app, "/static/media/" + FONT.name, ("accept-encoding", "gzip")) for _ in range(2)]
        return inner.calls, direct, first, compressing, answers, packed, font

    calls, direct, first, compressing, answers, packed, font = asyncio.run(scenario())
    assert calls == [INDEX_PATH, "/static/media/" + FONT.name]  # one request each reached Streamlit
    assert first == direct and compressing  # the first answer is Streamlit's, passed on as it came
    for status, headers, body in answers:
        assert status == 200 and body == INDEX_JS.read_bytes()
        assert {**direct[1], "vary": "Accept-Encoding"} == headers  # Streamlit's headers, plus Vary
    for status, headers, body in packed:
        assert status == 200 and headers["content-encoding"] == "gzip" and int(headers["content-length"]) == len(body)
        assert gzip.decompress(body) == INDEX_JS.read_bytes() and len(body) < len(INDEX_JS.read_bytes()) / 2
        assert headers["etag"] != direct[1]["etag"] and headers["cache-control"] == direct[1]["cache-control"]
    for status, headers, body in font:  # woff2 is compressed already: kept, sent as it is
        assert status == 200 and "content-encoding" not in headers and body == FONT.read_bytes()


def test_before_its_compressed_copy_is_made_a_file_is_answered_as_it_is():
    """Between the first answer and the end of its compression, a file is answered uncompressed (with Vary)."""

    async def scenario():
        app = StaticFromMemory(Counted(), directory=STATIC, base_url="")
        await ask(app, INDEX_PATH)
        meanwhile = await ask(app, INDEX_PATH, ("accept-encoding", "gzip"))
        await app.settled()
        return meanwhile, await ask(app, INDEX_PATH, ("accept-encoding", "gzip"))

    meanwhile, after = asyncio.run(scenario())
    assert meanwhile[0] == 200 and meanwhile[2] == INDEX_JS.read_bytes() and "content-encoding" not in meanwhile[1]
    assert meanwhile[1]["vary"] == "Accept-Encoding"
    assert after[1]["content-encoding"] == "gzip" and gzip.decompress(after[2]) == INDEX_JS.read_bytes()


def test_what_is_not_a_whole_immutable_file_goes_to_streamlit_every_time():
    async def scenario():
        inner = Counted()
        app = StaticFromMemory(inner, directory=STATIC, base_url="")
        ranged = [await ask(app, INDEX_PATH, ("range", "bytes=0-99")) for _ in range(2)]
        head = [await ask(app, INDEX_PATH, method="HEAD") for _ in range(2)]
        conditional = await ask(app, INDEX_PATH, ("if-none-match", ranged[0][1]["etag"]))
        missing = [await ask(app, "/static/js/not-a-chunk.js") for _ in range(2)]
        root = [await ask(app, "/") for _ in range(2)]
        return inner.calls, ranged, head, conditional, missing, root, app.kept

    calls, ranged, head, conditional, missing, root, kept = asyncio.run(scenario())
    assert len(calls) == 2 + 2 + 1 + 2 + 2 and kept == {}
    assert all(status == 206 and len(body) == 100 for status, _, body in ranged)
    assert all(status == 200 and body == b"" for status, _, body in head)
    assert conditional[0] == 304
    # An unknown path is the app's HTML (Streamlit's client-side routing), never kept: it is not immutable.
    assert all(status == 200 and headers["cache-control"] == "no-cache" and b"<html" in body
               for status, headers, body in missing + root)


def test_people_arriving_together_ask_streamlit_once():
    async def scenario():
        inner = Counted()
        app = StaticFromMemory(inner, directory=STATIC, base_url="")
        answers = await asyncio.gather(*(ask(app, INDEX_PATH, ("accept-encoding", "gzip")) for _ in range(8)))
        return inner.calls, answers

    calls, answers = asyncio.run(scenario())
    assert calls == [INDEX_PATH]
    # Each gets the file: the first as Streamlit gives it, the others from memory (compressed once it is ready).
    assert all((gzip.decompress(body) if headers.get("content-encoding") == "gzip" else body) == INDEX_JS.read_bytes()
               for _, headers, body in answers)


def test_a_first_request_that_fails_leaves_the_others_to_streamlit():
    """The first request for a file breaks off (its browser went away): those waiting for it get Streamlit's
    own answer, and the file is kept by the next request that completes."""

    class BreaksFirst(Counted):
        async def __call__(self, scope, receive, send):
            self.calls.append(scope["path"])
            if len(self.calls) == 1:
                await asyncio.sleep(0.05)  # the others arrive meanwhile
                raise OSError("connection lost")
            await self.handler(scope, receive, send)

    async def scenario():
        inner = BreaksFirst()
        app = StaticFromMemory(inner, directory=STATIC, base_url="")
        answers = await asyncio.gather(*(ask(app, INDEX_PATH) for _ in range(3)), return_exceptions=True)
        waited = list(inner.calls), list(app.kept)
        again = [await ask(app, INDEX_PATH) for _ in range(2)]
        return waited, inner.calls, answers, again, app.kept

    waited, calls, answers, again, kept = asyncio.run(scenario())
    assert isinstance(answers[0], OSError)
    assert all(status == 200 and body == INDEX_JS.read_bytes() for status, _, body in answers[1:] + again)
    assert len(waited[0]) == 3 and waited[1] == []  # the two waiting asked Streamlit; nothing kept yet
    assert len(calls) == 4 and list(kept) == [INDEX_PATH]  # the next request kept it, the last one used it


def test_only_the_files_in_streamlits_folder_can_be_kept():
    known = frontend_files(STATIC)
    assert INDEX_PATH in known and len(known) == sum(1 for p in (STATIC / "static").rglob("*") if p.is_file())
    app = StaticFromMemory(None, directory=STATIC, base_url="/room/")

    def scope(path, **extra):
        return {"type": "http", "method": "GET", "path": path, "headers": [], **extra}

    assert app._file(scope("/room" + INDEX_PATH)) == INDEX_PATH
    assert app._file(scope(INDEX_PATH)) == INDEX_PATH  # a proxy that strips the prefix
    assert app._file(scope("/room/static/js/../js/" + INDEX_JS.name)) is None  # only the exact spelling
    assert app._file(scope("/room/static/js/x.js")) is None and app._file(scope("/index.html")) is None
    assert app._file({**scope(INDEX_PATH), "type": "websocket"}) is None


# ------------------------------------------------------------------------------------ the app, in Chromium
def rchar(pid: int) -> int:
    """Bytes the process's read calls have returned so far (files and sockets; /proc/PID/io)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/PID/io")


def test_a_new_visitor_costs_the_server_no_file_reads(tmp_path):
    """Two people's first visits to *Reproduce the paper* of ``python -m dbpa_app`` (not the home page, which
    loads MiniLM in the background after its first view: 90 MB of reads): the second one's frontend files
    (≈ 100 requests, megabytes) come from memory — the server's reads during that visit stay far below the
    bytes it sent — every JS and CSS file of 1 kB or more arrives gzip-compressed, and both pages draw to
    their end without an exception.  (That every page shows the same as with Streamlit's own handler was
    compared once, page by page: bench/RESULTS.md, "Static files from memory".)"""
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not installed")
    from playwright.sync_api import sync_playwright

    port = free_port()
    command = [sys.executable, "-m", "dbpa_app", "--server.headless", "true", "--server.address", "127.0.0.1",
               "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    env = {"DBPA_STORE": str(tmp_path / "store.sqlite"), "PYTHONPATH": os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")])}
    with serve(command, f"http://127.0.0.1:{port}/_stcore/health", tmp_path / "streamlit.log", env=env, cwd=REPO,
               timeout=180) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

        def first_visit():
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            answers = []
            page.on("response", lambda response: answers.append(response))
            page.goto(f"http://127.0.0.1:{port}/reproduce", wait_until="commit")
            page.get_by_text("Read one row").first.wait_for(timeout=300_000)
            settle(page)  # the whole page drawn, and still
            text = page.locator("[data-testid='stMain']").inner_text()
            static = [(r.url, r.all_headers(), len(r.body())) for r in answers
                      if "/static/" in r.url and r.status == 200]
            errors = page.locator("[data-testid='stException']").count()
            context.close()
            return text, static, errors

        first, _, first_errors = first_visit()  # Streamlit serves each file once, the middleware keeps it
        before = rchar(server.pid)
        second, static, second_errors = first_visit()
        read = rchar(server.pid) - before
        browser.close()
    sent = sum(size for *_, size in static)
    texts = [(url, headers) for url, headers, size in static if url.endswith((".js", ".css")) and size >= 1000]
    assert first_errors == second_errors == 0
    assert len(static) >= 30 and sent > 3_000_000, (len(static), sent)  # a first visit's frontend files
    # Streamlit's handler reads every file from disk for every visitor (read ≥ sent); from memory the reads
    # are the requests and the websocket's frames, a few hundred kB.
    assert read < sent / 5, (read, sent)
    assert all(headers.get("content-encoding") == "gzip" for _, headers in texts), [
        url for url, headers in texts if headers.get("content-encoding") != "gzip"]
    assert "Read one row" in first and "Read one row" in second  # each visitor's page drawn to its end
    assert "Traceback" not in (tmp_path / "streamlit.log").read_text()
