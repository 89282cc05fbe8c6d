"""Data assembly for the two sibling audits (RUT and OT stability), from recordings or live.

Pages and the command line call these; the statistics live in
:mod:`dbpa_core.uniformity` and :mod:`dbpa_core.stability`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import yaml

from .rewrites import REWRITES, is_correct, rewrite
from .scenarios import ASSETS
from .stability import perturbation_costs

RECORDED = ASSETS / "recorded" / "audits"
AUDITS = ASSETS / "audits"


# ------------------------------------------------------------------------ RUT
@dataclass(frozen=True, eq=False)
class RankAuditData:
    """Scores for a rank-uniformity audit.

    reference_pool : (n_prompts, n_reference) reference-model scores of its own responses
    alternatives : name → (n_prompts, n_alt) scores of each alternative's responses
    labels : name → description
    """

    prompts: tuple[str, ...]
    reference_pool: np.ndarray = field(repr=False)
    alternatives: dict = field(repr=False)
    labels: dict = field(default_factory=dict)
    score: str = "log_rank"


def load_recorded_rut(score: str = "log_rank") -> RankAuditData:
    """The recorded RUT scores (assets/recorded/audits/rut_scores.json, by scripts/record_audits.py)."""
    path = RECORDED / "rut_scores.json"
    if not path.exists():
        raise ValueError(f"{path.name} is missing: run scripts/record_audits.py to record it.")
    record = json.loads(path.read_text())
    if score not in record["scores"]:
        raise ValueError(f"`score` must be one of {', '.join(record['scores'])}; got {score!r}.")
    prompts = tuple(p["prompt"] for p in record["prompts"])
    reference = np.array([[s[score] for s in p["reference"]] for p in record["prompts"]], dtype=float)
    alternatives = {name: np.array([[s[score] for s in row] for row in alt["scores"]], dtype=float)
                    for name, alt in record["alternatives"].items()}
    labels = {name: alt["label"] for name, alt in record["alternatives"].items()}
    return RankAuditData(prompts, reference, alternatives, labels, score)


def rut_arrays(data: RankAuditData, target: str, *, n_prompts: int, m: int):
    """(target_scores, reference_scores) for an audit of ``target`` ("reference" = the model itself, H0).

    The reference sample is the first m scores per prompt; the target's
    response is an alternative's first response or, under H0, the reference
    model's (m + 1)-th response, never one of the m.
    """
    pool = data.reference_pool
    if n_prompts > pool.shape[0] or n_prompts < 2:
        raise ValueError(f"`n_prompts` must be between 2 and {pool.shape[0]} (the recorded prompts).")
    if m < 1 or m + 1 > pool.shape[1]:
        raise ValueError(f"`m` must be between 1 and {pool.shape[1] - 1} (recorded reference samples − 1).")
    reference = pool[:n_prompts, :m]
    if target == "reference":
        target_scores = pool[:n_prompts, m]
    elif target in data.alternatives:
        target_scores = data.alternatives[target][:n_prompts, 0]
    else:
        raise ValueError(f"`target` must be 'reference' or one of {', '.join(data.alternatives)}; got {target!r}.")
    keep = np.isfinite(target_scores) & np.all(np.isfinite(reference), axis=1)
    return target_scores[keep], reference[keep]


# ------------------------------------------------------------------ stability
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
    return yaml.safe_load((AUDITS / "stability_questions.yaml").read_text())["questions"]


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
    path = RECORDED / "stability_answers.jsonl"
    if not path.exists():
        raise ValueError(f"{path.name} is missing: run scripts/record_audits.py to record it.")
    by_setting: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        by_setting.setdefault(row["setting"], {})[row["prompt"]] = row["answer"]
    return {setting: stability_from_answers(setting, answers, embedder, cost=cost, store=store)
            for setting, answers in by_setting.items()}
