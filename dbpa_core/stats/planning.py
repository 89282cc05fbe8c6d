"""Sample-size planning from a pilot, by simulation of DBPA itself.

§3.2 of the paper (Rauba, Wei & van der Schaar, ICML 2025) plans k with a
z-test's rule, k ∝ ((z_{1−α/(2m)} + z_{1−β})/ω)² (:mod:`.power`).  DBPA's ω
does not grow like a z-statistic, so that k need not give the planned power
on DBPA's test.  :func:`plan_sample_size` plans on the test that will be run:
it simulates arms of size k that keep what a small pilot of each arm shows,
runs :func:`~dbpa_core.stats.permutation.dbpa_test` on them, and returns the
smallest k whose simulated power reaches the target.

How the arms are simulated, and why (bench/bench_planner.py measures it):

* DBPA is not symmetric in its arms: the original arm is the reference (P0
  is its within-arm similarities).  The simulated original arm is therefore
  drawn from the original pilot alone, and the simulated perturbed arm is a
  share w of draws from the perturbed pilot, the rest from the original one
  (a change in a share of the outputs).  Mixing both arms instead (the
  previous design) made the difference P0 − P1 second order in the kept
  share and planned over 3× the k needed on the paper's answers.
* A pilot overstates the difference between the arms: two pilots of 20 drawn
  from one population already differ.  The simulated arms' energy distance
  is w² times the pilots' plug-in one; w² is set so that it equals the
  populations' energy distance, estimated without the plug-in's self-pairs
  (the U-statistic, Székely & Rizzo 2013).  That estimate is noisy at small
  pilots and below zero in about one pilot of five (10 per arm, the paper's
  answers), where the clipped estimate planned for no effect at all; the
  planner uses instead its posterior mean under a flat prior on [0, ∞) with
  the jackknife's standard error (a truncated normal), which never falls to
  zero and moves a clear estimate by almost nothing.  A pilot that shows only
  noise gets a small w and plans a large k (or none up to ``k_max``).
* Each picked output is jittered inside its pilot's own spread (a smoothed
  bootstrap that keeps the covariance), so that no two simulated outputs are
  identical: a duplicate has similarity 1, a mass that a real population does
  not have and that would read as a difference growing with k.  The jitter's
  share of the variance, 0.4, is Silverman's bandwidth h²/(1 + h²) in the
  pilot's residual span (0.37–0.43 for pilots of 10–40).

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

#: How arms are simulated from the pilot: "mixture" (the perturbed arm a share w of its own pilot, the rest the
#: original's; the default) or
#: "gaussian" (a Gaussian per arm at the pilot's own mean and covariance: the naive baseline).
METHODS = ("mixture", "gaussian")
#: Share of a simulated residual's variance drawn as Gaussian jitter in the residuals' span (breaks ties):
#: Silverman's rule, h = (4/(d + 2))^(1/(d + 4)) n^(−1/(d + 4)) with d = n − 1, gives h²/(1 + h²) = 0.37–0.43
#: for pilots of 10–40.
_JITTER = 0.4
#: The fewest pilot outputs per arm: fewer cannot estimate a spread, let alone a shift beside it.
MIN_PILOT = 5
#: What bench/bench_planner.py measured (pilots of 20 per arm, target 80 %, JSD on cosine, 12 pilots per row; see
#: bench/RESULTS.md): the sentence every plan's reading ends with.
CALIBRATION = ("A plan from a small pilot is itself an estimate: with pilots of 20 per arm, the true power at the "
               "planned k had a median of 76 % (10–90 %: 49–89 %) on a synthetic family and 82 % (63–98 %) on "
               "the paper's answers, and 1 plan in 12 on the answers asked for over 3× the k needed "
               "(bench/bench_planner.py).")
#: Below this many pilot outputs per arm the planner under-plans on the synthetic family (bench/RESULTS.md).
RELIABLE_PILOT = 20
#: What the same bench measured with pilots of 10 per arm: said beside every plan from a pilot under RELIABLE_PILOT.
SMALL_PILOT = ("This pilot has fewer than 20 outputs per arm: with pilots of 10 the planned k delivered a median "
               "of 47 % power (10–90 %: 29–82 %) on the synthetic family, though 80 % on the paper's answers, so "
               "read this k as a lower bound or draw a larger pilot.")
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
    pilot_size : int
        The smaller pilot's number of outputs (plans from fewer than
        ``RELIABLE_PILOT`` say they may under-plan).
    shrinkage : float
        w: the share of the perturbed arm's simulated outputs drawn from its
        own pilot (the rest from the original's), so the simulated arms keep
        w² of the pilots' energy distance (1 = taken at face value, near 0 =
        the pilots differ no more than noise).
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
    pilot_size: int = RELIABLE_PILOT

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
        return (f"Plan k = {self.k} outputs per arm: arms simulated from the pilot ({self.shrinkage * 100:.0f} % of "
                f"the perturbed arm drawn from its own pilot, the rest from the original's, as the part of the "
                f"pilots' difference that is not their noise) were found "
                f"different by {self.discrepancy} at α = {self.alpha:g} in {target} of tests from that size on. "
                f"{CALIBRATION}" + (f" {SMALL_PILOT}" if self.pilot_size < RELIABLE_PILOT else ""))


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
    """The populations' energy distance over the pilots' plug-in one: w², the share of the difference kept.

    The energy distance is a squared MMD: its plug-in (V-) estimate is the
    true value plus a noise term that counts each output against itself; the
    U-estimate drops those terms and is unbiased (Székely & Rizzo 2013).  It
    is noisy, and below zero for many small pilots; the ratio uses its
    posterior mean under a flat prior on [0, ∞) given the estimate and its
    jackknife standard error σ, U + σ φ(U/σ)/Φ(U/σ): near U when U is many σ
    above zero, about 0.8 σ when U is at zero.
    """
    from scipy.spatial.distance import cdist
    from scipy.stats import norm

    nx, ny = len(x), len(y)
    dxy, dxx, dyy = cdist(x, y), cdist(x, x), cdist(y, y)
    sxy, sxx, syy = dxy.sum(), dxx.sum(), dyy.sum()
    plug_in = 2 * sxy / (nx * ny) - sxx / nx**2 - syy / ny**2
    if plug_in <= 0:
        return 0.0
    within_x, within_y = sxx / (nx * (nx - 1)), syy / (ny * (ny - 1))
    unbiased = 2 * sxy / (nx * ny) - within_x - within_y
    # Leave-one-out U-estimates (one output of either arm left out), from the distance matrices' row sums.
    out_x = 2 * (sxy - dxy.sum(1)) / ((nx - 1) * ny) - (sxx - 2 * dxx.sum(1)) / ((nx - 1) * (nx - 2)) - within_y
    out_y = 2 * (sxy - dxy.sum(0)) / (nx * (ny - 1)) - within_x - (syy - 2 * dyy.sum(1)) / ((ny - 1) * (ny - 2))
    se = math.sqrt((nx - 1) / nx * np.sum((out_x - out_x.mean()) ** 2)
                   + (ny - 1) / ny * np.sum((out_y - out_y.mean()) ** 2))
    if se > 0:
        z = unbiased / se
        # φ/Φ through logs: Φ(z) underflows for a very negative z.
        unbiased = unbiased + se * math.exp(norm.logpdf(z) - norm.logcdf(z))
    return float(min(1.0, max(0.0, unbiased / plug_in)))


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
    # The original arm is drawn from its pilot; the perturbed arm takes a share w of its draws from its own pilot
    # and the rest from the original's.  The two differ by w (F̂y − F̂x), so their energy distance is w² times the
    # pilots' plug-in one; w² is the estimated share of that distance that is not noise (w = 0: the same arm twice,
    # power α).
    geometry = (lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)) if similarity == "cosine" else (lambda a: a)
    shrinkage = math.sqrt(_energy_ratio(geometry(x), geometry(y)))
    keep = math.sqrt(1 - _JITTER)

    def smoothed(pilot, mean, residuals, k, rng):
        # A smoothed bootstrap of one pilot: the picked output is shrunk towards its arm's mean and Gaussian
        # jitter with that arm's covariance added, so its spread is kept and no two simulated outputs are
        # identical (a duplicate's similarity 1 would be a difference between the arms that grows with k).
        picked = pilot[rng.integers(len(pilot), size=k)]
        noise = rng.standard_normal((k, len(residuals))) @ residuals * math.sqrt(_JITTER / (len(residuals) - 1))
        return mean + keep * (picked - mean) + noise

    def draw(k, rng):
        original = smoothed(x, mx, rx, k, rng)
        changed = rng.random(k) < shrinkage
        perturbed = np.where(changed[:, None], smoothed(y, my, ry, k, rng), smoothed(x, mx, rx, k, rng))
        return original, perturbed

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
                          shrinkage=shrinkage, k_max=k_max, pilot_size=min(len(x), len(y)))


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
