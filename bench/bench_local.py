"""Benchmark of batched local decoding and batched scoring against the one-at-a-time paths.

    python bench/bench_local.py [--rounds 3] [--max-tokens 64] [--threads 2] [--stock]

Prints which kernels llama.cpp multiplies the packaged SmolLM2's weights
with (scripts/install.sh builds tiled ones into it:
``dbpa_core.samplers.llama_build.gemm_kernel``), then, side by side in one run
(rounds interleaved, so that a change in the machine's load hits every
configuration alike; medians over rounds):
- tokens/s of SmolLM2-135M drawing k = 1, 8, 16, 32 samples of one prompt
  with the batched engine (LocalSampler's path) against the path LocalSampler
  took before: one ``Llama.create_chat_completion`` per sample with
  ``logits_all=True``; wall-clock and CPU-time figures, and their ratios;
- with ``--stock``, the same one-at-a-time path and batched k = 16 and 32 in a
  second process whose llama.cpp runs its own kernels (``DBPA_GEMM=0``: what
  a stock llama-cpp-python build does), in the same interleaved rounds: what
  the kernels add, against the same baseline;
- scoring throughput (completions of ≤ 30 tokens per second, the same
  completions for every path) of ``ReferenceScorer.score_responses`` (one
  token of up to 32 completions per forward step, numpy ranks; the same
  numbers as the per-token path, bit for bit) against two baselines: the
  per-token path ``per_token_statistics`` (one forward step and one row of
  Python per token; the issue's baseline) and the one-completion-per-call
  ``reference_token_statistics`` path scoring took before batching (one
  forward pass per completion);

- with ``--flash-attention``, the decoding part adds batched k = 16 and 32
  with llama.cpp's flash attention on (not what LocalSampler uses: see
  bench/RESULTS.md), against the same baseline;
- with ``--also-model smollm2-q8_0``, batched k = 16 and 32 on another local
  model (here the packaged weights re-expressed in 8 bits, a format that
  llama.cpp's x86 build multiplies with its own tiled kernel), against the same
  packaged-Q4_1 baseline;
- the kernels' ceiling (``--part ceiling``): tokens/s of bare forward steps
  (``llama_decode``, no sampling, no Python per row) of 1 token, of 16 and
  64 tokens of one sequence with logits for the last only (a prompt's shape)
  or for every row, and of one token in each of 16 and 32 sequences with
  logits for every row (batched decoding's shape). The decoding ratios above
  are to be read against these.

The machine's load average is printed at the start and end of each part.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.rut.scoring import ReferenceScorer  # noqa: E402
from dbpa_core.samplers import get_sampler, sample_seed  # noqa: E402
from dbpa_core.samplers.llama_build import gemm_kernel  # noqa: E402
from dbpa_core.samplers.local import get_engine, load_llama, resolve_model, smollm2_path  # noqa: E402

PROMPT = "Explain in a few sentences why the sky is blue."
WIDTHS = (1, 8, 16, 32)


def timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--scored", type=int, default=32, help="completions scored per round")
    parser.add_argument("--flash-attention", action="store_true",
                        help="decoding: also batched k = 16, 32 with flash attention (LocalSampler keeps it off)")
    parser.add_argument("--also-model", metavar="NAME",
                        help="decoding: also batched k = 16, 32 on another local model (e.g. smollm2-q8_0, the "
                             "packaged weights re-expressed in 8 bits), against the same Q4_1 baseline")
    parser.add_argument("--stock", action="store_true",
                        help="decoding: also the one-at-a-time path and batched k = 16, 32 in a second process whose "
                             "llama.cpp runs its own kernels (DBPA_GEMM=0)")
    parser.add_argument("--part", choices=("all", "ceiling", "decoding", "scoring"), default="all")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    print(f"weights multiplied by: {gemm_kernel()}", flush=True)
    if args.part in ("all", "ceiling"):
        ceiling(args)
    if args.part in ("all", "decoding"):
        decoding(args)
    if args.part in ("all", "scoring"):
        scoring(args)


def load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def ceiling(args, steps: int = 40) -> None:
    """Bare forward steps on the batched engine's model: what batching can gain here, before any sampling."""
    print(f"ceiling: {load()}", flush=True)
    engine = get_engine(str(smollm2_path()), 2048, args.threads)
    prompt = engine.chat_prompt(get_sampler("local").messages(PROMPT, None))

    def one_sequence(n_tokens, every_row=False):  # n tokens of sequence 0 per step (a prompt's chunk)
        context = engine._context(1, 512)
        per_window = 256 // n_tokens  # positions restart at 0 (cache cleared, untimed) every 256 tokens
        rows = [[(100 + j, (step % per_window) * n_tokens + j, 0, every_row or j == n_tokens - 1)
                 for j in range(n_tokens)]
                for step in range(steps)]
        return context, rows

    def many_sequences(n_seq):  # one token in each of n_seq sequences per step, logits for every row
        context = engine._context(n_seq + 1, 256)
        batch = engine._api.llama_batch_init(512, 0, 1)
        try:
            engine._eval_prompt(context, batch, prompt, 512)
        finally:
            engine._api.llama_batch_free(batch)
        memory = engine._api.llama_get_memory(context)
        for sequence in range(1, n_seq + 1):
            engine._api.llama_memory_seq_cp(memory, 0, sequence, -1, -1)
        rows = [[(100 + s, len(prompt) + step, s, True) for s in range(1, n_seq + 1)] for step in range(steps)]
        return context, rows

    shapes = {"1 token (one sequence)": lambda: one_sequence(1),
              "16 tokens of one sequence": lambda: one_sequence(16),
              "64 tokens of one sequence": lambda: one_sequence(64),
              "16 of one, logits every row": lambda: one_sequence(16, every_row=True),
              "1 token × 16 sequences": lambda: many_sequences(16),
              "1 token × 32 sequences": lambda: many_sequences(32)}
    rates: dict[str, list[float]] = {}
    for round_ in range(args.rounds):
        for name, shape in shapes.items():
            context, rows = shape()
            batch = engine._api.llama_batch_init(512, 0, 1)
            try:
                times = []
                for step in rows:
                    if step[0][1] == 0:  # a one-sequence run starts again at position 0
                        engine._api.llama_memory_clear(engine._api.llama_get_memory(context), True)
                    start = time.perf_counter()
                    engine._decode(context, batch, step)
                    times.append(time.perf_counter() - start)
            finally:
                engine._api.llama_batch_free(batch)
            rates.setdefault(name, []).append(len(rows[0]) / statistics.median(times))
        print(f"round {round_ + 1}: " + ", ".join(f"{n} {r[-1]:.0f}" for n, r in rates.items()), flush=True)
    engine.close_contexts()
    base = statistics.median(rates["1 token (one sequence)"])
    print(f"\nbare forward steps, {args.threads} threads, median step of {steps}, median of {args.rounds} rounds")
    print(f"{'step':<28}{'tokens/s':>10}{'ratio':>8}")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name:<28}{rate:>10.0f}{rate / base:>7.2f}×")
    print(f"ceiling done: {load()}", flush=True)


