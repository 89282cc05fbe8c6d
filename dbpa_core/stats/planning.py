"""Sample-size planning from a pilot, by simulation of DBPA itself.

§3.2 of the paper (Rauba, Wei & van der Schaar, ICML 2025) plans k with a
z-test's rule, k ∝ ((z_{1−α/(2m)} + z_{1−β})/ω)² (:mod:`.power`).  DBPA's ω
does not grow like a z-statistic, so that k need not give the planned power
on DBPA's test.  :func:`plan_sample_size` plans on the test that will be run:
it simulates arms of size k that keep what a small pilot of each arm shows,
runs :func:`~dbpa_core.stats.permutation.dbpa_test` on them, and returns the
smallest k whose simulated power reaches the target.

How the arms are simulated, and why (bench/bench_planner.py measures it):

* A pilot overstates the difference between the arms: two pilots of 20 drawn
  from one population already differ.  Each simulated arm is therefore a
  mixture of both pilots (its own with weight λ, the other's with 1 − λ), λ
  set so that the mixtures' energy distance equals the unbiased estimate of
  the populations' (the pilots' plug-in distance counts each output against
  itself: Székely & Rizzo 2013).  A pilot that shows only noise gets λ = ½,
  exchangeable arms, and plans for no effect.
* Each picked output is jittered inside its pilot's own spread (a smoothed
  bootstrap), so that no two simulated outputs are identical: a duplicate has
  similarity 1, a mass that a real population does not have and that would
  read as a difference growing with k.

A Gaussian fitted to each arm and simulated as is (``method="gaussian"``, kept
as the naive baseline) takes the pilot's apparent difference at face value
and plans too few outputs.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from .._validation import check_choice, check_embeddings, check_positive_int, check_probability, check_rng

__all__ = ["METHODS", "SampleSizePlan", "compare_discrepancies", "plan_sample_size"]

#: How arms are simulated from the pilot: "mixture" (a shrunk mixture of both pilots; the default) or
#: "gaussian" (a Gaussian per arm at the pilot's own mean and covariance: the naive baseline).
METHODS = ("mixture", "gaussian")
#: Share of a simulated residual's variance drawn as Gaussian jitter in the residuals' span (breaks ties).
_JITTER = 0.2
#: The fewest pilot outputs per arm: fewer cannot estimate a spread, let alone a shift beside it.
MIN_PILOT = 5
#: What bench/bench_planner.py measured (pilots of 20 per arm, target 80 %, JSD on cosine, 10 pilots per row; see
#: bench/RESULTS.md): the sentence every plan's reading ends with.
CALIBRATION = ("A plan from a small pilot is itself an estimate: with pilots of 20 per arm, the true power at the "
               "planned k had a median of 82 % (10–90 %: 55–91 %) on a synthetic family and 99 % on the paper's "
               "answers, where half of the plans asked for more than 200 outputs, over 3× the k needed "
               "(bench/bench_planner.py).")
#: ω whose power :func:`compare_discrepancies` estimates by default (the JS distance is a monotone
#: function of the JSD: the same test, so it is not listed twice).
COMPARED = ("jsd", "energy", "mmd", "wasserstein")


@dataclass(frozen=True, eq=False)
class SampleSizePlan:
    """Result of :func:`plan_sample_size`.

    Attributes
    ----------
    k : int or None
        Samples per arm planned: the smallest k whose simulated power reaches
        ``target_power`` (interpolated between the grid's sizes); None when no
        k up to ``k_max`` reached it.
    sample_sizes : ndarray of int
        The k simulated.
    power : ndarray
        Share of simulated tests with p ≤ the level at each k.
    power_se : ndarray
        Its Monte Carlo standard error √(p(1 − p)/n).
    ci_low, ci_high : ndarray
        95 % Clopper–Pearson interval of each share.
    n_simulations : int
        Simulated tests per k.
    alpha : float
        The level each test is read at (α/m for a family of m with Bonferroni).
    target_power : float
    similarity, discrepancy, method : str
    shrinkage : float
        2λ − 1: the share of the pilots' difference kept in the simulated
        arms (1 = taken at face value, 0 = the pilots differ no more than
        noise).
    k_max : int
    """

    k: int | None
    sample_sizes: np.ndarray
    power: np.ndarray
    power_se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_simulations: int
    alpha: float
    target_power: float
    similarity: str
    discrepancy: str
    method: str
    shrinkage: float
    k_max: int

    @property
    def reading(self) -> str:
        """One plain sentence on the plan."""
        target = f"{self.target_power * 100:.0f} %"
        if self.k is None:
            best = int(np.argmax(self.power))
            return (f"No k up to {self.k_max} reached {target} power in simulations of this pilot: at k = "
                    f"{self.sample_sizes[best]} per arm {self.power[best] * 100:.0f} % of simulated tests "
                    f"found the change. The pilot shows little difference beyond its own noise for "
                    f"{self.discrepancy}; try another ω or a larger pilot.")
        return (f"Plan k = {self.k} outputs per arm: arms simulated from the pilot (keeping "
                f"{self.shrinkage * 100:.0f} % of the pilots' difference, the rest being their noise) were found "
                f"different by {self.discrepancy} at α = {self.alpha:g} in {target} of tests from that size on. "
                f"{CALIBRATION}")


def _plan_iv(pilot_x, pilot_y, power, alpha, m, similarity, discrepancy, n_resamples, n_simulations, k_min, k_max,
             method, rng):
    from .permutation import check_measures  # local: permutation imports nothing from here

    x = check_embeddings(pilot_x, "pilot_x", min_rows=MIN_PILOT)
    y = check_embeddings(pilot_y, "pilot_y", min_rows=MIN_PILOT)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"`pilot_x` and `pilot_y` must have the same embedding dimension; got {x.shape[1]} and "
                         f"{y.shape[1]}.")
    power = check_probability(power, "power")
    alpha = check_probability(alpha, "alpha")
    m = check_positive_int(m, "m")
    similarity, omega = check_measures(similarity, discrepancy)
    level = alpha / m
    if n_resamples is None:
        from .power import resamples_for

        n_resamples = resamples_for(level)
    n_resamples = check_positive_int(n_resamples, "n_resamples", minimum=19)
    if 1 / (n_resamples + 1) > level:
        raise ValueError(f"`n_resamples` = {n_resamples} cannot reach p ≤ {level:.3g} (its floor is "
                         f"1/(B+1) = {1 / (n_resamples + 1):.3g}); use n_resamples ≥ {math.ceil(1 / level) - 1}.")
    n_simulations = check_positive_int(n_simulations, "n_simulations", minimum=10)
    k_min = check_positive_int(k_min, "k_min", minimum=3)
    k_max = check_positive_int(k_max, "k_max", minimum=k_min)
    method = check_choice(method, "method", METHODS)
    return x, y, power, level, similarity, omega, n_resamples, n_simulations, k_min, k_max, method, check_rng(rng)


def _energy_ratio(x: np.ndarray, y: np.ndarray) -> float:
    """Unbiased over plug-in energy distance of the two pilots (0 when the pilots differ no more than noise).

    The energy distance is a squared MMD: its plug-in (V-) estimate is the
    true value plus a noise term that counts each output against itself; the
    U-estimate drops those terms and is unbiased (Székely & Rizzo 2013).
    """
    from scipy.spatial.distance import cdist

    nx, ny = len(x), len(y)
    across = cdist(x, y).mean()
    within_x, within_y = cdist(x, x).sum(), cdist(y, y).sum()
    plug_in = 2 * across - within_x / nx**2 - within_y / ny**2
    unbiased = 2 * across - within_x / (nx * (nx - 1)) - within_y / (ny * (ny - 1))
    return float(min(1.0, max(0.0, unbiased / plug_in))) if plug_in > 0 else 0.0


def _simulator(x: np.ndarray, y: np.ndarray, method: str, similarity: str):
    """(draw(k, rng) -> (x*, y*), shrinkage) for the chosen way of simulating arms from the pilot."""
    mx, my = x.mean(axis=0), y.mean(axis=0)
    rx, ry = x - mx, y - my
    if method == "gaussian":
        def draw_gaussian(k, rng):
            # N(mean, sample covariance) per arm, drawn in the residuals' span (rank n − 1).
            wx = rng.standard_normal((k, len(rx))) / math.sqrt(len(rx) - 1)
            wy = rng.standard_normal((k, len(ry))) / math.sqrt(len(ry) - 1)
            return mx + wx @ rx, my + wy @ ry
        return draw_gaussian, 1.0
    # Each simulated arm mixes both pilots: its own with weight λ, the other's with 1 − λ.  The two mixtures
    # differ by (2λ − 1)(F̂x − F̂y), so their energy distance is (2λ − 1)² times the pilots' plug-in one; λ is
    # set so that it equals the unbiased estimate of the populations' (λ = ½, the pooled bootstrap, when the
    # pilots differ no more than noise: then the simulated arms are exchangeable and power is α).
    geometry = (lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)) if similarity == "cosine" else (lambda a: a)
    shrinkage = math.sqrt(_energy_ratio(geometry(x), geometry(y)))
    own = (1 + shrinkage) / 2
    pilots = np.vstack([x, y])
    means = np.vstack([np.repeat(mx[None], len(x), 0), np.repeat(my[None], len(y), 0)])
    residuals = pilots - means
    keep = math.sqrt(1 - _JITTER)

    def arm(k, rng, first: bool):
        mine = rng.random(k) < own
        from_x = mine if first else ~mine
        picked = np.where(from_x, rng.integers(len(x), size=k), len(x) + rng.integers(len(y), size=k))
        # A smoothed bootstrap of each pilot: the picked output is shrunk towards its arm's mean and Gaussian
        # jitter with that arm's covariance added, so its spread is kept and no two simulated outputs are
        # identical (a duplicate's similarity 1 would be a difference between the arms that grows with k).
        noise_x = rng.standard_normal((k, len(rx))) @ rx * math.sqrt(_JITTER / (len(rx) - 1))
        noise_y = rng.standard_normal((k, len(ry))) @ ry * math.sqrt(_JITTER / (len(ry) - 1))
        return means[picked] + keep * residuals[picked] + np.where(from_x[:, None], noise_x, noise_y)

    def draw(k, rng):
        return arm(k, rng, True), arm(k, rng, False)

    return draw, shrinkage


def _grid(k_min: int, k_max: int) -> np.ndarray:
    """Sizes ≈ 1.4× apart from k_min to k_max (both included)."""
    steps = max(2, int(math.ceil(math.log(k_max / k_min) / math.log(1.4))) + 1)
    return np.unique(np.round(np.geomspace(k_min, k_max, steps)).astype(int))


def _isotonic(values: np.ndarray) -> np.ndarray:
    """Non-decreasing least-squares fit (pool adjacent violators): power does not fall as k grows."""
    blocks = [[float(v), 1] for v in values]
    merged: list[list[float]] = []
    for block in blocks:
        merged.append(block)
        while len(merged) > 1 and merged[-2][0] > merged[-1][0]:
            (v2, n2), (v1, n1) = merged.pop(), merged.pop()
            merged.append([(v1 * n1 + v2 * n2) / (n1 + n2), n1 + n2])
    return np.concatenate([[v] * int(n) for v, n in merged])


def plan_sample_size(pilot_x, pilot_y, *, power: float = 0.8, alpha: float = 0.05, m: int = 1,
                     similarity: str = "cosine", discrepancy="jsd", n_resamples: int | None = None,
                     n_simulations: int = 100, k_min: int = 5, k_max: int = 200, method: str = "mixture",
                     rng=None) -> SampleSizePlan:
    """Samples per arm that give DBPA ``power`` against the change a pilot shows, by simulation.

    Parameters
    ----------
    pilot_x, pilot_y : array_like of shape (n_x, dim), (n_y, dim)
        Embeddings of a pilot of the original and the perturbed arm (at
        least :data:`MIN_PILOT` each; 20 or more give a usable plan).
    power : float
        Target probability of declaring the change.
    alpha : float
        Level; with ``m`` > 1 each test is read at α/m (Bonferroni).
    m : int
        Perturbations in the family.
    similarity, discrepancy
        The test's settings, as in :func:`~dbpa_core.stats.permutation.dbpa_test`.
    n_resamples : int, optional
        Re-splits B of each simulated test (default: enough for α/m,
        :func:`~dbpa_core.stats.power.resamples_for`).
    n_simulations : int
        Simulated tests per k (the power's Monte Carlo error is ≈ 0.04 at 100).
    k_min, k_max : int
        The sizes searched (≈ 1.4× apart).
    method : {"mixture", "gaussian"}
        How arms are simulated (see the module's docstring); "gaussian" is the
        naive baseline, kept for comparison.
    rng : numpy.random.Generator, int or None

    Returns
    -------
    SampleSizePlan

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.standard_normal((20, 8)), rng.standard_normal((20, 8)) + [1.5] + [0] * 7
    >>> plan = plan_sample_size(x, y, n_simulations=40, rng=1)
    >>> plan.k is not None
    True
    """
    from .permutation import dbpa_test

    (x, y, target, level, similarity, omega, n_resamples, n_simulations, k_min, k_max, method,
     rng) = _plan_iv(pilot_x, pilot_y, power, alpha, m, similarity, discrepancy, n_resamples, n_simulations, k_min,
                     k_max, method, rng)
    draw, shrinkage = _simulator(x, y, method, similarity)
    sizes, hits = [], []
    for k in _grid(k_min, k_max):
        found = 0
        for _ in range(n_simulations):
            sx, sy = draw(int(k), rng)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found += dbpa_test(sx, sy, similarity=similarity, discrepancy=omega, n_resamples=n_resamples,
                                   rng=rng).pvalue <= level
        sizes.append(int(k))
        hits.append(found)
        # Two sizes in a row at the target: larger k only cost time (power does not fall with k).
        if len(hits) >= 2 and min(hits[-2:]) >= target * n_simulations:
            break
    sizes, hits = np.array(sizes), np.array(hits)
    share = hits / n_simulations
    fitted = _isotonic(share)
    k = None
    above = np.flatnonzero(fitted >= target)
    if above.size:
        i = int(above[0])
        if i == 0:
            k = int(sizes[0])
        else:
            # Interpolate linearly in log k between the last size below the target and the first above it.
            lo, hi = fitted[i - 1], fitted[i]
            t = (target - lo) / (hi - lo) if hi > lo else 1.0
            k = int(math.ceil(math.exp(math.log(sizes[i - 1]) + t * (math.log(sizes[i]) - math.log(sizes[i - 1])))))
    intervals = [binomtest(int(h), n_simulations).proportion_ci(0.95, method="exact") for h in hits]
    return SampleSizePlan(k=k, sample_sizes=sizes, power=share,
                          power_se=np.sqrt(share * (1 - share) / n_simulations),
                          ci_low=np.array([c.low for c in intervals]), ci_high=np.array([c.high for c in intervals]),
                          n_simulations=n_simulations, alpha=level, target_power=target, similarity=similarity,
                          discrepancy=omega.label if hasattr(omega, "label") else str(discrepancy), method=method,
                          shrinkage=shrinkage, k_max=k_max)


def compare_discrepancies(pilot_x, pilot_y, discrepancies: Sequence = COMPARED, *, rng=None, **options) -> dict:
    """Which ω would detect the change a pilot shows, and at what k: one plan per ω.

    Every ω is planned with the same simulated arms (the same seed), so the
    plans differ by the statistic only.

    Parameters
    ----------
    pilot_x, pilot_y : array_like
        As in :func:`plan_sample_size`.
    discrepancies : sequence of str
        The ω to compare (default :data:`COMPARED`).
    rng : int or None
        Seed shared by every plan (a Generator is reduced to one seed drawn from it).
    **options
        Passed to :func:`plan_sample_size` (power, alpha, m, similarity, …).

    Returns
    -------
    dict of str -> SampleSizePlan
        In the order given.
    """
    names = list(discrepancies)
    if not names:
        raise ValueError("`discrepancies` must name at least one ω.")
    seed = int(check_rng(rng).integers(2**32)) if not isinstance(rng, int | np.integer) else int(rng)
    return {str(name): plan_sample_size(pilot_x, pilot_y, discrepancy=name, rng=seed, **options) for name in names}
