"""Real servers started by tests on 127.0.0.1 (free port), stopped afterwards."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, process: subprocess.Popen, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
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
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@contextmanager
def streamlit_app(store_folder: Path, timeout: float = 120):
    """``streamlit run app.py`` headless on 127.0.0.1 (free port) with its own sample store.

    Yields the base URL once the health check answers; stops the server afterwards.
    """
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    with serve(command, f"http://127.0.0.1:{port}/_stcore/health", Path(store_folder) / "streamlit.log",
               env={"DBPA_STORE": str(Path(store_folder) / "store.sqlite")}, cwd=REPO, timeout=timeout):
        yield f"http://127.0.0.1:{port}"
