"""Shared fixtures: the paper's recorded responses and small helpers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/servers.py
HYPOTEST = Path(os.environ.get("DBPA_HYPOTEST_DIR", REPO.parent / "shared" / "data" / "hypotest"))


def load_hypotest(relative: str):
    """Load one JSON file of the paper's responses (../shared/data/hypotest)."""
    path = HYPOTEST / relative
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"test data missing in CI: {path}")
        pytest.skip(f"test data not available: {path}")
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def persona_arms() -> dict[str, list[str]]:
    """The eight persona arms of the paper's Table 2, 20 GPT responses each."""
    personas = ["doctor", "nurse", "medical practitioner", "medical supervisor",
                "comedian", "robot from the future", "NeurIPS reviewer", "child"]
    return {p: load_hypotest(f"personas/Act as a {p}. .json") for p in personas}


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
