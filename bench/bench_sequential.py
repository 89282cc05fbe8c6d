"""Sequential vs fixed-k DBPA: power and samples per arm, side by side.

    python bench/bench_sequential.py [--repetitions 200] [--discrepancy jsd] [--futility 0.5]

For each perturbation, the same random draws feed three tests: the sequential
test with Pocock-type and with O'Brien–Fleming-type α-spending (batches; each
stops when the change is clear) and the fixed-k test at k = k_max on the first
k_max draws.  Reports power (rejection rate at α = 0.05; on controls it is the
false-alarm rate), the mean number of samples per arm the sequential test
drew and the saving k_max / mean n, as Markdown tables.

Two sources of outputs, each sampled *without replacement* per repetition:

- the simulated scenarios' arms (targets with a known effect, and controls):
  a pool of 200 outputs per arm from the simulated model, embedded once with
  MiniLM (cached in the sample store, ``$DBPA_STORE``), k_max = 100, batches of 10;
- the paper's persona responses (``assets/paper/``, a copy of the reference code's ``personas/``, 20 real
  GPT responses per persona): each persona against the doctor persona,
  k_max = 20, batches of 5; and, as a null, the doctor's 20 split into halves
  (k_max = 10).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dbpa_core as d  # noqa: E402
from dbpa_core.data.scenarios import load_scenarios  # noqa: E402
from dbpa_core.data.store import SampleStore  # noqa: E402
from dbpa_core.paper.embeddings import embed_groups  # noqa: E402
from dbpa_core.paper.loaders import load_personas  # noqa: E402
from dbpa_core.embedders import get_embedder  # noqa: E402
from dbpa_core.samplers.simulated import SimulatedSampler  # noqa: E402

ALPHA = 0.05
SPENDING = ("pocock", "obrien_fleming")
SIMULATED = {  # scenario → perturbations (targets and a control)
    "seasons_question": ["eli5", "mars", "paraphrase_1"],
    "customer_support": ["very_late", "angry_refund", "terse_system", "paraphrase_1"],
    "cvd_nice": ["persona_child", "persona_comedian", "cholesterol_high", "diabetes_type2", "persona_doctor"],
}
PERSONAS = ["nurse", "medical practitioner", "medical supervisor", "comedian", "robot from the future",
            "NeurIPS reviewer", "child"]


def simulated_pools(embedder, store, pool: int) -> dict:
    """(scenario, arm id) → (pool, dim) embeddings of the simulated model's outputs."""
    sampler = SimulatedSampler()
    pools = {}
    for scenario_id, perturbation_ids in SIMULATED.items():
        scenario = load_scenarios()[scenario_id]
        arms = [("original", scenario.prompt, scenario.system)]
        arms += [(p, *scenario.apply(scenario.perturbation(p))) for p in perturbation_ids]
        for arm_id, prompt, system in arms:
            texts = sampler.sample(prompt, pool, system=system or None, seed=0, store=store)
            pools[scenario_id, arm_id] = embedder.embed(texts, store=store)
    return pools


def compare(x_pool, y_pool, *, kind, k_max, batch_size, repetitions, discrepancy, futility, seed) -> dict:
    """The fixed-k test and both spending functions on the same without-replacement draws."""
    rng = np.random.default_rng(seed)
    fixed_rejects = []
    rejects = {spending: [] for spending in SPENDING}
    samples = {spending: [] for spending in SPENDING}
    for _ in range(repetitions):
        x_order, y_order = rng.permutation(len(x_pool)), rng.permutation(len(y_pool))
        x, y = x_pool[x_order[:k_max]], y_pool[y_order[:k_max]]
        cursor = {"x": 0, "y": 0}

        def reader(name, rows):
            def draw(n):
                start = cursor[name]
                cursor[name] += n
                return rows[start:start + n]
            return draw

        for spending in SPENDING:
            cursor.update(x=0, y=0)
            result = d.sequential_dbpa_test(reader("x", x), reader("y", y), alpha=ALPHA, k_max=k_max,
                                            batch_size=batch_size, discrepancy=discrepancy, n_resamples=1000,
                                            spending=spending, futility=futility, rng=rng)
            rejects[spending].append(result.reject)
            samples[spending].append(result.n_per_arm)
        fixed_rejects.append(d.dbpa_test(x, y, discrepancy=discrepancy, n_resamples=1000, rng=rng).pvalue <= ALPHA)
    row = {"kind": kind, "k_max": k_max, "power_fixed": float(np.mean(fixed_rejects))}
    for spending in SPENDING:
        row[spending] = (float(np.mean(rejects[spending])), float(np.mean(samples[spending])))
    return row


