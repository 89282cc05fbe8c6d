"""Data of the OT stability audit: questions, their rewrites, answers, 0/1 losses and costs.

Recorded answers (``assets/recorded/audits/stability_answers.jsonl``) come from
``scripts/record_audits.py``; the criterion itself is :mod:`dbpa_core.stability.criterion`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..data.assets import AUDITS_DIR, RECORDED_AUDITS_DIR, read_yaml
from .criterion import perturbation_costs
from .grader import is_correct
from .rewrites import REWRITES, rewrite

@dataclass(frozen=True, eq=False)
class StabilityData:
    """Losses and costs of one model/setting on the question set.

    losses, costs : (n_questions, 1 + K); column 0 = the original question
    prompts : (n_questions, 1 + K) texts; answers likewise
    """

    setting: str
    questions: tuple[str, ...]
    rewrites: tuple[str, ...]
    prompts: np.ndarray = field(repr=False)
    answers: np.ndarray = field(repr=False)
    losses: np.ndarray = field(repr=False)
    costs: np.ndarray = field(repr=False)


def stability_questions() -> list[dict]:
    return read_yaml(AUDITS_DIR / "stability_questions.yaml")["questions"]


def stability_from_answers(setting: str, answers_by_prompt: dict, embedder, *, cost="cosine_length",
                           store=None) -> StabilityData:
    """Build losses (0/1, by the known answers) and costs (by ``embedder``) for one setting."""
    items = stability_questions()
    kinds = ("original", *REWRITES)
    prompts = np.array([[item["question"] if k == "original" else rewrite(item["question"], k) for k in kinds]
                        for item in items], dtype=object)
    answers = np.array([[answers_by_prompt[p] for p in row] for row in prompts], dtype=object)
    losses = np.array([[0.0 if is_correct(a, item["answers"]) else 1.0 for a in row]
                       for row, item in zip(answers, items)])
    vectors = embedder.embed([p for row in prompts for p in row], store=store).reshape(len(items), len(kinds), -1)
    lengths = np.array([[len(p.split()) for p in row] for row in prompts])
    costs = perturbation_costs(vectors[:, 0], vectors[:, 1:], lengths[:, 0], lengths[:, 1:], cost=cost)
    return StabilityData(setting, tuple(i["question"] for i in items), kinds[1:], prompts, answers, losses, costs)


def load_recorded_stability(embedder, *, cost="cosine_length", store=None) -> dict[str, StabilityData]:
    """Every recorded setting (assets/recorded/audits/stability_answers.jsonl)."""
    path = RECORDED_AUDITS_DIR / "stability_answers.jsonl"
    if not path.exists():
        raise ValueError(f"{path.name} is missing: run scripts/record_audits.py to record it.")
    by_setting: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        by_setting.setdefault(row["setting"], {})[row["prompt"]] = row["answer"]
    return {setting: stability_from_answers(setting, answers, embedder, cost=cost, store=store)
            for setting, answers in by_setting.items()}
