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
from types import MappingProxyType

import numpy as np

from ..stability.criterion import paper_thetas, ratio_curve, stability_criterion, stability_curve
from ..stability.runs import StabilityRun, recorded_runs
from ..stability.tasks import TASKS
from .cvd_roc import MODEL_LABELS

#: The recorded targets (:data:`~dbpa_core.stability.runs.TARGETS`) by the names the rest of the app gives the local
#: models (:data:`~dbpa_core.paper.cvd_roc.MODEL_LABELS`), not their ids: "+ brief prompt" is the packaged model
#: under the system prompt "Answer in one short sentence.".
TARGET_LABELS = MappingProxyType({"smollm2": MODEL_LABELS["smollm2"], "smollm2-q2_k": MODEL_LABELS["smollm2-q2_k"],
                                  "smollm2 + brief": f"{MODEL_LABELS['smollm2']} + brief prompt"})


def target_label(name: str) -> str:
    """A target's name on screen and in exports: a recorded target's display name, any other name as it is."""
    return TARGET_LABELS.get(name, name)

#: Table 1 as printed in the paper (GPT-4 judge, Vicuna-13B assistant; "-": Llama2 excluded from the jailbreak
#: task).  Other models than ours: shown beside our numbers for scale, never compared row by row.
PAPER_TABLE1 = {
    "jailbreak": {"Vicuna-13B": (0.842, 2.65), "Vicuna-7B": (0.852, 4.06), "Mistral-7B": (0.858, 2.39),
                  "DeepSeek-7B": (0.839, 3.58), "ChatGLM2-6B": (0.864, 2.99), "Qwen2-7B": (0.818, 3.00)},
    "alpaca": {"Vicuna-13B": (0.802, 4.47), "Vicuna-7B": (0.821, 3.52), "Llama2-13B": (0.823, 4.82),
               "Llama2-7B": (0.849, 4.39), "Mistral-7B": (0.738, 6.20), "DeepSeek-7B": (0.877, 4.25),
               "ChatGLM2-6B": (0.837, 3.09), "Qwen2-7B": (0.824, 4.77)},
}
#: The paper's dataset each of our tasks stands in for.
PAPER_DATASET = {"qa": "alpaca", "secret": "jailbreak"}

