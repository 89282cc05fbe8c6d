"""The planner across prompts (dbpa_core/stats/planning_many.py): planned power against delivered power.

Pilot: the shipped example (the paper's GPT-3.5 and GPT-4 answers, seed 9, 9 prompts × the first 5 answers).
Delivered: the same 9 prompts' 15 other answers per model (the paper recorded 20), the design's m prompts
drawn without replacement and k answers per arm, the test run 200 times.  Measured (n_simulations = 100,
B = 100): delivered − planned between +0.02 and +0.14 over the 5 designs simulated (the plan is conservative):
3 × 2: 0.19 → 0.21, 3 × 3: 0.58 → 0.72, 3 × 5: 0.94 → 0.975, 9 × 2: 0.66 → 0.755, 9 × 3: 0.94 → 1.00.
Tolerance: delivered − planned within [−0.10, +0.25] at every simulated design (the planned estimate's Monte
Carlo error alone is ±0.10 at 100 simulations, the delivered one's ±0.07 at 200), and the recommended design
delivers at least the target − 0.05.  A planner that takes a 5-output pilot's difference at face value
(a Gaussian per arm) plans power 0.62 at 9 prompts × 2 on GPT-4 against itself: the null check below fails it.
"""

from __future__ import annotations

import numpy as np
import pytest

from dbpa_core.data.store import text_hash
from dbpa_core.embedders import get_embedder
from dbpa_core.paper.embeddings import load_shipped_embeddings
from dbpa_core.paper.loaders import load_paraphrases
from dbpa_core.stats.many import dbpa_test_many
from dbpa_core.stats.planning_many import plan_many_prompts, read_many_plan

MODELS = ("gpt-35-1106-vdsT-AE", "SWNorth-gpt-4-0613-20231016")  # the example's GPT-3.5 and GPT-4
PILOT = 5


@pytest.fixture(scope="module")
def answers():
    """Per prompt of seed 9 (patient, then the 8 paraphrases), each model's 20 answers' MiniLM vectors."""
    key = get_embedder("minilm").key
    runs = [load_paraphrases(model, 9) for model in MODELS]
    prompts = []
    for i in range(9):
        arms = []
        for run in runs:
            texts = [run.base, *run.paraphrases][i]
            vectors = load_shipped_embeddings(texts, embedder_key=key)
            arms.append(np.stack([vectors[text_hash(t)] for t in texts]))
        prompts.append(arms)
    return prompts


def delivered(answers, m: int, k: int, n: int = 200, seed: int = 1) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n):
        chosen = rng.choice(len(answers), size=m, replace=False)
        xs = [answers[i][0][PILOT + rng.choice(20 - PILOT, k, replace=False)] for i in chosen]
        ys = [answers[i][1][PILOT + rng.choice(20 - PILOT, k, replace=False)] for i in chosen]
        hits += dbpa_test_many(xs, ys, discrepancy="energy", n_resamples=100, rng=rng).pvalue <= 0.05
    return hits / n


def test_delivered_power_near_planned_on_the_paper_answers(answers):
    pilot_x = [a[0][:PILOT] for a in answers]  # = the shipped example's outputs
    pilot_y = [a[1][:PILOT] for a in answers]
    plan = plan_many_prompts(pilot_x, pilot_y, power=0.8, prompts_grid=(3, 9), k_grid=(2, 3, 5),
                             n_simulations=100, n_resamples=100, rng=0)
    assert plan.recommended is not None
    simulated = [(m, k) for m in plan.prompts_grid for k in plan.k_grid if not np.isnan(plan.power_at(m, k))]
    for m, k in simulated:
        gap = delivered(answers, m, k) - plan.power_at(m, k)
        assert -0.10 <= gap <= 0.25, (m, k, plan.power_at(m, k), gap)
    assert delivered(answers, *plan.recommended) >= plan.power - 0.05
    assert read_many_plan(plan)[0].startswith(f"Plan: {plan.recommended[0]} prompts with {plan.recommended[1]}")


def test_no_change_plans_little_power(answers):
    """GPT-4 against itself (answers 0–4 vs 5–9 of each prompt): the plan sees little power, not the pilot's noise."""
    plan = plan_many_prompts([a[1][:5] for a in answers], [a[1][5:10] for a in answers], prompts_grid=(9,),
                             k_grid=(2,), n_simulations=100, n_resamples=100, rng=0)
    assert plan.power_at(9, 2) <= 0.2 and plan.recommended is None
    assert read_many_plan(plan)[0].startswith("No design searched reaches 80 % power")


def test_validation_names_the_field(answers):
    with pytest.raises(ValueError, match="`pilot_x` and `pilot_y` must hold the same number"):
        plan_many_prompts([answers[0][0]], [])
    with pytest.raises(ValueError, match=r"`pilot_x\[0\]`"):
        plan_many_prompts([answers[0][0][:3]], [answers[0][1][:5]])
    with pytest.raises(ValueError, match=r"`k_grid\[0\]`"):
        plan_many_prompts([answers[0][0]], [answers[0][1]], k_grid=(1,))
    with pytest.raises(ValueError, match="`n_resamples`"):
        plan_many_prompts([answers[0][0]], [answers[0][1]], n_resamples=5)
