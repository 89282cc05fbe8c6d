"""Benchmark of a headless audit: 100 perturbations × k = 40 on the simulated sampler, end to end.

    python bench/bench_audit.py

Reports the wall time and its share in sampling, embedding (MiniLM) and
statistics (permutation tests + correction), for a cold store and for a
re-run served from the store (the baseline for the cached case is the cold run).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dbpa_core.audit.runner as audit  # noqa: E402
from dbpa_core.embedders import MiniLMEmbedder  # noqa: E402
from dbpa_core.samplers.simulated import SimulatedSampler  # noqa: E402
from dbpa_core.audit.spec import parse_spec  # noqa: E402
from dbpa_core.data.store import SampleStore  # noqa: E402

TOPICS = ["bread", "tea", "a bicycle", "tomatoes", "a garden", "a résumé", "sleep", "a budget", "running", "rain"]


def spec_with(n: int):
    perturbations = [{"id": f"p{i}", "kind": "target" if i % 2 else "control",
                      "prompt": f"How do I get better at {TOPICS[i % 10]}? (variant {i // 10})"} for i in range(n)]
    return parse_spec({"name": "bench", "sampler": {"backend": "simulated"},
                       "prompts": {"original": {"prompt": "How do I get better at cooking?"},
                                   "perturbations": perturbations},
                       "k": 40, "n_resamples": 1000, "discrepancy": "jsd", "seed": 0})


def main() -> None:
    timings = {"sampling": 0.0, "embedding": 0.0, "statistics": 0.0}

    def timed(kind, function):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                timings[kind] += time.perf_counter() - start
        return wrapper

    SimulatedSampler.sample = timed("sampling", SimulatedSampler.sample)
    MiniLMEmbedder.embed = timed("embedding", MiniLMEmbedder.embed)
    audit.compare_arms = timed("statistics", audit.compare_arms)
    audit.adjust_pvalues = timed("statistics", audit.adjust_pvalues)
    MiniLMEmbedder().embed(["warm up the model"])
    spec = spec_with(100)
    with tempfile.TemporaryDirectory() as folder:
        store = SampleStore(Path(folder) / "bench.sqlite")
        for label in ("cold store", "cached re-run"):
            for key in timings:
                timings[key] = 0.0
            start = time.perf_counter()
            family = audit.run_audit(spec, store=store)
            total = time.perf_counter() - start
            if label == "cold store":
                cold = total
            shares = " | ".join(f"{k} {v:6.2f} s ({v / total:5.1%})" for k, v in timings.items())
            print(f"{label:14} 100 perturbations × k=40 (4,040 outputs), B=1000: {total:6.2f} s | {shares}"
                  + (f" | {cold / total:.1f}× faster than cold" if label != "cold store" else ""))
            assert len(family.results) == 100


if __name__ == "__main__":
    main()