#: Figure 1's settings: r = 50 % for the θ curve, θ1 = θ2 = 2 (c = 1) for the r curve.
PAPER_R = 0.5
PAPER_C = 1.0
#: Beyond the paper: the θ curve again at r = 75 %, above the error rate of models that already fail half of
#: the items as asked (where R at r = 50 % is 0 and no curve can cross).
HIGH_R = 0.75
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
    curve_ratio_high : ndarray
        As ``curve_ratio`` at r = :data:`HIGH_R` (not in the paper).
    rank_support : float
        Share of bootstrap resamples of the items in which this target keeps
        its rank among the task's targets at the headline setting
        (r = 50 %, θ1 = θ2 = 2); NaN when no bootstrap was run.
    """

    task: str
    target: str
    n_items: int
    baseline_risk: float
    adversarial_fraction: float
    mean_queries: float
    curve_ratio: np.ndarray = field(repr=False)
    curve_risk: np.ndarray = field(repr=False)
    curve_ratio_high: np.ndarray = field(repr=False)
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

    def curves(self, task: str, curve: str) -> np.ndarray:
        """(targets, points) R values of ``curve`` ("ratio": against θ1/θ2 at r = 50 %; "ratio_high": the
        same at r = 75 %; "risk": against r)."""
        if curve not in ("ratio", "ratio_high", "risk"):
            raise ValueError(f"`curve` must be 'ratio', 'ratio_high' or 'risk'; got {curve!r}.")
        attribute = {"ratio": "curve_ratio", "ratio_high": "curve_ratio_high", "risk": "curve_risk"}[curve]
        return np.array([getattr(r, attribute) for r in self.task_rows(task)])

    def order(self, task: str, curve: str, point: int) -> str:
        """Most stable first at one point of a curve, ties (equal R, both ∞) joined by "=": "a > b = c"."""
        rows, values = self.task_rows(task), self.curves(task, curve)[:, point]
        ranked = np.argsort(-values, kind="stable")
        text = rows[ranked[0]].target
        for before, after in zip(ranked[:-1], ranked[1:]):
            tied = values[before] == values[after] or np.isclose(values[before], values[after], rtol=1e-6, atol=0)
            text += (" = " if tied else " > ") + rows[after].target
        return text

    def crossings(self, task: str, curve: str) -> list[tuple[str, str]]:
        """Pairs of targets whose curves cross: each is strictly more stable than the other somewhere."""
        rows, values = self.task_rows(task), self.curves(task, curve)
        pairs = []
        for i in range(len(rows)):
            for j in range(i + 1, len(rows)):
                above = _strictly_greater(values[i], values[j])
                below = _strictly_greater(values[j], values[i])
                if above.any() and below.any():
                    pairs.append((rows[i].target, rows[j].target))
        return pairs

    def table1_disagreements(self, task: str) -> list[tuple[str, str]]:
        """Pairs (a, b) where R at the headline setting calls a more stable but Table 1 broke a more often."""
        rows = self.task_rows(task)
        return [(a.target, b.target) for a in rows for b in rows
                if _strictly_greater(np.array([a.headline]), np.array([b.headline]))[0]
                and a.adversarial_fraction > b.adversarial_fraction]


def _strictly_greater(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # inf > finite counts; inf vs inf and numerically equal values do not.
    with np.errstate(invalid="ignore"):
        close = (a == b) | np.isclose(a, b, rtol=1e-6, atol=0)
    return (a > b) & ~close


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


def _rank_support(runs: list[StabilityRun], n_resamples: int, rng: np.random.Generator,
                  tick: Callable | None = None) -> np.ndarray:
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
        if tick is not None:
            tick()
    # No resample, no measurement: NaN, not a support of 0 % (a live run's B = 0 is allowed).
    return kept / n_resamples if n_resamples else np.full(len(runs), np.nan)


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
    progress : callable(stage, done, total), optional
        Called after each task (as the other reproducers' progress), and during the bootstrap with the stage
        ``"stability: bootstrap"`` and the resamples done of all tasks' (at most about a hundred times).
    runs : dict, optional
        ``{(task, target): StabilityRun}`` instead of the recorded searches (a live run).

    Returns
    -------
    StabilityStudy
    """
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 0:
        raise ValueError(f"`n_resamples` must be a non-negative integer; got {n_resamples!r}.")
    # Where the searches came from, for the record: a live run's export must not name the recorded file.
    source = "assets/recorded/audits/stability_search.json.gz" if runs is None else "live search on this machine"
    runs = recorded_runs(cost=cost) if runs is None else runs
    theta = paper_thetas(1.0, c=PAPER_C)
    rng = np.random.default_rng(seed)
    rows = []
    tasks = [t for t in TASKS if any(key[0] == t for key in runs)]
    resampled, every = [0], max(1, n_resamples * len(tasks) // 100)

    def tick():  # the bootstrap is most of a study's time at a large B: said as it goes (issue 45)
        resampled[0] += 1
        if resampled[0] % every == 0:
            progress("stability: bootstrap", resampled[0], n_resamples * len(tasks))

    for done, task in enumerate(tasks, start=1):
        task_runs = [run for key, run in runs.items() if key[0] == task]
        support = _rank_support(task_runs, n_resamples, rng, tick if progress is not None else None)
        for run, kept in zip(task_runs, support):
            rows.append(StabilityRow(
                task, target_label(run.target), run.n_items, run.baseline_risk, run.adversarial_fraction,
                run.mean_queries,
                ratio_curve(run.losses, run.costs, PAPER_R, RATIOS, c=PAPER_C),
                stability_curve(run.losses, run.costs, RISKS, theta1=theta[0], theta2=theta[1]),
                ratio_curve(run.losses, run.costs, HIGH_R, RATIOS, c=PAPER_C), _headline(run.losses, run.costs), float(kept), _sensitive(run)))
        if progress is not None:
            progress(f"stability: {task}", done, len(tasks))
    settings = {"cost": cost, "r": PAPER_R, "r_high": HIGH_R, "c": PAPER_C, "theta1=theta2": theta[0], "n_resamples": n_resamples,
                "seed": seed, "source": source}
    return StabilityStudy(tuple(rows), RATIOS, RISKS, settings)
