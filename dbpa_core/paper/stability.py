"""The OT stability paper's experiments (Liu, Li, Cui & Blanchet, §2.4 Table 1, §3 Figure 1) on recorded searches.

Per task (general QA; secret keeping, the jailbreak analogue) and target
model: Table 1 (the share of items a judged rewrite breaks, and the target
queries per success) and Figure 1 (stability R against θ1/θ2 at r = 50 % on
the paper's constraint 1/θ1 + 1/θ2 = 1, and against r at θ1 = θ2 = 2), the
most sensitive items with their winning rewrites, and whether the models'
ranking changes along the curves (the paper's "evaluation should not rely on
one single metric").  A paired bootstrap over items (``n_resamples``,
``seed``) says how often each ranking holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..stability.criterion import paper_thetas, ratio_curve, stability_criterion, stability_curve
from ..stability.runs import StabilityRun, recorded_runs
from ..stability.tasks import TASKS

#: Table 1 as printed in the paper (GPT-4 judge, Vicuna-13B assistant; "-": Llama2 excluded from the jailbreak
#: task).  Other models than ours: shown beside our numbers for scale, never compared row by row.
PAPER_TABLE1 = {
    "jailbreak": {"Vicuna-13B": (0.842, 2.65), "Vicuna-7B": (0.852, 4.06), "Mistral-7B": (0.858, 2.39),
                  "DeepSeek-7B": (0.839, 3.58), "ChatGLM2-6B": (0.864, 2.99), "Qwen2-7B": (0.818, 3.00)},
    "alpaca": {"Vicuna-13B": (0.802, 4.47), "Vicuna-7B": (0.821, 3.52), "Llama2-13B": (0.823, 4.82),
               "Llama2-7B": (0.849, 4.39), "Mistral-7B": (0.738, 6.20), "DeepSeek-7B": (0.877, 4.25),
               "ChatGLM2-6B": (0.837, 3.09), "Qwen2-7B": (0.824, 4.77)},
}

#: Figure 1's settings: r = 50 % for the θ curve, θ1 = θ2 = 2 (c = 1) for the r curve.
PAPER_R = 0.5
PAPER_C = 1.0
RISKS = np.round(np.linspace(0.0, 1.0, 21), 2)
RATIOS = np.geomspace(0.1, 10.0, 11)


@dataclass(frozen=True)
class SensitiveItem:
    """An item of the most sensitive distribution at Figure 1's headline setting, with its winning rewrite."""

    prompt: str
    rewrite: str
    answer: str
    weight: float
    cost: float


@dataclass(frozen=True, eq=False)
class StabilityRow:
    """One target on one task.

    Attributes
    ----------
    curve_ratio : ndarray
        R at r = :data:`PAPER_R` for each θ1/θ2 in the study's ``ratios``.
    curve_risk : ndarray
        R at θ1 = θ2 = 2 for each r in the study's ``risks``.
    rank_support : float
        Share of bootstrap resamples of the items in which this target keeps
        its rank among the task's targets at the headline setting
        (r = 50 %, θ1 = θ2 = 2).
    """

    task: str
    target: str
    n_items: int
    baseline_risk: float
    adversarial_fraction: float
    mean_queries: float
    curve_ratio: np.ndarray = field(repr=False)
    curve_risk: np.ndarray = field(repr=False)
    headline: float
    rank_support: float
    sensitive: tuple[SensitiveItem, ...] = field(repr=False)


@dataclass(frozen=True, eq=False)
class StabilityStudy:
    """Table 1 and Figure 1 on the recorded searches."""

    rows: tuple[StabilityRow, ...]
    ratios: np.ndarray
    risks: np.ndarray
    settings: dict

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(t for t in TASKS if any(r.task == t for r in self.rows))

    def task_rows(self, task: str) -> tuple[StabilityRow, ...]:
        return tuple(r for r in self.rows if r.task == task)

    def rankings(self, task: str, curve: str) -> list[tuple[str, ...]]:
        """Targets from most to least stable at each point of ``curve`` ("ratio" or "risk"); ties keep order."""
        rows = self.task_rows(task)
        values = np.array([r.curve_ratio if curve == "ratio" else r.curve_risk for r in rows])
        return [tuple(rows[i].target for i in np.argsort(-values[:, j], kind="stable")) for j in range(values.shape[1])]

    def ranking_changes(self, task: str, curve: str) -> bool:
        """Whether the most-stable-first order differs between two points of the curve where R > 0 for all."""
        rows = self.task_rows(task)
        values = np.array([r.curve_ratio if curve == "ratio" else r.curve_risk for r in rows])
        informative = np.all(values > 0, axis=0) & np.all(np.isfinite(values), axis=0)
        orders = {order for order, keep in zip(self.rankings(task, curve), informative) if keep}
        return len(orders) > 1

    def success_ranking(self, task: str) -> tuple[str, ...]:
        """Targets ordered by Table 1 alone: fewest items broken first (most stable by that measure)."""
        rows = sorted(self.task_rows(task), key=lambda r: r.adversarial_fraction)
        return tuple(r.target for r in rows)


