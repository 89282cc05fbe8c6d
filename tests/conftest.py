"""Shared fixtures: the paper's recorded responses and small helpers."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/servers.py
# Under pytest-xdist, each worker gets its share of the cores for llama.cpp: its threads spin while they
# wait, and two workers each taking every core made one real-model test take 15 min instead of 1
# (dbpa_core.samplers.llama_build.default_threads).  Results do not depend on the thread count.
if os.environ.get("PYTEST_XDIST_WORKER") and "DBPA_THREADS" not in os.environ:
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ["DBPA_THREADS"] = str(max(1, (os.cpu_count() or 1) // max(1, _workers)))

HYPOTEST = Path(os.environ.get("DBPA_HYPOTEST_DIR", REPO.parent / "shared" / "data" / "hypotest"))


class _Unexpected(logging.Handler):
    """Keeps what ui.components.guard logs when a page meets an error it has no message for."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record):
        if str(record.msg).startswith("unexpected error"):
            self.seen.append(record.getMessage())


@pytest.fixture(autouse=True)
def no_unexpected_page_error(request):
    """Fail any test during which a page hit the guard's "unexpected error" (a bug shown to the user as a bare
    exception name), whether or not the test looked at the page's messages; except a test marked
    ``unexpected_page_error``, which raises one on purpose."""
    if request.node.get_closest_marker("unexpected_page_error"):
        yield
        return
    handler = _Unexpected()
    logger = logging.getLogger("dbpa_explorer")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    if handler.seen:
        pytest.fail("a page met an unexpected error:\n" + handler.seen[0], pytrace=False)


def hypotest_source() -> Path:
    """The reference code's own copy of the paper's responses (../shared/data/hypotest), outside the repository.

    One rule for every test that needs it: in CI (``CI`` set) its absence is a
    failure, never a silent skip; on a developer's machine without it, a skip.
    Tests of the responses themselves read the copy shipped in ``assets/paper/``
    (:mod:`dbpa_core.paper.loaders`), which needs nothing outside the repository.
    """
    if not HYPOTEST.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"test data missing in CI: {HYPOTEST} (set DBPA_HYPOTEST_DIR)")
        pytest.skip(f"test data not available: {HYPOTEST} (set DBPA_HYPOTEST_DIR)")
    return HYPOTEST


@pytest.fixture(scope="session")
def persona_arms() -> dict[str, list[str]]:
    """The eight persona arms of the paper's Table 2, 20 GPT responses each (the shipped copy, byte-identical to
    the source: tests/test_paper_data.py)."""
    from dbpa_core.paper.loaders import load_personas

    return {persona: list(texts) for persona, texts in load_personas().items()}


@pytest.fixture(scope="session")
def smollm2_gguf() -> str:
    from dbpa_core.samplers.local import smollm2_path

    return str(smollm2_path())


@pytest.fixture(scope="session")
def llama_server(smollm2_gguf):
    """A real llama.cpp OpenAI-compatible server on 127.0.0.1 for the whole session."""
    from servers import llama_cpp_server

    with llama_cpp_server(smollm2_gguf) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def minilm():
    from dbpa_core.embedders import get_embedder

    return get_embedder("minilm")


@pytest.fixture
def store(tmp_path):
    from dbpa_core.data.store import SampleStore

    return SampleStore(tmp_path / "store.sqlite")
