"""llama.cpp's C API for many sequences at once: batched decoding and batched scoring.

The high-level ``llama_cpp.Llama`` runs one sequence per call.  Here a
prompt is evaluated once into sequence 0 of a context (kept as the prompt's
copy), its KV cache is copied to each decoding sequence
(``llama_memory_seq_cp``), and every forward step carries one new token of
each unfinished sequence (``llama_batch`` with per-sequence ids); when one
ends, the next takes its sequence.  A step of many tokens costs far less
than as many single-token steps once llama.cpp multiplies the weights by
the step's tokens together: for the packaged SmolLM2's Q4_1 weights that
takes the tiled kernels scripts/install.sh builds into llama.cpp
(:func:`~dbpa_core.samplers.llama_build.gemm_kernel`; stock llama.cpp runs one vector dot per weight row
and token there).  Logits are asked only for the rows sampled from or scored.  Scoring
(``score_iter``, :mod:`~dbpa_core.samplers.engine_scoring`) feeds given completions through the same loop.

Batch invariance.  The context keeps one KV-cache stream per sequence
(``kv_unified = False``), so a sequence's cache cells sit at the same places
whoever else is decoded with it, and llama.cpp's CPU kernels (the tiled
kernels too) compute each sequence's rows from its own tokens and cells.  What
does change a sequence's logits is how its own tokens are split into forward
steps (one token at a time, or several in one step: llama.cpp's default
attention computes a one-token step differently, and SmolLM2's logits move by
tenths under such last-bit changes — up to ~0.2 nats in a log-probability;
bench/probe_numerics.py), so the split is fixed: a prompt is evaluated in
steps of 512 tokens, as ``llama_cpp.Llama`` does, and every generated or
scored token is fed one per sequence per step, as ``llama_cpp.Llama`` feeds
a generation.  Hence a sequence's tokens and scores do not depend on how many
others share its steps: sample i is the same drawn alone or among 32, and
equals ``Llama.create_chat_completion`` with its seed (``tests/test_engine.py``
checks both token for token), and a completion's scores equal, bit for bit,
the log-probabilities a generation of the same tokens reported and those of
a one-token-per-``eval`` loop (``tests/test_scoring.py``).
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .engine_scoring import BatchedScoring
from .llama_build import default_threads
from .llama_sampling import sampler_chain

#: Cells per KV-cache stream are a multiple of this (llama.cpp pads attention to 256 cells).
CTX_PAD = 256
#: Tokens per forward step of a prompt (llama-cpp-python's ``n_batch`` default, so prompts split alike).
PROMPT_BATCH = 512


@dataclass(frozen=True)
class Generation:
    """One generated sequence: its tokens (end-of-generation token excluded), text and log-probabilities."""

    tokens: tuple[int, ...]
    text: str
    token_logprobs: tuple[float, ...] | None


def _log_softmax_at(logits: np.ndarray, token: int) -> float:
    row = logits.astype(np.float64)
    peak = row.max()
    return float(row[token] - peak - np.log(np.exp(row - peak).sum()))


class LlamaEngine(BatchedScoring):
    """One GGUF model, loaded once, with batched generation and scoring.

    Not thread-safe: callers hold :func:`~dbpa_core.samplers.local.model_lock`.

    Parameters
    ----------
    model_path : str
        A GGUF file.
    n_threads : int, optional
        llama.cpp threads; default :func:`default_threads` (``$DBPA_THREADS``,
        else the number of CPU cores).
    flash_attention : bool
        llama.cpp's flash attention, off by default as in ``llama_cpp.Llama``.
        On, it is another rounding of the model (logits move by tenths):
        draws and scores then differ from the recordings and from the
        one-call path.  Only bench/bench_local.py turns it on, to measure it.
    n_gpu_layers : int
        Layers offloaded to a GPU, where llama.cpp was built with one.  Set
        explicitly, 0 by default as in ``llama_cpp.Llama``: llama.cpp's own
        default (-1, every layer) would put this engine on the GPU and the
        one-call ``Llama`` reference on the CPU, two roundings of one model.
    """

    def __init__(self, model_path: str, *, n_ctx: int = 2048, n_threads: int | None = None,
                 flash_attention: bool = False, n_gpu_layers: int = 0):
        import llama_cpp  # lazy: compiled extension

        self._api = api = llama_cpp
        self.model_path = model_path
        self.n_threads = int(n_threads or default_threads())
        self.n_ctx = int(n_ctx)
        self.flash_attention = bool(flash_attention)
        api.llama_backend_init()
        params = api.llama_model_default_params()
        params.n_gpu_layers = int(n_gpu_layers)
        self.n_gpu_layers = int(params.n_gpu_layers)
        self._model = api.llama_model_load_from_file(model_path.encode(), params)
        if not self._model:
            raise ValueError(f"`model_path`: llama.cpp could not load {model_path}.")
        self._vocab = api.llama_model_get_vocab(self._model)
        self.n_vocab = api.llama_vocab_n_tokens(self._vocab)
        self.n_ctx_train = api.llama_model_n_ctx_train(self._model)
        template = api.llama_model_chat_template(self._model, None)
        self.chat_template = template.decode("utf-8") if template else None
        self._contexts: dict[tuple[int, int], object] = {}
        # (context key, prompt tokens, the prompt's last row of logits) of the prompt stream 0 holds, if any.
        self._prompt_cache: tuple[tuple[int, int], tuple[int, ...], np.ndarray] | None = None
        # Candidates for the sampler chains: llama_token_data {id, logit, p}, reused every step.
        self._candidates = np.zeros(self.n_vocab, dtype=np.dtype(
            [("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True))
        self._ids = np.arange(self.n_vocab, dtype=np.int32)

    # -- text <-> tokens -------------------------------------------------------------------------------

    def token_text(self, token: int) -> str:
        buffer = ctypes.create_string_buffer(64)
        n = self._api.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, True)
        return buffer.raw[:n].decode("utf-8", "replace")

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """Tokens of ``text`` (no BOS added); ``special`` parses control tokens such as ``<|im_start|>``."""
        data = text.encode("utf-8")
        capacity = len(data) + 8
        tokens = (self._api.llama_token * capacity)()
        n = self._api.llama_tokenize(self._vocab, data, len(data), tokens, capacity, False, special)
        if n < 0:  # cannot happen with one token per byte at most, but llama.cpp reports it this way
            raise RuntimeError(f"tokenization needs {-n} tokens")
        return list(tokens[:n])

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of ``tokens`` (control tokens not rendered; invalid UTF-8 dropped, as llama-cpp-python does)."""
        if not tokens:
            return ""
        array = (self._api.llama_token * len(tokens))(*tokens)
        capacity = 16 * len(tokens) + 16
        buffer = ctypes.create_string_buffer(capacity)
        n = self._api.llama_detokenize(self._vocab, array, len(tokens), buffer, capacity, False, False)
        return buffer.raw[:n].decode("utf-8", "ignore")

    def is_end(self, token: int) -> bool:
        """End of generation (SmolLM2: ``<|im_end|>`` and ``<|endoftext|>``)."""
        return bool(self._api.llama_vocab_is_eog(self._vocab, token))

    def chat_prompt(self, messages: list[dict]) -> list[int]:
        """Tokens of ``messages`` in the model's chat template (GGUF metadata), opening the assistant's turn.

        Rendered as llama-cpp-python renders it for ``create_chat_completion``
        (its Jinja2 formatter, ``add_generation_prompt``), so both paths see
        the same tokens.
        """
        if self.chat_template is None:  # a model without a template: plain concatenation
            return self.tokenize("\n".join(m["content"] for m in messages) + "\n", special=False)
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        eos = self._api.llama_vocab_eos(self._vocab)
        bos = self._api.llama_vocab_bos(self._vocab)
        formatter = Jinja2ChatFormatter(template=self.chat_template,
                                        eos_token=self.token_text(eos) if eos != -1 else "",
                                        bos_token=self.token_text(bos) if bos != -1 else "")
        result = formatter(messages=messages)
        tokens = self.tokenize(result.prompt, special=True)
        if not result.added_special and self._api.llama_vocab_get_add_bos(self._vocab) and bos != -1:
            tokens = [bos, *tokens]
        return tokens

    # -- contexts --------------------------------------------------------------------------------------

    def _prompt_context(self, n_seq: int, n_cells: int, prompt: Sequence[int], batch, n_batch: int):
        """A context of ``n_seq`` streams whose stream 0 holds ``prompt``, and the prompt's last row of logits.

        When the last call evaluated the same prompt into a context of the same shape, its stream 0 is
        reused as it is (as ``llama_cpp.Llama`` keeps a prompt's prefix): evaluating a prompt again gives
        the same cache bit for bit, so only the time changes.  The other streams are emptied before use.
        """
        key, tokens = (n_seq, n_cells), tuple(prompt)
        cached = self._prompt_cache
        if cached is not None and cached[0] == key and cached[1] == tokens and key in self._contexts:
            return self._contexts[key], cached[2]
        context = self._context(n_seq, n_cells)
        first = self._eval_prompt(context, batch, prompt, n_batch)
        self._prompt_cache = (key, tokens, first)
        return context, first

    def _context(self, n_seq: int, n_cells: int):
        """A context with ``n_seq`` KV streams of ``n_cells`` cells each (cached; cleared before use)."""
        self._prompt_cache = None  # cleared or new: it holds no prompt
        key = (n_seq, n_cells)
        context = self._contexts.get(key)
        if context is None:
            # Keep one context: each holds its KV cache (≈ 23 kB per cell for SmolLM2-135M).
            self.close_contexts()
            api = self._api
            params = api.llama_context_default_params()
            params.n_ctx = n_seq * n_cells
            params.n_batch = max(PROMPT_BATCH, n_seq)
            params.n_ubatch = max(PROMPT_BATCH, n_seq)
            params.n_seq_max = n_seq
            params.kv_unified = False  # one stream per sequence: see the module docstring
            params.n_threads = params.n_threads_batch = self.n_threads
            params.flash_attn_type = (api.LLAMA_FLASH_ATTN_TYPE_ENABLED if self.flash_attention
                                      else api.LLAMA_FLASH_ATTN_TYPE_DISABLED)  # off: as llama_cpp.Llama by default
            params.no_perf = True
            context = api.llama_init_from_model(self._model, params)
            if not context:
                raise RuntimeError(f"llama.cpp could not create a context of {n_seq} × {n_cells} cells.")
            self._contexts[key] = context
        self._api.llama_memory_clear(self._api.llama_get_memory(context), True)
        return context

    def close_contexts(self) -> None:
        self._prompt_cache = None
        for context in self._contexts.values():
            self._api.llama_free(context)
        self._contexts.clear()

    def close(self) -> None:
        self.close_contexts()
        if self._model:
            self._api.llama_model_free(self._model)
            self._model = None

    def _decode(self, context, batch, rows: list[tuple[int, int, int, bool]]) -> None:
        """One forward step over ``rows`` = (token, position, sequence, wants logits)."""
        for i, (token, position, sequence, logits) in enumerate(rows):
            batch.token[i] = token
            batch.pos[i] = position
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = sequence
            batch.logits[i] = logits
        batch.n_tokens = len(rows)
        status = self._api.llama_decode(context, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode failed (status {status}): the context is full or out of memory.")

    def _eval_prompt(self, context, batch, tokens: Sequence[int], n_batch: int) -> np.ndarray:
        """Evaluate ``tokens`` into sequence 0, in steps of ``n_batch``; return its last row of logits."""
        for start in range(0, len(tokens), n_batch):
            chunk = tokens[start:start + n_batch]
            self._decode(context, batch, [(t, start + j, 0, start + j == len(tokens) - 1) for j, t in enumerate(chunk)])
        return self._row_logits(context, -1).copy()

    def _logits(self, context, n_rows: int) -> np.ndarray:
        """A copy of the last step's ``n_rows`` rows of logits."""
        return np.ctypeslib.as_array(self._api.llama_get_logits(context), shape=(n_rows, self.n_vocab)).copy()

    # -- generation ------------------------------------------------------------------------------------

    def generate(self, prompt: Sequence[int], seeds: Sequence[int], *, temperature: float, max_tokens: int,
                 logprobs: bool = False, width: int = 32) -> list[Generation]:
        """Generate one sequence per seed after ``prompt``; see :meth:`generate_iter`. In the order of ``seeds``."""
        results: list[Generation | None] = [None] * len(seeds)
        for j, generation in self.generate_iter(prompt, seeds, temperature=temperature, max_tokens=max_tokens,
                                                logprobs=logprobs, width=width):
            results[j] = generation
        return results  # type: ignore[return-value]

    def generate_iter(self, prompt: Sequence[int], seeds: Sequence[int], *, temperature: float, max_tokens: int,
                      logprobs: bool = False, width: int = 32) -> Iterator[tuple[int, Generation]]:
        """Yield ``(j, Generation)`` for every seed as soon as its sequence ends.

        Parameters
        ----------
        prompt : sequence of int
            Prompt tokens (chat template applied), evaluated once.
        seeds : sequence of int
            One seed per sequence (``sample_seed(seed, index)``); sequence j
            samples with llama.cpp's chain top-k 40 → typical 1 → top-p 0.95
            → min-p 0.05 → temperature → a distribution seeded with
            ``seeds[j]`` (greedy at temperature 0): llama-cpp-python's chat
            defaults, so a draw equals ``Llama.create_chat_completion``'s with
            the same seed.
        temperature : float
        max_tokens : int
            New tokens at most; a sequence stops earlier at an
            end-of-generation token (``<|im_end|>``), which is not returned.
        logprobs : bool
            Also return log p(token) under the model's untempered distribution.
        width : int
            Sequences decoded together; when one ends, the next seed takes
            its place (the prompt's cache is copied into it), so the steps
            stay full.  Outputs do not depend on ``width`` (module docstring).
        """
        if len(seeds) == 0:
            return
        if len(prompt) + max_tokens > self.n_ctx:
            raise ValueError(f"the prompt ({len(prompt)} tokens) and `max_tokens` = {max_tokens} exceed the "
                             f"{self.n_ctx}-token context (`n_ctx`): shorten the prompt or lower `max_tokens`.")
        api = self._api
        chains: dict[int, object] = {}

        def begin(j: int) -> dict:
            chains[j] = sampler_chain(api, seeds[j], temperature)
            return {"tokens": [], "scores": []}

        def advance(rows: list[tuple[int, dict, np.ndarray]]) -> list[int | None]:
            feeds: list[int | None] = []
            for j, state, logits in rows:
                token = self._sample(chains[j], logits)
                if logprobs:
                    state["scores"].append(_log_softmax_at(logits, token))
                ended = api.llama_vocab_is_eog(self._vocab, token)
                if ended:
                    state["scores"] = state["scores"][:-1]
                else:
                    state["tokens"].append(token)
                feeds.append(None if ended or len(state["tokens"]) >= max_tokens else token)
            return feeds

        try:
            for j, state in self._run_streams(prompt, range(len(seeds)), max_tokens, width, begin, advance):
                api.llama_sampler_free(chains.pop(j))
                yield j, Generation(tuple(state["tokens"]), self.detokenize(state["tokens"]),
                                    tuple(state["scores"]) if logprobs else None)
        finally:
            for chain in chains.values():
                api.llama_sampler_free(chain)

    def _run_streams(self, prompt: Sequence[int], order, length: int, width: int, begin, advance
                     ) -> Iterator[tuple[int, dict]]:
        """The loop generation and scoring share: items in streams, one token per live stream per forward step.

        Stream 0 keeps ``prompt``; streams 1..``width`` take the items of
        ``order`` in turn, each starting from a copy of the prompt's cache.
        Every step, ``advance([(j, state, logits), ...])`` gets each live
        item's next row of logits (the prompt's last row for an item's first
        token; a view, valid until the next step) and returns per item the
        token to feed next, or None when the item ends; ended items are
        yielded as ``(j, state)`` (``state`` = ``begin(j)``, as ``advance``
        left it) and their streams refilled.  ``length``: tokens per item at
        most, for the size of the streams.
        """
        api = self._api
        order = list(order)
        width = max(1, min(int(width), len(order)))
        n_cells = -(-(len(prompt) + length + 1) // CTX_PAD) * CTX_PAD
        n_batch = max(PROMPT_BATCH, width)
        batch = api.llama_batch_init(n_batch, 0, 1)
        try:
            context, first = self._prompt_context(width + 1, n_cells, prompt, batch, n_batch)
            memory = api.llama_get_memory(context)
            pending = iter(order)
            live: dict[int, tuple[int, dict]] = {}  # stream → (item, its state)
            fed: dict[int, int] = {}  # stream → tokens fed so far (the next one's position after the prompt)

            def start(stream: int) -> None:
                j = next(pending, None)
                if j is None:
                    return
                api.llama_memory_seq_rm(memory, stream, -1, -1)
                api.llama_memory_seq_cp(memory, 0, stream, -1, -1)
                live[stream] = (j, begin(j))
                fed[stream] = 0

            for stream in range(1, width + 1):
                start(stream)
            rows: dict[int, int | None] = dict.fromkeys(live, None)  # None: the prompt's last row
            while live:
                streams = list(rows)
                feeds = advance([(*live[stream], first if rows[stream] is None else self._row_logits(context, row))
                                 for stream, row in rows.items()])
                step = []
                for stream, token in zip(streams, feeds):
                    if token is None:
                        yield live.pop(stream)
                        start(stream)  # a refilled stream reads its first row from the prompt's logits
                    else:
                        step.append((token, len(prompt) + fed[stream], stream, True))
                        fed[stream] += 1
                if step:
                    self._decode(context, batch, step)
                rows = {stream: i for i, (_, _, stream, _) in enumerate(step)}
                rows.update({stream: None for stream in live if stream not in rows})
        finally:
            api.llama_batch_free(batch)

    def _row_logits(self, context, row: int) -> np.ndarray:
        pointer = self._api.llama_get_logits_ith(context, row)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def _sample(self, chain, logits: np.ndarray) -> int:
        """Apply ``chain`` to ``logits`` and accept its choice, as ``llama_sampler_sample`` does from a context."""
        api = self._api
        candidates = self._candidates
        candidates["logit"] = logits
        candidates["id"] = self._ids
        candidates["p"] = 0.0
        array = api.llama_token_data_array(
            data=candidates.ctypes.data_as(api.llama_token_data_p), size=self.n_vocab, selected=-1, sorted=False)
        api.llama_sampler_apply(chain, ctypes.byref(array))
        token = int(candidates["id"][array.selected])
        api.llama_sampler_accept(chain, token)
        return token
