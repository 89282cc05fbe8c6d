"""Recorded data of the rank-based uniformity audit (RUT): reference-model scores of responses.

``assets/recorded/audits/rut_scores.json`` is written by :mod:`dbpa_core.rut.collect`
(``scripts/record_audits.py``); the statistics live in :mod:`dbpa_core.rut.uniformity`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_positive_int, check_rng
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


@dataclass(frozen=True, eq=False)
class AuditScores:
    """The scores one RUT audit tests.

    Attributes
    ----------
    prompts : tuple of str
        The prompts kept, in order.
    target_scores : ndarray of shape (n,)
        The reference model's score of the target's response to each prompt.
    reference_scores : ndarray of shape (n, m)
        Its scores of its own m responses to each prompt.
    dropped : tuple of str
        Prompts left out because a response had no tokens to score (its score
        is undefined).  The rule treats the target's and the m reference
        responses alike, so the kept prompts' responses stay exchangeable under H0.
    """

    prompts: tuple[str, ...]
    target_scores: np.ndarray = field(repr=False)
    reference_scores: np.ndarray = field(repr=False)
    dropped: tuple[str, ...] = ()

    @classmethod
    def from_rows(cls, prompts, target_scores, reference_scores) -> AuditScores:
        """Keep the prompts whose m + 1 scores are all finite; name the others in ``dropped``."""
        target_scores = np.asarray(target_scores, dtype=np.float64)
        reference_scores = np.asarray(reference_scores, dtype=np.float64)
        keep = np.isfinite(target_scores) & np.all(np.isfinite(reference_scores), axis=1)
        prompts = tuple(prompts)
        return cls(tuple(p for p, k in zip(prompts, keep) if k), target_scores[keep], reference_scores[keep],
                   tuple(p for p, k in zip(prompts, keep) if not k))


def rut_arrays(data: RankAuditData, target: str, *, n_prompts: int, m: int, rng=None) -> AuditScores:
    """The scores of one audit of ``target`` ("reference" = the model itself, H0) from the recording.

    Parameters
    ----------
    data : RankAuditData
    target : str
        "reference" or the name of a recorded alternative.
    n_prompts, m : int
        The first ``n_prompts`` prompts; m reference responses per prompt.
    rng : Generator, int or None
        None: the reference sample is the first m recorded responses per prompt
        and, under H0, the target's response is response m + 1 (never one of
        the m).  Otherwise, per prompt, m responses drawn at random without
        replacement and (under H0) the target drawn from the rest: every seed
        gives another audit from the same recording.  An alternative's target
        is its first response.

    Returns
    -------
    AuditScores
    """
    pool = data.reference_pool
    n_prompts = check_positive_int(n_prompts, "n_prompts", minimum=2)
    m = check_positive_int(m, "m")
    if n_prompts > pool.shape[0]:
        raise ValueError(f"`n_prompts` must be between 2 and {pool.shape[0]} (the recorded prompts).")
    if m + 1 > pool.shape[1]:
        raise ValueError(f"`m` must be between 1 and {pool.shape[1] - 1} (recorded reference samples − 1).")
    if target != "reference" and target not in data.alternatives:
        raise ValueError(f"`target` must be 'reference' or one of {', '.join(data.alternatives)}; got {target!r}.")
    if rng is None:
        columns = np.tile(np.arange(m + 1), (n_prompts, 1))
    else:
        rng = check_rng(rng)
        columns = np.array([rng.choice(pool.shape[1], size=m + 1, replace=False) for _ in range(n_prompts)])
    rows = np.arange(n_prompts)
    reference = pool[rows[:, None], columns[:, :m]]
    if target == "reference":
        target_scores = pool[rows, columns[:, m]]
    else:
        target_scores = data.alternatives[target][:n_prompts, 0]
    return AuditScores.from_rows(data.prompts[:n_prompts], target_scores, reference)