def table(title: str, rows: dict) -> None:
    """Markdown: fixed-k power at k_max, then per spending function power, mean n per arm, saving k_max / n."""
    print(f"\n{title}\n")
    print("| perturbation | kind | k_max | fixed-k power | " + " | ".join(
        f"{name} power | {name} mean n | {name} saving" for name in SPENDING) + " |")
    print("|---|---|---|---|" + "---|---|---|" * len(SPENDING))

    def cells(items, k_max_of):
        out = [f"{np.mean([r['power_fixed'] for r in items]):.3f}"]
        for name in SPENDING:
            mean_n = np.mean([r[name][1] for r in items])
            out += [f"{np.mean([r[name][0] for r in items]):.3f}", f"{mean_n:.1f}",
                    f"{np.mean([k_max_of(r) / r[name][1] for r in items]):.2f}×"]
        return " | ".join(out)

    for label, row in rows.items():
        print(f"| {label} | {row['kind']} | {row['k_max']} | {cells([row], lambda r: r['k_max'])} |")
    for kind in dict.fromkeys(row["kind"] for row in rows.values()):
        chosen = [r for r in rows.values() if r["kind"] == kind]
        print(f"| **mean over {kind}s** | | | {cells(chosen, lambda r: r['k_max'])} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--discrepancy", default="jsd")
    parser.add_argument("--futility", type=float, default=None)
    args = parser.parse_args()
    settings = dict(repetitions=args.repetitions, discrepancy=args.discrepancy, futility=args.futility)
    embedder = get_embedder("minilm")
    started = time.perf_counter()

    store = SampleStore()
    pools = simulated_pools(embedder, store, pool=200)
    rows = {}
    for number, (scenario_id, perturbation_ids) in enumerate(SIMULATED.items()):
        scenario = load_scenarios()[scenario_id]
        for offset, perturbation_id in enumerate(perturbation_ids):
            kind = scenario.perturbation(perturbation_id).kind
            rows[f"{scenario_id}/{perturbation_id}"] = compare(
                pools[scenario_id, "original"], pools[scenario_id, perturbation_id], kind=kind, k_max=100,
                batch_size=10, seed=100 * number + offset, **settings)
    table(f"Simulated scenarios (MiniLM, ω = {args.discrepancy}, B = 1000, α = {ALPHA}, batches of 10, "
          f"{args.repetitions} repetitions, futility = {args.futility})", rows)

    # The shipped copy of the paper's persona responses (assets/paper/), embedded as every
    # reproduction embeds them (store, then the shipped MiniLM vectors, then MiniLM).
    personas = load_personas()
    vectors = embed_groups({p: personas[p] for p in ["doctor", *PERSONAS]}, embedder=embedder, store=store)
    rows = {}
    medical = {"nurse", "medical practitioner", "medical supervisor"}
    for offset, persona in enumerate(PERSONAS):
        rows[f"doctor vs {persona}"] = compare(vectors["doctor"], vectors[persona], k_max=20, batch_size=5,
                                               kind="medical" if persona in medical else "target",
                                               seed=1000 + offset, **settings)
    halves = np.random.default_rng(7).permutation(20)
    rows["doctor vs doctor (random halves)"] = compare(vectors["doctor"][halves[:10]], vectors["doctor"][halves[10:]],
                                                       kind="null", k_max=10, batch_size=5, seed=2000, **settings)
    table(f"Paper's persona responses (GPT, 20 per persona; MiniLM, ω = {args.discrepancy}, batches of 5, "
          f"{args.repetitions} repetitions; 'medical': another medical persona, but each file also drew its own "
          "patient)", rows)
    print(f"\nwall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
