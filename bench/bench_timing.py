"""The per-unit costs behind the time a run announces (dbpa_core.audit.timing, issue 45).

    DBPA_THREADS=1 python bench/bench_timing.py            # simulated, recorded, MiniLM, the tests, the bootstrap
    DBPA_THREADS=1 python bench/bench_timing.py --local    # and SmolLM2 through llama.cpp, the RUT's live audit (≈ 2 min)

Each cost is measured as CPU seconds of this process (``time.process_time``),
which other jobs on a shared machine disturb far less than wall time; on a
quiet machine with one thread per job the two agree.  It prints each measured
constant beside the one in :mod:`dbpa_core.audit.timing`, with their ratio,
then the home page's k = 200 Resample announced by the model and as run here.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from dbpa_core.audit import timing  # noqa: E402


def cpu(work) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``work()``."""
    start, wall = time.process_time(), time.perf_counter()
    work()
    return time.process_time() - start, time.perf_counter() - wall


def row(name: str, measured: float, constant: float, unit: str) -> None:
    print(f"{name:<34} {measured:10.5f} {constant:10.5f} {measured / constant:6.2f}×  s per {unit}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--local", action="store_true", help="also time SmolLM2 (llama.cpp) outputs")
    args = parser.parse_args()
    from dbpa_core.audit.request import AuditRequest, EmbedderConfig, SamplerConfig
    from dbpa_core.audit.runner import run
    from dbpa_core.data.scenarios import load_scenarios
    from dbpa_core.data.store import SampleStore
    from dbpa_core.embedders import get_embedder
    from dbpa_core.samplers import get_sampler
    from dbpa_core.stats.permutation import dbpa_test

    print(f"load average {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores; "
          f"DBPA_THREADS={os.environ.get('DBPA_THREADS', 'unset')}")
    print(f"{'cost':<34} {'measured':>10} {'constant':>10} {'ratio':>7}")
    scenario = load_scenarios()["seasons_question"]
    embedder = get_embedder("minilm")
    seconds, _ = cpu(lambda: embedder.model)
    row("MiniLM load", seconds, timing.LOAD_SECONDS["minilm"], "load")
    simulated = get_sampler("simulated")
    texts: list[str] = []
    seconds, _ = cpu(lambda: texts.extend(simulated.sample(scenario.prompt, 400, seed=7)))
    row("simulated output", seconds / 400, timing.SECONDS_PER_OUTPUT["simulated"], "output")
    seconds, wall = cpu(lambda: embedder.embed(texts))
    row("MiniLM embedding (CPU)", seconds / len(texts), timing.SECONDS_PER_EMBEDDING["minilm"], "text")
    # The constant is wall time: torch embeds on every core, so CPU seconds overstate the wait.
    row("MiniLM embedding (wall)", wall / len(texts), timing.SECONDS_PER_EMBEDDING["minilm"], "text")
    import numpy as np

    vectors = embedder.embed(texts)
    for k in (40, 200):
        x, y = vectors[:k], vectors[k:2 * k]
        seconds, _ = cpu(lambda: dbpa_test(x, y, n_resamples=800, rng=np.random.default_rng(0)))
        row(f"permutation test, k = {k}, B = 800", seconds / (800 * (2 * k) ** 2), timing.SECONDS_PER_TEST_UNIT,
            "resample·(2k)²")
    from dbpa_core.paper.stability import stability_study
    from dbpa_core.stability.runs import recorded_runs

    runs = recorded_runs(cost="paper")  # the Stability page's bootstrap: each resample re-solves every target
    base, _ = cpu(lambda: stability_study(runs=runs, n_resamples=0))
    seconds, _ = cpu(lambda: stability_study(runs=runs, n_resamples=100))
    row("stability criterion (bootstrap)", (seconds - base) / (100 * len(runs)), timing.SECONDS_PER_CRITERION,
        "solve")
    recorded = get_sampler("recorded")
    seconds, _ = cpu(lambda: recorded.sample(scenario.prompt, 20, seed=0))
    row("recorded output", seconds / 20, timing.SECONDS_PER_OUTPUT["recorded"], "output")
    if args.local:
        local = get_sampler("local")
        seconds, _ = cpu(lambda: local.sample(scenario.prompt, 1, max_tokens=80, seed=1))
        row("SmolLM2 load + 1 output", seconds, timing.LOAD_SECONDS["local"] + timing.SECONDS_PER_OUTPUT["local"],
            "load")
        seconds, wall = cpu(lambda: local.sample(scenario.prompt, 6, max_tokens=80, seed=2))
        row("SmolLM2 output (80 tokens)", wall / 6, timing.SECONDS_PER_OUTPUT["local"], "output (wall)")
        # The RUT page's live audit (rut_local.yaml, the packaged model as both): per prompt and per reference
        # answer, fitted from (n, m) = (4, 4) and (4, 8) in this process (the model loaded already).
        import yaml

        from dbpa_core.data.assets import ASSETS
        from dbpa_core.requests.dispatch import run as dispatch
        from dbpa_core.requests.rut import RUTRequest

        spec = yaml.safe_load((ASSETS / "specs" / "rut_local.yaml").read_text(encoding="utf-8"))
        walls = {}
        for m in (4, 8):
            _, request = RUTRequest.from_mapping({**spec, "n": 4, "m": m})
            folder = Path(tempfile.mkdtemp(prefix="bench-timing-rut-"))
            _, walls[m] = cpu(lambda: dispatch(request, store=SampleStore(folder / "store.sqlite")))
        answer = (walls[8] - walls[4]) / (4 * 4)
        row("RUT reference answer (batched)", answer, timing.SECONDS_PER_RUT_REFERENCE_ANSWER, "answer (wall)")
        row("RUT prompt (target + scoring)", walls[4] / 4 - 4 * answer, timing.SECONDS_PER_RUT_PROMPT,
            "prompt (wall)")
        print(f"{'RUT live audit, n = 4, m = 4':<34} {walls[4]:10.2f} "
              f"{timing.rut_estimate(4, 4, timing.Throughput(), loaded=('local',)).seconds:10.2f}  s ran, announced (model loaded)")

    print("\nthe home page's Resample at k = 200 (a new replicate: every arm embedded anew)")
    request = AuditRequest.from_scenario(scenario, None, sampler=SamplerConfig("simulated"),
                                         embedder=EmbedderConfig(), k=200, n_resamples=800, replicate=9,
                                         correction="bonferroni")
    estimate = timing.request_estimate(request, timing.Throughput(), loaded=("minilm",))
    store = SampleStore(Path(tempfile.mkdtemp(prefix="bench-timing-")) / "store.sqlite")
    seconds, wall = cpu(lambda: run(request, store=store, embedder=embedder))
    print(f"announced {estimate.seconds:.0f} s ({estimate.reading()}); ran {wall:.0f} s wall, {seconds:.0f} s CPU; "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
