"""Recorded data of the rank-based uniformity audit (RUT): reference-model scores of responses.

``assets/recorded/audits/rut_scores.json`` is written by :mod:`dbpa_core.rut.collect`
(``scripts/record_audits.py``); the statistics live in :mod:`dbpa_core.rut.uniformity`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..data.assets import RECORDED_AUDITS_DIR


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
    path = RECORDED_AUDITS_DIR / "rut_scores.json"
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
