"""How many prompts, and how many outputs per prompt: planning ``dbpa_test_many`` from a pilot, by simulation.

:func:`~dbpa_core.stats.planning.plan_sample_size` plans k for one prompt by simulating the test that will
be run.  :func:`plan_many_prompts` does the same for the test across prompts
(:func:`~dbpa_core.stats.many.dbpa_test_many`), over a grid of designs (m prompts × k outputs per prompt
and arm):

* **Prompts are a sample too.**  A simulated audit of m prompts draws m of the pilot's prompts with
  replacement (a bootstrap over prompts), so a plan carries how much the change varies from prompt to prompt,
  not only within one.
* **Each prompt's arms, up to the pilot's size, are its pilot's own outputs**: k of them per arm, drawn
  without replacement (a subsample of real outputs, nothing modelled).  Beyond the pilot's size they are
  simulated as the single-prompt planner simulates them (``planning._simulator``, reused rather than copied:
  a mixture of both pilots shrunk to the unbiased energy distance, jittered).  Why not that simulation
  throughout: with 5 outputs per prompt it kept too little of the change.  On the paper's GPT-3.5 vs GPT-4
  answers (9 prompts, pilot = the first 5 answers) it planned power 0.60 at 9 prompts × 5, where the 15 held-out
  answers delivered 1.00; a Gaussian per arm (the naive baseline) planned 0.99 there but also 1.00 for GPT-4
  against itself, where the truth is α.  Subsampling planned 0.19–0.94 where 0.21–1.00 was delivered
  (``tests/test_planning_many.py``), and 0.09 for GPT-4 against itself at 9 prompts × 2.
* **The statistic is the one that will be run**: ``dbpa_test_many`` with the chosen ω, B re-splits within
  each prompt; power is the share of simulated audits with p ≤ α.  Along k (per m) the estimates are made
  non-decreasing (pool adjacent violators, the single-prompt planner's ``_isotonic``); the search along k
  stops at the first k that reaches the target.

The recommended design is the one of fewest outputs in all (2·m·k) that reaches the target; a plan is an
estimate from a pilot (``tests/test_planning_many.py`` measures its delivered power on the paper's answers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import check_embeddings, check_positive_int, check_probability, check_rng

__all__ = ["ManyPromptsPlan", "plan_many_prompts", "read_many_plan"]

PROMPTS_GRID = (3, 5, 10, 20, 50)
K_GRID = (2, 3, 5, 8, 12, 20)


@dataclass(frozen=True, eq=False)
class ManyPromptsPlan:
    """Result of :func:`plan_many_prompts`.

    Attributes
    ----------
    power, alpha : float
        The target and the level.
    prompts_grid, k_grid : tuple of int
        The designs searched: m prompts (rows) × k outputs per prompt and arm (columns).
    estimated_power : ndarray of shape (len(prompts_grid), len(k_grid))
        Simulated power of each design (NaN: not simulated, a smaller k of that row already reached the target).
    k_needed : tuple of (int or None)
        Per m, the smallest k of the grid that reaches the target (None: none does).
    recommended : (int, int) or None
        (m, k) of the fewest outputs in all (2·m·k) reaching the target; None when no design does.
    shrinkage : tuple of float
        Per pilot prompt, how much of its apparent difference the simulation keeps (0: none, noise only).
    n_simulations, n_resamples : int
    similarity, discrepancy : str
    """

    power: float
    alpha: float
    prompts_grid: tuple[int, ...]
    k_grid: tuple[int, ...]
    estimated_power: np.ndarray = field(repr=False)
    k_needed: tuple[int | None, ...]
    recommended: tuple[int, int] | None
    shrinkage: tuple[float, ...]
    n_simulations: int
    n_resamples: int
    similarity: str
    discrepancy: str

    def power_at(self, m: int, k: int) -> float:
        """The simulated power of the design (m prompts, k outputs per prompt and arm)."""
        return float(self.estimated_power[self.prompts_grid.index(m), self.k_grid.index(k)])


def _grid(values, name: str, minimum: int) -> tuple[int, ...]:
    values = tuple(sorted({check_positive_int(v, f"{name}[{i}]", minimum=minimum) for i, v in enumerate(values)}))
    if not values:
        raise ValueError(f"`{name}` must list at least one size.")
    return values


def _plan_iv(pilot_x, pilot_y, power, alpha, prompts_grid, k_grid, n_simulations, n_resamples):
    from .planning import MIN_PILOT

    if len(pilot_x) != len(pilot_y) or not len(pilot_x):
        raise ValueError(f"`pilot_x` and `pilot_y` must hold the same number (≥ 1) of prompts' pilots; got "
                         f"{len(pilot_x)} and {len(pilot_y)}.")
    xs = [check_embeddings(x, f"pilot_x[{i}]", min_rows=MIN_PILOT) for i, x in enumerate(pilot_x)]
    ys = [check_embeddings(y, f"pilot_y[{i}]", min_rows=MIN_PILOT) for i, y in enumerate(pilot_y)]
    if len({a.shape[1] for a in xs + ys}) != 1:
        raise ValueError("`pilot_x` and `pilot_y` must share one embedding dimension; embed every pilot with one "
                         "embedder.")
    return (xs, ys, check_probability(power, "power"), check_probability(alpha, "alpha"),
            _grid(prompts_grid, "prompts_grid", 1), _grid(k_grid, "k_grid", 2),
            check_positive_int(n_simulations, "n_simulations", minimum=10),
            check_positive_int(n_resamples, "n_resamples", minimum=int(np.ceil(1 / alpha))))


def plan_many_prompts(pilot_x, pilot_y, *, power: float = 0.8, alpha: float = 0.05, similarity: str = "cosine",
                      discrepancy: str = "energy", prompts_grid=PROMPTS_GRID, k_grid=K_GRID,
                      n_simulations: int = 100, n_resamples: int = 200, rng=None) -> ManyPromptsPlan:
    """How many prompts, and how many outputs per prompt, give ``dbpa_test_many`` the target power.

    Parameters
    ----------
    pilot_x, pilot_y : sequence of array_like of shape (n_i, dim)
        Per pilot prompt, the embeddings of the original and the perturbed arm's outputs (at least
        ``planning.MIN_PILOT`` = 5 each).
    power : float
        Target probability of declaring the change across the prompts.
    alpha : float
        Level of the test across prompts.
    similarity, discrepancy
        The test's settings (:func:`~dbpa_core.dbpa_test_many`); default ω is ``compare``'s, the energy distance.
    prompts_grid, k_grid : sequence of int
        Numbers of prompts m and of outputs per prompt and arm k searched.
    n_simulations : int
        Simulated audits per design (the power's Monte Carlo error is ≈ 0.04 at 100 near 80 %).
    n_resamples : int
        Re-splits B of each simulated test (at least 1/α).
    rng : numpy.random.Generator, int or None
        Keyword-only; each design's simulations have their own stream, so a design's estimate does not depend
        on the grid around it.

    Returns
    -------
    ManyPromptsPlan
    """
    from .many import dbpa_test_many
    from .planning import _isotonic, _simulator

    xs, ys, power, alpha, prompts_grid, k_grid, n_simulations, n_resamples = _plan_iv(
        pilot_x, pilot_y, power, alpha, prompts_grid, k_grid, n_simulations, n_resamples)
    simulators = [_simulator(x, y, "mixture", similarity) for x, y in zip(xs, ys)]
    root = int(check_rng(rng).integers(2**63))
    table = np.full((len(prompts_grid), len(k_grid)), np.nan)
    needed: list[int | None] = []
    for row, m in enumerate(prompts_grid):
        found = None
        for column, k in enumerate(k_grid):
            stream = np.random.default_rng(np.random.SeedSequence([root, m, k]))
            rejections = 0
            for _ in range(n_simulations):
                chosen = stream.integers(len(simulators), size=m)  # prompts, drawn with replacement
                arms = [_draw(xs[i], ys[i], simulators[i][0], k, stream) for i in chosen]
                test = dbpa_test_many([a for a, _ in arms], [b for _, b in arms], similarity=similarity,
                                      discrepancy=discrepancy, n_resamples=n_resamples, rng=stream)
                rejections += test.pvalue <= alpha
            table[row, column] = rejections / n_simulations
            done = table[row, :column + 1]
            if _isotonic(done)[-1] >= power:
                table[row, :column + 1] = _isotonic(done)
                found = k
                break
        else:
            table[row] = _isotonic(table[row])
        needed.append(found)
    designs = [(m * k, m, k) for m, k in zip(prompts_grid, needed) if k is not None]
    recommended = min(designs)[1:] if designs else None
    return ManyPromptsPlan(power, alpha, prompts_grid, k_grid, table, tuple(needed), recommended,
                           tuple(float(s) for _, s in simulators), n_simulations, n_resamples, similarity,
                           str(discrepancy))


def _draw(x: np.ndarray, y: np.ndarray, simulate, k: int, rng: np.random.Generator):
    """k outputs per arm of one prompt: k of its pilot's own outputs (without replacement) while the pilot has
    them, else the single-prompt planner's simulation (see the module's docstring for why)."""
    if k <= min(len(x), len(y)):
        return x[rng.choice(len(x), k, replace=False)], y[rng.choice(len(y), k, replace=False)]
    return simulate(k, rng)


def read_many_plan(plan: ManyPromptsPlan) -> list[str]:
    """Plain sentences of a plan: the recommended design, the trade-off, and what a plan from a pilot is."""
    rows = [f"{m} prompts: k = {k}" if k is not None else f"{m} prompts: no k up to {plan.k_grid[-1]}"
            for m, k in zip(plan.prompts_grid, plan.k_needed)]
    if plan.recommended is None:
        first = (f"No design searched reaches {_pct(plan.power)} power at α = {plan.alpha:g}: the pilot's change is "
                 f"too small for up to {plan.prompts_grid[-1]} prompts × {plan.k_grid[-1]} outputs; add prompts.")
    else:
        m, k = plan.recommended
        first = (f"Plan: {m} prompts with {k} outputs per prompt and arm ({2 * m * k} outputs in all) should detect "
                 f"a change like the pilot's {_pct(plan.power_at(m, k))} of the time at α = {plan.alpha:g} "
                 f"(target {_pct(plan.power)}).")
    return [first,
            "Smallest k per number of prompts: " + "; ".join(rows) + ".",
            f"Each estimate is the share of {plan.n_simulations} simulated audits (prompts drawn from the pilot's, "
            "each prompt's outputs drawn from its pilot, or simulated beyond the pilot's size) in which the test "
            f"across prompts rejected: an estimate from a pilot, within about ±{_pct(_mc_error(plan))} by Monte Carlo "
            "alone; on the paper's answers it was conservative (delivered power 0.02–0.14 above plan)."]


def _pct(share: float) -> str:
    return f"{100 * share:.0f} %"


def _mc_error(plan: ManyPromptsPlan) -> float:
    return float(2 * np.sqrt(plan.power * (1 - plan.power) / plan.n_simulations))
