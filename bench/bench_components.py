"""Benchmark of the real components: local model, embedder, HTTP concurrency, the store.

    python bench/bench_components.py

Prints, each against its baseline:
- tokens/s of SmolLM2-135M through llama-cpp-python (CPU);
- sentences/s of the packaged MiniLM at batch size 1 (baseline) vs 64;
- wall time of 8 chat calls to a real llama.cpp server, sequential vs 4 concurrent;
- a cold audit run (sample + embed) vs the same run served from the store.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from dbpa_core.audit import draw_arm  # noqa: E402
from dbpa_core.embedders import get_embedder  # noqa: E402
from dbpa_core.samplers import get_sampler  # noqa: E402
from dbpa_core.samplers.local import load_llama, smollm2_path  # noqa: E402
from dbpa_core.data.scenarios import load_scenarios  # noqa: E402
from dbpa_core.data.store import SampleStore  # noqa: E402


def median_time(function, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    local = get_sampler("local")
    llama = load_llama(str(smollm2_path()))  # one call per sample (batched decoding: bench_local.py)
    prompt = "Explain in a few sentences why the sky is blue."
    local.sample(prompt, 1, max_tokens=8)  # warm up
    generated = []

    def generate():
        response = llama.create_chat_completion(messages=local.messages(prompt, None), max_tokens=96,
                                                temperature=0.7, seed=len(generated))
        generated.append(response["usage"]["completion_tokens"])

    seconds = median_time(generate)
    print(f"local model  SmolLM2-135M Q4_1, 2 threads: {statistics.median(generated) / seconds:6.1f} tokens/s "
          f"(median of 5 calls of ≤96 tokens)")

    embedder = get_embedder("minilm")
    texts = [t for t in get_sampler("simulated").sample(load_scenarios()["cvd_nice"].prompt, 256, seed=0)]
    embedder.embed(texts[:4])
    embedder.batch_size = 1
    one = median_time(lambda: embedder.embed(texts[:64]), repeats=3)
    embedder.batch_size = 64
    batched = median_time(lambda: embedder.embed(texts), repeats=3)
    print(f"embedder     MiniLM-L6, batch 1: {64 / one:6.1f} sentences/s | batch 64: {256 / batched:6.1f} "
          f"sentences/s | ratio {256 / batched / (64 / one):.1f}×")

    from servers import llama_cpp_server

    with llama_cpp_server(str(smollm2_path())) as base_url:
        for concurrency in (1, 4):
            sampler = get_sampler("openai", model="smollm2", base_url=base_url, max_concurrency=concurrency)
            sampler.sample("Say hi.", 1, max_tokens=4)
            elapsed = median_time(lambda: sampler.sample("Name a fruit and its colour.", 8, max_tokens=24,
                                                         seed=int(time.time_ns() % 10**6)), repeats=3)
            if concurrency == 1:
                sequential = elapsed
            print(f"HTTP server  8 calls, concurrency {concurrency}: {elapsed:6.2f} s"
                  + ("" if concurrency == 1 else f" | speed-up {sequential / elapsed:.2f}×"))

    with tempfile.TemporaryDirectory() as folder:
        store = SampleStore(Path(folder) / "bench.sqlite")
        scenario = load_scenarios()["seasons_question"]

        def audit_arm():
            return draw_arm(local, scenario.prompt, 10, label="original", max_tokens=48, embedder=embedder, store=store)

        cold = median_time(audit_arm, repeats=1)
        warm = median_time(audit_arm, repeats=5)
        print(f"store        k=10 local samples + embeddings: cold {cold:6.2f} s | cached {warm * 1e3:6.1f} ms | "
              f"ratio {cold / warm:,.0f}×")


if __name__ == "__main__":
    main()