def _sensitive(run: StabilityRun, limit: int = 5) -> tuple[SensitiveItem, ...]:
    theta = paper_thetas(1.0, c=PAPER_C)
    result = stability_criterion(run.losses, run.costs, PAPER_R, theta1=theta[0], theta2=theta[1])
    chosen = [i for i in np.argsort(-result.weights, kind="stable") if result.choices[i] > 0]
    return tuple(SensitiveItem(run.prompts[i, 0], run.prompts[i, result.choices[i]], run.answers[i, result.choices[i]],
                               float(result.weights[i]), float(run.costs[i, result.choices[i]]))
                 for i in chosen[:limit])


def _headline(losses, costs) -> float:
    theta = paper_thetas(1.0, c=PAPER_C)
    return stability_criterion(losses, costs, PAPER_R, theta1=theta[0], theta2=theta[1]).value


def _rank_support(runs: list[StabilityRun], n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    # Paired: every target is re-evaluated on the same resampled items, so the
    # share says how often the observed order of each target survives.
    observed = np.array([_headline(r.losses, r.costs) for r in runs])
    ranks = np.argsort(np.argsort(-observed, kind="stable"), kind="stable")
    n = runs[0].n_items
    kept = np.zeros(len(runs))
    for _ in range(n_resamples):
        index = rng.integers(0, n, n)
        values = np.array([_headline(r.losses[index], r.costs[index]) for r in runs])
        kept += np.argsort(np.argsort(-values, kind="stable"), kind="stable") == ranks
    return kept / max(n_resamples, 1)


def stability_study(*, store=None, n_resamples: int = 200, seed: int = 0, cost: str = "paper",
                    progress: Callable | None = None, runs: dict | None = None) -> StabilityStudy:
    """Table 1 and Figure 1 of the stability paper on the recorded searches.

    Parameters
    ----------
    store : SampleStore, optional
        Unused (the searches ship with their similarities); accepted like every reproducer.
    n_resamples : int
        Bootstrap resamples of the items for :attr:`StabilityRow.rank_support`.
    seed : int
        Seed of the bootstrap.
    cost : str
        The perturbation cost (:data:`~dbpa_core.stability.criterion.COSTS`); default eq. (1).
    progress : callable(done, total), optional
    runs : dict, optional
        ``{(task, target): StabilityRun}`` instead of the recorded searches (a live run).

    Returns
    -------
    StabilityStudy
    """
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 0:
        raise ValueError(f"`n_resamples` must be a non-negative integer; got {n_resamples!r}.")
    runs = recorded_runs(cost=cost) if runs is None else runs
    theta = paper_thetas(1.0, c=PAPER_C)
    rng = np.random.default_rng(seed)
    rows = []
    tasks = [t for t in TASKS if any(key[0] == t for key in runs)]
    for done, task in enumerate(tasks, start=1):
        task_runs = [run for key, run in runs.items() if key[0] == task]
        support = _rank_support(task_runs, n_resamples, rng)
        for run, kept in zip(task_runs, support):
            rows.append(StabilityRow(
                task, run.target, run.n_items, run.baseline_risk, run.adversarial_fraction, run.mean_queries,
                ratio_curve(run.losses, run.costs, PAPER_R, RATIOS, c=PAPER_C),
                stability_curve(run.losses, run.costs, RISKS, theta1=theta[0], theta2=theta[1]),
                _headline(run.losses, run.costs), float(kept), _sensitive(run)))
        if progress is not None:
            progress(done, len(tasks))
    settings = {"cost": cost, "r": PAPER_R, "c": PAPER_C, "theta1=theta2": theta[0], "n_resamples": n_resamples,
                "seed": seed, "source": "assets/recorded/audits/stability_search.json.gz"}
    return StabilityStudy(tuple(rows), RATIOS, RISKS, settings)
