"""Shared fixtures: the paper's recorded responses and small helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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