def decoding_paths(args):
    """The one-call-per-sample path and the batched engine on the packaged model: (one_at_a_time, batched)."""
    path = str(smollm2_path())
    llama = load_llama(path, 2048, args.threads)  # logits_all=True: the path before batching
    engine = get_engine(path, 2048, args.threads)
    messages = get_sampler("local").messages(PROMPT, None)
    prompt = engine.chat_prompt(messages)
    n_calls = 4

    def one_at_a_time(round_):
        tokens = 0
        for i in range(n_calls):
            reply = llama.create_chat_completion(messages=messages, temperature=0.7, max_tokens=args.max_tokens,
                                                 seed=sample_seed(round_, i))
            tokens += reply["usage"]["completion_tokens"]
        return tokens

    def batched(width, round_, engine=engine):
        generations = engine.generate(prompt, [sample_seed(round_, i) for i in range(width)], temperature=0.7,
                                      max_tokens=args.max_tokens, width=width)
        return sum(len(g.tokens) for g in generations)

    one_at_a_time(99)
    batched(8, 99)  # warm up: contexts, caches
    return one_at_a_time, batched


def worker(args) -> None:
    """``--worker``: the decoding paths in this process, run on request (``one ROUND`` or ``K ROUND`` per line)."""
    one_at_a_time, batched = decoding_paths(args)
    print(gemm_kernel(), flush=True)
    for line in sys.stdin:
        name, round_ = line.split()
        run = (lambda: one_at_a_time(int(round_))) if name == "one" else (lambda: batched(int(name), int(round_)))
        tokens, wall, cpu = timed(run)
        print(tokens, wall, cpu, flush=True)


