"""Real servers started by tests on 127.0.0.1 (free port), stopped afterwards."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, process: subprocess.Popen, timeout: float, log: Path, *, poll: float = 0.5) -> None:
    """Return once ``url`` answers 200 (asked every ``poll`` seconds); fail if ``process`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(poll)
    raise TimeoutError(f"{url} not ready after {timeout} s:\n{log.read_text()[-3000:]}")


@contextmanager
def serve(command: list[str], ready_url: str, log: Path, *, env: dict | None = None, cwd=None,
          timeout: float = 120):
    """Run ``command`` until ``ready_url`` answers 200; terminate it afterwards."""
    with open(log, "w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, cwd=cwd,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    try:
        wait_for_http(ready_url, process, timeout=timeout, log=log)
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen) -> None:
    """Terminate ``process``; kill it if it has not exited 20 s later."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def llama_cpp_server(model_path: str, *, n_parallel_models: bool = True):
    """``python -m llama_cpp.server`` serving the GGUF for chat (alias ``smollm2``)
    and for embeddings (alias ``smollm2-embed``)."""
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="llama-server-"))
    config = {
        "host": "127.0.0.1",
        "port": port,
        "models": [
            {"model": model_path, "model_alias": "smollm2", "n_ctx": 2048, "n_threads": 2, "verbose": False},
            {"model": model_path, "model_alias": "smollm2-embed", "embedding": True, "n_ctx": 512,
             "n_threads": 2, "verbose": False},
        ],
    }
    (workdir / "config.json").write_text(json.dumps(config))
    with serve([sys.executable, "-m", "llama_cpp.server", "--config_file", str(workdir / "config.json")],
               f"http://127.0.0.1:{port}/v1/models", workdir / "server.log", timeout=180):
        yield f"http://127.0.0.1:{port}/v1"


REPO = Path(__file__).resolve().parents[1]
#: The system Chromium (Debian's by default; DBPA_CHROMIUM names another).  Never a downloaded browser.
CHROMIUM = os.environ.get("DBPA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@contextmanager
def streamlit_app(store_folder: Path, timeout: float = 120):
    """``python -m dbpa_app`` (the packaged app and its settings) headless on 127.0.0.1 (free port), own store.

    Yields the base URL once the health check answers; stops the server afterwards.
    """
    port = free_port()
    command = [sys.executable, "-m", "dbpa_app", "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    with serve(command, f"http://127.0.0.1:{port}/_stcore/health", Path(store_folder) / "streamlit.log",
               env={"DBPA_STORE": str(Path(store_folder) / "store.sqlite")}, cwd=REPO, timeout=timeout):
        yield f"http://127.0.0.1:{port}"


@contextmanager
def browser_app(store_folder: Path):
    """The app for a browser test (:func:`streamlit_app`), once Debian's Chromium is known to be there: a test
    fails in CI, which installs it (scripts/install.sh), and is skipped elsewhere."""
    import pytest

    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is not installed (scripts/install.sh installs it)")
        pytest.skip("chromium not installed")
    with streamlit_app(store_folder) as url:
        yield url


@contextmanager
def chromium_browser():
    """Headless Debian Chromium driven by Playwright (never ``playwright install``), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


# --------------------------------------------------------------------------- a server that misbehaves on purpose
def chat_completion(content, *, model: str = "m") -> dict:
    """The JSON body of a chat completion whose message content is ``content`` (may be None)."""
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop" if content is not None else "content_filter",
                         "message": {"role": "assistant", "content": content}}]}


class Reply:
    """What the misbehaving server does with one request.

    ``status``/``body``/``headers``: the reply (``body`` a dict is sent as
    JSON, bytes as they are with ``content_type``); ``stall``: seconds to
    wait before answering; ``trickle``: seconds between the bytes of the
    body; ``die``: drop the connection without a reply and stop the server
    (later connections are refused); ``hangup``: drop the connection without
    a reply and keep serving; ``content_length``: the length
    announced instead of the body's (a longer one: a body cut short);
    ``endless``: no length announced, ``body`` sent again and again until the
    client hangs up.
    """

    def __init__(self, body=None, *, status: int = 200, headers: dict | None = None,
                 content_type: str = "application/json", stall: float = 0.0, trickle: float = 0.0,
                 die: bool = False, content_length: int | None = None, endless: bool = False,
                 hangup: bool = False):
        self.hangup = hangup
        self.body, self.status, self.headers = body, status, headers or {}
        self.content_type, self.stall, self.trickle, self.die = content_type, stall, trickle, die
        self.content_length, self.endless = content_length, endless


@contextmanager
def misbehaving_server(script):
    """An OpenAI-compatible endpoint on 127.0.0.1 (free port) that answers as ``script`` says.

    ``script(number, request)`` gets the 0-based number of the request and
    its JSON body and returns a :class:`Reply`.  Yields ``(base_url,
    requests)``, ``requests`` being the list of JSON bodies received.  The
    server is stopped at the end (sleeping handlers are woken and dropped).
    """
    requests: list[dict] = []
    lock = threading.Lock()
    stopping = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 - the http.server API
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:  # a file upload (multipart): what the script sees is its size
                body = {"bytes": len(raw)}
            with lock:
                number = len(requests)
                requests.append(body)
            reply = script(number, body)
            if reply.die:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                threading.Thread(target=stop, daemon=True).start()
                return
            if reply.hangup:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply.stall and stopping.wait(reply.stall):
                return
            payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                if reply.endless:
                    self.close_connection = True  # the body ends when the connection does
                else:
                    self.send_header("Content-Length", str(reply.content_length or len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if reply.endless:
                    while not stopping.is_set():
                        self.wfile.write(payload)
                elif reply.content_length and reply.content_length > len(payload):
                    self.wfile.write(payload)
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif reply.trickle:
                    for byte in payload:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        if stopping.wait(reply.trickle):
                            return
                else:
                    self.wfile.write(payload)
            except OSError:
                pass  # the client gave up (its deadline): nothing to answer

        do_GET = do_POST  # noqa: N815 - Batch API status and file downloads are GETs

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # A client that hangs up mid-reply (on purpose, in these tests) is no error: nothing on stderr.
    server.handle_error = lambda request, address: None
    stopped = threading.Event()

    def stop():
        if not stopped.is_set():
            stopped.set()
            stopping.set()
            server.shutdown()
            server.server_close()

    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", requests
    finally:
        stop()
        thread.join(10)


class LocalAPI:
    """An HTTP server on 127.0.0.1 (free port) that answers every call with :meth:`answer` (a subclass
    routes on the method and path: OpenAI's Files and Batches endpoints, say); a context manager."""

    def __init__(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def respond(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                payload, content_type = api.answer(self.command, self.path, self.headers, raw)
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = respond

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def answer(self, method: str, path: str, headers, raw: bytes) -> tuple[dict | str, str]:
        raise NotImplementedError

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class RecordingServer(LocalAPI):
    """An OpenAI-compatible chat endpoint that records every request body it receives (``bodies``) and answers
    each with the chat completion of :meth:`reply`."""

    def __init__(self):
        super().__init__()
        self.bodies = []

    def reply(self, body: dict) -> str:
        """The reply's text (a subclass makes it a function of the request)."""
        return f"reply for seed {body['seed']}"

    def answer(self, method, path, headers, raw):
        body = json.loads(raw)
        self.bodies.append(body)
        return chat_completion(self.reply(body), model=body["model"]), "application/json"


# --------------------------------------------------------------------------- a server that answers like api.openai.com
REASONING_PREFIXES = ("gpt-5", "o1", "o3", "o4")
_WORDS = ("tilt", "orbit", "axis", "sunlight", "angle", "summer", "winter", "hemisphere", "daylight", "season")


def hosted_openai(*, reasoning: tuple[str, ...] = ()):
    """A :func:`misbehaving_server` script that answers as the hosted OpenAI API does (HTTP 400 bodies as it
    words them): GPT-5-class and o-series models (and the names in ``reasoning``) refuse ``max_tokens`` and
    every temperature but 1; every other model takes ``max_tokens`` only, as older servers do.  A chat
    completion names its served snapshot (``<model>-2025-08-07``), a ``system_fingerprint`` and its ``usage``
    (prompt 12, completion 7 of which 3 reasoning, for a reasoning model); ``/embeddings`` calls (a body with
    ``input``) get a vector per text hashed from it."""
    import hashlib

    def refuse(param: str, message: str) -> Reply:
        return Reply({"error": {"message": message, "type": "invalid_request_error", "param": param,
                                "code": "unsupported_parameter" if param != "temperature" else "unsupported_value"}},
                     status=400)

    def script(number, body):
        if "input" in body:  # an embeddings call
            vectors = [[b / 255 - 0.5 for b in hashlib.sha256(text.encode()).digest()[:8]] for text in body["input"]]
            return Reply({"object": "list", "model": body.get("model", "e"), "data": [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]})
        model = body.get("model", "")
        thinking = model.startswith(REASONING_PREFIXES) or model in reasoning
        if thinking and "max_tokens" in body:
            return refuse("max_tokens", "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                        "Use 'max_completion_tokens' instead.")
        if not thinking and "max_completion_tokens" in body:
            return refuse("max_completion_tokens", "Unrecognized request argument supplied: max_completion_tokens")
        if thinking and body.get("temperature", 1) != 1:
            return refuse("temperature", f"Unsupported value: 'temperature' does not support "
                                         f"{body['temperature']} with this model. Only the default (1) value is "
                                         "supported.")
        seed = int(body.get("seed", number))
        text = " ".join(_WORDS[(seed >> shift) % len(_WORDS)] for shift in range(0, 24, 4))
        reply = chat_completion(f"{body['messages'][-1]['content'][:20]}: {text}", model=f"{model}-2025-08-07")
        reply["system_fingerprint"] = "fp_hosted01"
        reply["usage"] = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19,
                          "completion_tokens_details": {"reasoning_tokens": 3 if thinking else 0}}
        return Reply(reply)

    return script
