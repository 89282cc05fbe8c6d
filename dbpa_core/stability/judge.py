"""The semantic judge of the stability experiments: does a rewrite keep the original's meaning?

The paper (§2.1) asks GPT-4 whether x and x̂ "represent the same question"
and sets the cost to infinity when they do not.  Two judges, peers behind
one method (:meth:`Judge.verdicts`):

* :class:`EmbeddingJudge` (default, offline): cosine similarity of the two
  embeddings at or above a threshold calibrated on a labelled sample that
  ships with the project (``assets/audits/stability_labelled.yaml``,
  ``judge_pairs``) by :func:`calibrate_threshold`;
* :class:`LLMJudge`: any chat model through a :class:`~dbpa_core.samplers.Sampler`
  (an OpenAI-compatible endpoint: the paper's setting), asked yes or no.

:func:`judge_report` measures each judge's accuracy on the labelled pairs
and how often the two disagree.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data.assets import AUDITS_DIR, read_yaml

LABELLED_FILE = AUDITS_DIR / "stability_labelled.yaml"

JUDGE_SYSTEM = "You compare two requests and answer only yes or no."
JUDGE_PROMPT = ("Request A: {original}\nRequest B: {candidate}\n\nDo A and B ask for exactly the same thing, so that "
                "the same answer is right for both? Answer yes or no.")


def labelled_pairs() -> list[dict]:
    """The shipped judge pairs: ``{"original", "candidate", "same"}``, labelled by hand."""
    return read_yaml(LABELLED_FILE)["judge_pairs"]


def cosine_similarities(embedder, original: str, candidates: Sequence[str], *, store=None) -> np.ndarray:
    """cos(e(x̂), e(x_k)) for each candidate (the embedder's vectors are unit-norm)."""
    vectors = embedder.embed([original, *candidates], store=store)
    return (vectors[1:] @ vectors[0]).astype(np.float64)


class Judge(ABC):
    """Says, for each candidate rewrite, whether it keeps the original's meaning."""

    name: str

    @abstractmethod
    def verdicts(self, original: str, candidates: Sequence[str], *, store=None) -> np.ndarray:
        """Boolean array: True where ``candidates[k]`` means the same as ``original``."""

    def describe(self) -> dict:
        """What determines the verdicts (recorded with the results; no secrets)."""
        return {"judge": self.name}


class EmbeddingJudge(Judge):
    """Same meaning when the embeddings' cosine similarity is at least ``threshold``.

    Parameters
    ----------
    embedder : Embedder
    threshold : float, optional
        Default: calibrated on the shipped labelled pairs with this embedder
        (:func:`calibrate_threshold`).
    store : SampleStore, optional
        Caches the embeddings of the calibration.
    """

    name = "embedding"

    def __init__(self, embedder, threshold: float | None = None, *, store=None):
        self.embedder = embedder
        if threshold is None:
            threshold = calibrate_threshold(embedder, store=store).threshold
        if not -1 <= float(threshold) <= 1:
            raise ValueError(f"`threshold` must be a cosine similarity in [-1, 1]; got {threshold}.")
        self.threshold = float(threshold)

    def verdicts(self, original, candidates, *, store=None):
        if not candidates:
            return np.zeros(0, dtype=bool)
        return cosine_similarities(self.embedder, original, candidates, store=store) >= self.threshold

    def describe(self):
        return {"judge": self.name, "embedder": self.embedder.key, "threshold": self.threshold}


def parse_yes_no(reply: str) -> bool | None:
    """True for a reply whose first yes/no word is yes, False for no, None when it has neither.

    Small models prefix their verdict ("A: Yes."), so the first of the two
    words anywhere in the reply counts.
    """
    for word in re.findall(r"[a-z]+", reply.lower()):
        if word in ("yes", "no"):
            return word == "yes"
    return None


class LLMJudge(Judge):
    """A chat model asked whether the two requests ask for the same thing (the paper's GPT-4 judge).

    Parameters
    ----------
    sampler : Sampler
        e.g. ``get_sampler("openai", model=..., base_url=...)``.
    max_tokens : int
        Room for the reply ("yes" / "no" and a few words).

    A reply that is neither yes nor no counts as "changed" (the rewrite is
    then not used): a judge that cannot say the meaning is kept does not
    vouch for it.  :attr:`unparsed` counts them.
    """

    name = "llm"

    def __init__(self, sampler, *, max_tokens: int = 4):
        self.sampler = sampler
        self.max_tokens = int(max_tokens)
        self.unparsed = 0

    def verdicts(self, original, candidates, *, store=None):
        verdicts = []
        for candidate in candidates:
            reply = self.sampler.sample(JUDGE_PROMPT.format(original=original, candidate=candidate), 1,
                                        system=JUDGE_SYSTEM, temperature=0.0, max_tokens=self.max_tokens, seed=0,
                                        store=store)[0]
            verdict = parse_yes_no(reply)
            self.unparsed += verdict is None
            verdicts.append(bool(verdict))
        return np.array(verdicts, dtype=bool)

    def describe(self):
        return {"judge": self.name, **self.sampler.identity()}


@dataclass(frozen=True)
class Calibration:
    """The embedding judge's threshold and how well it matches the labels.

    Attributes
    ----------
    threshold : float
        Cosine similarity at or above which a rewrite is judged to keep the meaning.
    accuracy : float
        Share of labelled pairs the threshold classifies right (in sample).
    loo_accuracy : float
        Leave-one-out accuracy: each pair judged by the threshold fitted on
        the others (an honest estimate for new pairs).
    n_pairs : int
    """

    threshold: float
    accuracy: float
    loo_accuracy: float
    n_pairs: int


def _best_threshold(similarity: np.ndarray, same: np.ndarray) -> float:
    # Candidates: midpoints between sorted similarities; ties go to the higher
    # threshold (a judge should rather refuse a rewrite than pass a changed one).
    values = np.unique(similarity)
    cuts = np.concatenate([[values[0] - 1e-6], (values[:-1] + values[1:]) / 2, [values[-1] + 1e-6]])
    accuracy = [np.mean((similarity >= c) == same) for c in cuts]
    best = np.flatnonzero(np.isclose(accuracy, np.max(accuracy)))[-1]
    return float(cuts[best])


def calibrate_threshold(embedder, pairs: Sequence[dict] | None = None, *, store=None) -> Calibration:
    """The similarity threshold that best separates same-meaning pairs from changed ones.

    Parameters
    ----------
    embedder : Embedder
    pairs : sequence of dict, optional
        ``{"original", "candidate", "same"}``; default the shipped :func:`labelled_pairs`.
    """
    pairs = list(labelled_pairs() if pairs is None else pairs)
    same = np.array([bool(p["same"]) for p in pairs])
    if len(pairs) < 4 or same.all() or not same.any():
        raise ValueError("`pairs` must hold at least 4 labelled pairs, both same-meaning and changed ones.")
    texts = [t for p in pairs for t in (p["original"], p["candidate"])]
    vectors = embedder.embed(texts, store=store).astype(np.float64)
    similarity = np.einsum("nd,nd->n", vectors[0::2], vectors[1::2])
    threshold = _best_threshold(similarity, same)
    loo = [(similarity[i] >= _best_threshold(np.delete(similarity, i), np.delete(same, i))) == same[i]
           for i in range(len(pairs))]
    return Calibration(threshold, float(np.mean((similarity >= threshold) == same)), float(np.mean(loo)),
                       len(pairs))


@dataclass(frozen=True)
class JudgeReport:
    """Two judges on the labelled pairs.

    Attributes
    ----------
    accuracy : dict
        judge name → share of pairs it labels as a person did.
    disagreement : float
        Share of pairs on which the two judges disagree.
    verdicts : dict
        judge name → boolean array over the pairs.
    labels : ndarray of bool
    """

    accuracy: dict
    disagreement: float
    verdicts: dict
    labels: np.ndarray


def judge_report(first: Judge, second: Judge, pairs: Sequence[dict] | None = None, *, store=None) -> JudgeReport:
    """Accuracy of two judges on the labelled pairs and how often they disagree."""
    pairs = list(labelled_pairs() if pairs is None else pairs)
    labels = np.array([bool(p["same"]) for p in pairs])
    verdicts = {}
    for index, judge in enumerate((first, second)):
        key = judge.name if judge.name not in verdicts else f"{judge.name} {index + 1}"
        verdicts[key] = np.array([judge.verdicts(p["original"], [p["candidate"]], store=store)[0] for p in pairs])
    (a, va), (b, vb) = verdicts.items()
    return JudgeReport({a: float(np.mean(va == labels)), b: float(np.mean(vb == labels))},
                       float(np.mean(va != vb)), verdicts, labels)