class StockWorker:
    """The decoding paths in a second process whose llama.cpp runs its own kernels (DBPA_GEMM=0)."""

    def __init__(self, args):
        command = [sys.executable, __file__, "--worker", "--max-tokens", str(args.max_tokens),
                   "--threads", str(args.threads)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        env={**os.environ, "DBPA_GEMM": "0"})
        self.kernel = self.process.stdout.readline().strip()

    def run(self, name: str, round_: int) -> tuple[int, float, float]:
        self.process.stdin.write(f"{name} {round_}\n")
        self.process.stdin.flush()
        tokens, wall, cpu = self.process.stdout.readline().split()
        return int(tokens), float(wall), float(cpu)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def decoding(args) -> None:
    print(f"decoding: {load()}", flush=True)
    one_at_a_time, batched = decoding_paths(args)
    flash = None
    if args.flash_attention:
        from dbpa_core.samplers.engine import LlamaEngine

        flash = LlamaEngine(str(smollm2_path()), n_ctx=2048, n_threads=args.threads, flash_attention=True)
        batched(8, 99, flash)
    other = None
    if args.also_model:
        other = get_engine(resolve_model(args.also_model, None), 2048, args.threads)
        batched(8, 99, other)
    stock = StockWorker(args) if args.stock else None
    if stock is not None:
        print(f"second process (--stock): {stock.kernel}", flush=True)
    rates: dict[str, list[tuple[float, float]]] = {}
    for round_ in range(args.rounds):
        runs = [("one at a time", lambda: timed(lambda: one_at_a_time(round_)))]
        runs += [(f"batched k = {k}", lambda k=k: timed(lambda: batched(k, round_))) for k in WIDTHS]
        if flash is not None:
            runs += [(f"k = {k}, flash attn", lambda k=k: timed(lambda: batched(k, round_, flash))) for k in (16, 32)]
        if other is not None:
            runs += [(f"k = {k}, {args.also_model}", lambda k=k: timed(lambda: batched(k, round_, other)))
                     for k in (16, 32)]
        if stock is not None:
            runs += [("stock: one at a time", lambda: stock.run("one", round_))]
            runs += [(f"stock: batched k = {k}", lambda k=k: stock.run(str(k), round_)) for k in (16, 32)]
        for name, run in runs:
            tokens, wall, cpu = run()
            rates.setdefault(name, []).append((tokens / wall, tokens / cpu))
        print(f"round {round_ + 1}: " + ", ".join(f"{n} {r[-1][0]:.1f}" for n, r in rates.items()), flush=True)
    if stock is not None:
        stock.close()
    base_wall = statistics.median(r[0] for r in rates["one at a time"])
    base_cpu = statistics.median(r[1] for r in rates["one at a time"])
    print(f"\nSmolLM2-135M Q4_1, {args.threads} threads, ≤ {args.max_tokens} new tokens, T = 0.7, "
          f"median of {args.rounds} interleaved rounds; weights: {gemm_kernel()}")
    print(f"{'path':<28}{'tokens/s (wall)':>16}{'ratio':>8}{'tokens per CPU-s':>18}{'ratio':>8}")
    for name, values in rates.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"{name:<28}{wall:>16.1f}{wall / base_wall:>7.2f}×{cpu:>18.1f}{cpu / base_cpu:>7.2f}×")
    if stock is not None:
        stock_base = statistics.median(r[0] for r in rates["stock: one at a time"])
        print("stock llama.cpp against its own one-at-a-time path: " + ", ".join(
            f"k = {k} {statistics.median(r[0] for r in rates[f'stock: batched k = {k}']) / stock_base:.2f}×"
            for k in (16, 32)))
    print(f"decoding done: {load()}", flush=True)


def scoring(args) -> None:
    """Completions of ≤ 30 tokens of one prompt under the reference model; the paths interleaved per round."""
    print(f"\nscoring: {load()}", flush=True)
    local = get_sampler("local")
    texts = local.sample(PROMPT, args.scored, temperature=0.5, max_tokens=30, seed=1)
    scorer = ReferenceScorer(n_threads=args.threads)
    scorer.score_many(PROMPT, texts[:2])  # warm up: models, contexts, the prompt's cache
    scorer.reference_token_statistics(PROMPT, texts[0])
    scorer.per_token_statistics(PROMPT, texts[0])
    paths = {"per token (eval + Python per token)": lambda: [scorer.per_token_statistics(PROMPT, t) for t in texts],
             "one completion per call (before)": lambda: [scorer.reference_token_statistics(PROMPT, t) for t in texts],
             f"score_responses, {scorer.batch_size} per step": lambda: scorer.score_responses(PROMPT, texts)}
    rates: dict[str, list[tuple[float, float]]] = {}
    for round_ in range(args.rounds):
        for name, run in paths.items():
            _, wall, cpu = timed(run)
            rates.setdefault(name, []).append((len(texts) / wall, len(texts) / cpu))
        print(f"round {round_ + 1}: " + ", ".join(f"{n} {r[-1][0]:.2f}" for n, r in rates.items())
              + f" ({load()})", flush=True)
    tokens = [len(scorer.engine.tokenize(t, special=False)) for t in texts]
    print(f"\nscoring {len(texts)} completions (mean {statistics.mean(tokens):.1f}, max {max(tokens)} tokens) of one "
          f"prompt, {args.threads} threads, median of {args.rounds} interleaved rounds")
    medians = {name: (statistics.median(v[0] for v in values), statistics.median(v[1] for v in values))
               for name, values in rates.items()}
    (per_token, before, _) = medians.values()
    print(f"{'path':<38}{'completions/s':>14}{'vs per token':>13}{'vs before':>10}"
          f"{'per CPU-s':>11}{'vs per token':>13}{'vs before':>10}")
    for name, (wall, cpu) in medians.items():
        print(f"{name:<38}{wall:>14.2f}{wall / per_token[0]:>12.2f}×{wall / before[0]:>9.2f}×"
              f"{cpu:>11.2f}{cpu / per_token[1]:>12.2f}×{cpu / before[1]:>9.2f}×")
    print(f"scoring done: {load()}", flush=True)


if __name__ == "__main__":
    main()
