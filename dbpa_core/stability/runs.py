"""Searches → the loss and cost matrices of the stability criterion, and the paper's Table 1 figures.

The recorded searches (``assets/recorded/audits/stability_search.json.gz``,
written only by ``scripts/record_stability.py``) hold, per task, target and
item, every prompt the search produced.  :func:`stability_run` lays one
target's searches out as the (n items, 1 + K) matrices of
:func:`~dbpa_core.stability.criterion.stability_criterion`: column 0 the
original, then the rewrites; cost = eq. (1) from the recorded similarity and
token counts, +inf where the judge rejected the rewrite, NaN where there is
no candidate.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ..data.assets import RECORDED_AUDITS_DIR
from .criterion import costs_from_similarity
from .search import Search
from .tasks import load_items

RUNS_FILE = RECORDED_AUDITS_DIR / "stability_search.json.gz"

#: The recorded targets: a local model by name and the target's own system prompt.  The packaged SmolLM2
#: (Q4_1); its most aggressive requantization (Q2_K: does losing precision cost stability?); and the
#: packaged model told to answer briefly (a system prompt, the cheapest deployment knob).
TARGETS = MappingProxyType({
    "smollm2": {"model": "smollm2", "system": None},
    "smollm2-q2_k": {"model": "smollm2-q2_k", "system": None},
    "smollm2 + brief": {"model": "smollm2", "system": "Answer in one short sentence."},
})

#: The search budgets of the recorded searches (sized for two shared CPU cores: K = 3 proposals per round, the
#: closest rewrite expanded, two rounds), also the live run's defaults; answers long enough for the grader's
#: first two sentences (QA) or for a leak (secret).
SEARCH_SETTINGS = MappingProxyType({"n_candidates": 3, "width": 1, "depth": 2, "seed": 0, "assistant_max_tokens": 24,
                                    "assistant_temperature": 0.9})
TARGET_MAX_TOKENS = MappingProxyType({"qa": 24, "secret": 40})


@dataclass(frozen=True, eq=False)
class StabilityRun:
    """One target's searches on one task, as the criterion's matrices.

    Attributes
    ----------
    task, target : str
    prompts, answers : ndarray of object, shape (n, 1 + K)
        None where there is no candidate or it was never answered.
    losses, costs : ndarray of float, shape (n, 1 + K)
    queries : ndarray of int, shape (n,)
        Target queries spent on rewrites of each item.
    failed_at : ndarray of float, shape (n,)
        Queries until the first failing rewrite; NaN when none failed.
    """

    task: str
    target: str
    prompts: np.ndarray = field(repr=False)
    answers: np.ndarray = field(repr=False)
    losses: np.ndarray = field(repr=False)
    costs: np.ndarray = field(repr=False)
    queries: np.ndarray = field(repr=False)
    failed_at: np.ndarray = field(repr=False)

    @property
    def n_items(self) -> int:
        return self.losses.shape[0]

    @property
    def baseline_risk(self) -> float:
        """Error rate on the original items."""
        return float(self.losses[:, 0].mean())

    @property
    def adversarial_fraction(self) -> float:
        """Table 1's "Adversarial %": of the items the target gets right, the share a judged rewrite breaks."""
        held = self.losses[:, 0] == 0
        return float(np.mean(~np.isnan(self.failed_at[held]))) if held.any() else float("nan")

    @property
    def mean_queries(self) -> float:
        """Table 1's "# Avg. Queries": target queries per adversarial rewrite found."""
        found = ~np.isnan(self.failed_at)
        return float(self.failed_at[found].mean()) if found.any() else float("nan")


def load_searches(path=RUNS_FILE) -> tuple[dict, list[Search]]:
    """The recorded ``(settings, searches)``."""
    if not path.exists():
        raise ValueError(f"{path.name} is missing: run scripts/record_stability.py to record it.")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    items = {(i.task, i.prompt): i for task in ("qa", "secret") for i in load_items(task)}
    searches = []
    for row in data["searches"]:
        key = (row["task"], row["prompt"])
        if key not in items:
            raise ValueError(f"{path.name}: item {key} is not in assets/audits; record again.")
        searches.append(Search.from_dict(row, items[key]))
    return data["settings"], searches


def complete_items(searches: Sequence[Search], task: str, targets: Sequence[str]) -> list[str]:
    """Prompts of ``task`` searched for every one of ``targets`` (in recorded order)."""
    done: dict[str, set] = {}
    for s in searches:
        if s.item.task == task:
            done.setdefault(s.item.prompt, set()).add(s.target)
    return [prompt for prompt, names in done.items() if set(targets) <= names]


def stability_run(searches: Sequence[Search], *, cost: str = "paper", threshold: float | None = None
                  ) -> StabilityRun:
    """The matrices of one target's searches on one task.

    Parameters
    ----------
    searches : sequence of Search
        One per item, all of one task and one target.
    cost : str
        A name in :data:`~dbpa_core.stability.criterion.COSTS`.
    threshold : float, optional
        Re-judge with this similarity threshold: a queried rewrite below it
        costs +inf, a rejected one above it stays out (it was never answered).
        Default: the recorded verdicts.
    """
    if not searches:
        raise ValueError("`searches` must hold at least one search.")
    if len({(s.item.task, s.target) for s in searches}) != 1:
        raise ValueError("`searches` must all be of one task and one target.")
    rows = [[n for n in s.nodes if n.status in ("original", "queried", "rejected")] for s in searches]
    width = max(len(r) for r in rows)
    shape = (len(rows), width)
    prompts = np.full(shape, None, dtype=object)
    answers = np.full(shape, None, dtype=object)
    losses = np.full(shape, np.nan)
    similarity = np.full((shape[0], width - 1), np.nan)
    tokens = np.ones((shape[0], width - 1))
    accepted = np.zeros((shape[0], width - 1), dtype=bool)
    original_tokens = np.array([r[0].tokens for r in rows])
    failed = np.full(len(rows), np.nan)
    for i, (search, row) in enumerate(zip(searches, rows)):
        queried = 0
        for j, node in enumerate(row):
            prompts[i, j], answers[i, j] = node.text, node.answer
            if node.answer is not None:
                # The answers are the data, the grading is code: graded again here, so that the
                # shipped searches follow the current grader (grader.py).
                losses[i, j] = search.item.loss(node.answer)
            if j:
                similarity[i, j - 1], tokens[i, j - 1] = node.similarity, node.tokens
                accepted[i, j - 1] = node.status == "queried" and (threshold is None or node.similarity >= threshold)
                if node.status == "rejected" and threshold is not None and node.similarity >= threshold:
                    similarity[i, j - 1] = np.nan  # accepted now but never answered: no candidate
            if node.status == "queried":
                queried += 1
                if losses[i, j] == 1 and losses[i, 0] == 0 and np.isnan(failed[i]):
                    failed[i] = queried
    costs = costs_from_similarity(similarity, original_tokens, tokens, cost=cost, accepted=accepted)
    return StabilityRun(searches[0].item.task, searches[0].target, prompts, answers, losses, costs,
                        np.array([s.queries for s in searches]), failed)


def recorded_runs(*, cost: str = "paper", threshold: float | None = None) -> dict[tuple[str, str], StabilityRun]:
    """``{(task, target): StabilityRun}`` of the shipped searches, on the items every target completed."""
    settings, searches = load_searches()
    targets = list(settings["targets"])
    runs = {}
    for task in ("qa", "secret"):
        prompts = complete_items(searches, task, targets)
        if not prompts:
            continue
        for target in targets:
            by_prompt = {s.item.prompt: s for s in searches if s.item.task == task and s.target == target}
            runs[task, target] = stability_run([by_prompt[p] for p in prompts], cost=cost, threshold=threshold)
    return runs


def live_runs(items: Sequence, targets: Sequence, assistant, judge, embedder, *, token_count=None, store=None,
              progress=None, cost: str = "paper", **settings) -> dict[tuple[str, str], StabilityRun]:
    """Search ``items`` on each of ``targets`` now (a user's endpoint, uploaded questions) and lay them out.

    Parameters
    ----------
    items : sequence of Item
        One task's items (:func:`~dbpa_core.stability.tasks.items_from_rows` for uploaded rows).
    targets : sequence of Target
    assistant, judge, embedder
        As :func:`~dbpa_core.stability.search.search_item`.
    token_count : callable, optional
        Default: the packaged SmolLM2's tokenizer.
    progress : callable(stage, done, total), optional
        Called after each item of each target.
    **settings
        ``n_candidates``, ``width``, ``depth``, ``seed`` … of the search.

    Returns
    -------
    dict
        ``{(task, target name): StabilityRun}``, ready for
        :func:`dbpa_core.paper.stability.stability_study` (``runs=``).
    """
    from .search import search_items, smollm2_token_count

    if not items or not targets:
        raise ValueError("`items` and `targets` must each hold at least one entry.")
    if len({i.task for i in items}) != 1:
        raise ValueError("`items` must all be of one task.")
    count = token_count or smollm2_token_count()
    runs = {}
    for target in targets:
        report = (lambda done, total, name=target.name: progress(f"stability: {name}", done, total)) \
            if progress else None
        searches = search_items(items, target, assistant, judge, embedder, token_count=count, store=store,
                                progress=report, **settings)
        runs[items[0].task, target.name] = stability_run(searches, cost=cost)
    return runs
