r"""Sequential DBPA: sample in batches, stop as soon as the evidence allows.

Sampling is what an audit costs; the statistics take milliseconds.  A fixed-k
audit draws k outputs per arm whatever they show.  Peeking at the fixed-k
permutation p-value after every batch and stopping when p ≤ α is *not* a
valid shortcut: every look is another chance of a false alarm, and with ten
looks the false-alarm rate is several times α (``tests/test_sequential.py``
measures it).  This module implements a **group-sequential permutation
test** whose type-I error is at most α under its own stopping rule.

Method
------
After each batch (look i, n_i outputs per arm, information time
t_i = n_i / k_max) the DBPA statistic T_i = ω(P0, P1) of the paper (§3,
steps 2–3) is computed on all outputs drawn so far.

*The null.*  Under H₀ both arms come from one distribution, so the 2·b
outputs of a batch are exchangeable *within that batch*.  Permuting the arm
labels within each batch keeps the batches in their order, hence keeps the
joint law of the whole path (T_1, …, T_i) under H₀ (the design used by
group-sequential permutation tests, e.g. Mehta, Bhingare, Liu & Senchaudhuri
1995; Lehmacher & Wassmer 1999).  Each of the B resamples fixes one random
within-batch split per batch as the batch arrives, so resample b has a path
T_{b,1}, T_{b,2}, …, computed on the same re-split data as the observed one,
and the paths of earlier looks are never recomputed.

*The boundary.*  An α-spending function α(t) (Lan & DeMets 1983) allots the
error over the looks: ``"pocock"`` α·ln(1 + (e − 1)t) spends early and stops
early on clear changes; ``"obrien_fleming"`` 2 − 2Φ(z_{1−α/2}/√t) spends
little early and keeps almost all the power of the final look.  At look i the
B + 1 paths (the observed one and the resamples, Hemerik & Goeman 2018) that
have not crossed yet are ranked by T_i; a path crosses when

.. math::  C_{i-1} + \#\{\text{uncrossed paths with } T_{\cdot,i} \ge T_i\} \le \lfloor \alpha(t_i)(B+1) \rfloor,

with C_{i−1} the number of paths that crossed before look i.  At most
⌊α(B+1)⌋ of the B + 1 exchangeable paths ever cross, so the observed one
crosses with probability ≤ α: the level holds exactly, for any data
distribution, any ω and any spending function, by the same argument as the
fixed-k test's (1 + #)/(1 + B).  ``boundary`` is the value T_i must exceed.

*The p-value* at a stop is the stage-wise ordering p-value (Jennison &
Turnbull 2000, §8.4): the share of paths that crossed at an earlier look or
reach this look with T ≥ T_obs: the observed path's rank among the B + 1
exchangeable paths in that ordering, so P(p ≤ u) ≤ u under H₀ at every level
u, not only at α.  It is ≤ α exactly when the test rejects.

*Futility* (optional, non-binding): ``futility=f`` also stops when the look's
own permutation p-value exceeds f (the observed discrepancy is unremarkable
among its re-splits).  Stopping to accept never adds a false alarm, so the
level is unchanged; but the stage-wise p-value would need the paths of looks
never reached, so a futility stop reports p = 1 ("no evidence"), never a
number smaller than the data support.

Why not a test by betting (Shekhar & Ramdas 2023; Richter et al., ICLR 2025)?
An e-process is valid under continuous monitoring, but it pays for that with
power at the small k an LLM audit can afford, and it would not reuse the
paper's ω and permutation calibration.  A group-sequential test looks only
after each batch — exactly how samples arrive from a sampler — and keeps the
DBPA statistic and its exact permutation calibration.

Many perturbations: run each sequential test at α/m (Bonferroni).  The union
bound needs nothing but each test's own level, so it holds for tests that stop
at different times; adjusted p = min(1, m·p) ≤ α exactly when the test at α/m
rejects.  Since the stage-wise p-values are valid at every level, Holm or BH
on them are valid as well.

References
----------
Lan & DeMets, "Discrete sequential boundaries for clinical trials",
Biometrika 70 (1983).  Jennison & Turnbull, *Group Sequential Methods with
Applications to Clinical Trials*, Chapman & Hall (2000).  Hemerik & Goeman,
"Exact testing with random permutations", TEST 27 (2018).  Mehta, Bhingare,
Liu & Senchaudhuri, "Optimal adaptive ... exact permutational group
sequential tests", Statistics in Medicine 14 (1995).  Rauba, Wei & van der
Schaar, ICML 2025, §3 and Algorithm 1.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .. import _validation as v
from . import _kernels
from .discrepancy import Discrepancy
from .engine import effect_sizes, pooled_comparison, tie_tolerance
from .permutation import DEGENERATE, DegenerateSampleWarning, ResolutionWarning, check_measures
from .similarity import TEXT_SIMILARITIES
from .spending import SPENDING, alpha_spent, budget_warning

STOPS = ("reject", "futility", "k_max")


@dataclass(frozen=True)
class SequentialLook:
    """One look of a sequential test (after one batch).

    Attributes
    ----------
    n_per_arm : int
        Outputs per arm drawn by this look.
    statistic : float
        ω on all outputs drawn so far.
    boundary : float
        The test rejects at this look when ``statistic`` exceeds it; ``inf``
        when no α is left to spend at this look (B too small for the
        spending function so early).
    pvalue : float
        Stage-wise p-value if the test stopped here (≤ ``alpha_spent`` exactly
        when it rejects here).
    alpha_spent : float
        Cumulative α available by this look: ⌊α(t)(B + 1)⌋ / (B + 1).
    """

    n_per_arm: int
    statistic: float
    boundary: float
    pvalue: float
    alpha_spent: float


@dataclass(frozen=True, eq=False)
class SequentialResult:
    """Result of :func:`sequential_dbpa_test`.

    Attributes
    ----------
    reject : bool
        Whether H₀ (the perturbation changed nothing) was rejected at ``alpha``.
    pvalue : float
        Stage-wise ordering p-value at the stop (valid under the stopping
        rule; 1 after a futility stop, see the module notes).
    statistic : float
        ω at the stopping look.
    n_per_arm : int
        Outputs drawn per arm when the test stopped.
    stopped : {"reject", "futility", "k_max"}
        Why it stopped.
    looks : tuple of SequentialLook
        One entry per look, in order.
    null_distribution : ndarray of shape (B,)
        The resamples' ω at the stopping look.
    null_paths : ndarray of shape (B, n_looks)
        Every resample's ω at every look (its within-batch re-split path).
    effect_size, standardized_effect : float
        As in :class:`~dbpa_core.stats.permutation.DBPAResult`, at the stopping look.
    within_similarities, across_similarities : ndarray
        P0 and P1 at the stopping look.
    x, y : ndarray or tuple of str
        Every output drawn, per arm.
    alpha, k_max, batch_size, n_resamples, spending, futility, similarity, discrepancy
        Settings used.
    warnings : tuple of str
    kind : {"sequential"}
        The design (a fixed-k :class:`~dbpa_core.stats.permutation.DBPAResult` says ``"fixed"``);
        pages and exports branch on it.
    """

    kind: ClassVar[str] = "sequential"

    reject: bool
    pvalue: float
    statistic: float
    n_per_arm: int
    stopped: str
    looks: tuple[SequentialLook, ...]
    null_distribution: np.ndarray = field(repr=False)
    null_paths: np.ndarray = field(repr=False)
    effect_size: float
    standardized_effect: float
    within_similarities: np.ndarray = field(repr=False)
    across_similarities: np.ndarray = field(repr=False)
    x: object = field(repr=False)
    y: object = field(repr=False)
    alpha: float
    k_max: int
    batch_size: int
    n_resamples: int
    spending: str
    futility: float | None
    similarity: str
    discrepancy: str
    warnings: tuple[str, ...] = ()

    # The fixed-k result's names, so that tables, exports and figures take either.
    alternative: ClassVar[str] = "greater"
    exact: ClassVar[bool] = False

    @property
    def n_original(self) -> int:
        return self.n_per_arm

    @property
    def n_perturbed(self) -> int:
        return self.n_per_arm


def sequential_dbpa_test(
    draw_x: Callable[[int], object],
    draw_y: Callable[[int], object],
    *,
    alpha: float = 0.05,
    k_max: int = 200,
    batch_size: int = 10,
    discrepancy: str | Discrepancy = "jsd",
    similarity: str = "cosine",
    n_resamples: int = 1000,
    spending: str = "pocock",
    futility: float | None = None,
    rng=None,
) -> SequentialResult:
    """Group-sequential DBPA test: draw batches until a change is clear or k_max is reached.

    Parameters
    ----------
    draw_x, draw_y : callable(n) -> array_like of shape (n, dim), or list of n str
        Return ``n`` *new* outputs of the original and of the perturbed arm
        (embeddings; texts for ``similarity="bleu"`` or ``"rouge_l"``).  Each
        is called once per look, ``draw_x`` first.
    alpha : float
        Level in (0, 1): the probability of a false alarm under H₀ with this
        stopping rule.
    k_max : int
        The most outputs per arm the test will draw.
    batch_size : int
        Outputs per arm between looks (≥ 2; the last batch may be smaller).
    discrepancy, similarity
        ω and s as in :func:`dbpa_core.dbpa_test`.
    n_resamples : int
        B, within-batch re-split paths.  The first look can reject only once
        α(t_1)·(B + 1) ≥ 1, so small B delays the earliest possible stop.
    spending : {"pocock", "obrien_fleming"}
        Lan–DeMets α-spending function (see the module notes).
    futility : float in (0, 1), optional
        Also stop, without rejecting, when a look's own permutation p-value
        exceeds it (non-binding: the level is unchanged).  Default: never.
    rng : numpy.random.Generator, int or None
        Source of the re-splits, keyword-only.

    Returns
    -------
    SequentialResult

    Examples
    --------
    >>> import numpy as np, dbpa_core as d
    >>> data, centre = np.random.default_rng(0), 2 * np.eye(8)   # the arms' means differ in direction
    >>> r = d.sequential_dbpa_test(lambda n: data.normal(size=(n, 8)) + centre[0],
    ...                            lambda n: data.normal(size=(n, 8)) + centre[1], k_max=100, rng=1)
    >>> r.reject, r.n_per_arm < 100
    (True, True)
    """
    alpha, k_max, batch_size, omega, similarity, n_resamples, spending, futility, rng = _sequential_iv(
        draw_x, draw_y, alpha, k_max, batch_size, discrepancy, similarity, n_resamples, spending, futility, rng)
    texts = similarity in TEXT_SIMILARITIES
    x_parts, y_parts, splits = [], [], []
    looks: list[SequentialLook] = []
    paths: list[np.ndarray] = []
    alive = np.ones(n_resamples, dtype=bool)  # resample paths that have not crossed a boundary
    crossed = 0
    issued: list[str] = []
    unreachable = budget_warning(alpha, k_max=k_max, batch_size=batch_size, n_resamples=n_resamples,
                                 spending=spending)
    if unreachable:  # said before the first draw: every sample drawn would be wasted
        issued.append(unreachable)
        warnings.warn(unreachable, ResolutionWarning, stacklevel=2)
    n = 0
    while True:
        size = min(batch_size, k_max - n)
        x_parts.append(_checked_draw(draw_x, "draw_x", size, texts, x_parts))
        y_parts.append(_checked_draw(draw_y, "draw_y", size, texts, x_parts))
        # This batch's re-split, fixed for every later look: arm 0 takes the
        # first `size` of a random ordering of the batch's 2·size outputs.
        splits.append(_kernels.shuffled_prefixes(rng.random((n_resamples, size)), 2 * size))
        n += size

        x, y = _pooled(x_parts, texts), _pooled(y_parts, texts)
        # The fixed-k test's engine on everything drawn so far: one similarity matrix per look.
        engine = pooled_comparison(x, y, similarity=similarity, discrepancy=omega)
        observed = engine.observed
        null = engine.statistics(_within_batch_perms(splits, n))
        paths.append(null)
        if engine.degenerate and not any(DEGENERATE in message for message in issued):
            issued.append(f"{DEGENERATE}, so no look can reject. Raise the temperature or check the sampler.")
            warnings.warn(issued[-1], DegenerateSampleWarning, stacklevel=2)

        allowed = math.floor(float(alpha_spent(n / k_max, alpha, spending)) * (n_resamples + 1) + 1e-9)
        gamma = tie_tolerance(observed)
        live = np.sort(null[alive])
        # Paths (observed included) at least as large as the observed one, among those still in the race.
        rank = live.size - np.searchsorted(live, observed - gamma, side="left") + 1
        pvalue = (crossed + rank) / (n_resamples + 1)
        budget = allowed - crossed
        boundary = math.inf if budget <= 0 else (-math.inf if budget > live.size else float(live[::-1][budget - 1]))
        looks.append(SequentialLook(n, observed, boundary, float(pvalue), allowed / (n_resamples + 1)))

        if crossed + rank <= allowed:
            stopped = "reject"
        elif n >= k_max:
            stopped = "k_max"
        elif futility is not None and _look_pvalue(observed, null, gamma) > futility:
            stopped, pvalue = "futility", 1.0
        else:
            # Resample paths that cross here leave the race (the same rule, applied to each of them).
            tolerance = tie_tolerance(null)
            counts = live.size - np.searchsorted(live, null - tolerance, side="left") + (observed >= null - tolerance)
            crossing = alive & (crossed + counts <= allowed)
            crossed += int(crossing.sum())
            alive &= ~crossing
            continue
        break

    effect, standardized = effect_sizes(observed, null)
    return SequentialResult(
        reject=stopped == "reject", pvalue=float(pvalue), statistic=observed, n_per_arm=n, stopped=stopped,
        looks=tuple(looks), null_distribution=null, null_paths=np.column_stack(paths), effect_size=effect,
        standardized_effect=standardized, within_similarities=engine.within_similarities,
        across_similarities=engine.across_similarities,
        x=x, y=y, alpha=alpha, k_max=k_max, batch_size=batch_size, n_resamples=n_resamples, spending=spending,
        futility=futility, similarity=similarity, discrepancy=repr(omega), warnings=tuple(issued))


def _sequential_iv(draw_x, draw_y, alpha, k_max, batch_size, discrepancy, similarity, n_resamples, spending,
                   futility, rng):
    for name, draw in (("draw_x", draw_x), ("draw_y", draw_y)):
        if not callable(draw):
            raise ValueError(f"`{name}` must be a callable draw(n) returning n new outputs of its arm; "
                             f"got {type(draw).__name__}.")
    alpha = v.check_probability(alpha, "alpha")
    batch_size = v.check_positive_int(batch_size, "batch_size", minimum=2)
    k_max = v.check_positive_int(k_max, "k_max", minimum=2)
    if k_max < batch_size:
        raise ValueError(f"`k_max` ({k_max}) must be at least `batch_size` ({batch_size}): the test looks "
                         "after each batch.")
    similarity, omega = check_measures(similarity, discrepancy)
    n_resamples = v.check_n_resamples(n_resamples)
    v.check_test_size(k_max, k_max, n_resamples, names=("k_max", "k_max"), batch_size=batch_size)
    spending = v.check_choice(spending, "spending", SPENDING)
    if futility is not None:
        futility = v.check_probability(futility, "futility")
    return alpha, k_max, batch_size, omega, similarity, n_resamples, spending, futility, v.check_rng(rng)


def _checked_draw(draw, name: str, n: int, texts: bool, earlier_x: list):
    """Call ``draw(n)`` and check it returned n outputs like the ones before."""
    value = draw(n)
    where = f"`{name}({n})`"
    if texts:
        batch = v.check_texts(value, name, min_rows=1)
        if len(batch) != n:
            raise ValueError(f"{where} must return exactly {n} new output texts; got {len(batch)}.")
        return batch
    batch = v.check_embeddings(value, name, min_rows=1)
    if batch.shape[0] != n:
        raise ValueError(f"{where} must return exactly {n} new embeddings (rows); got {batch.shape[0]}.")
    if earlier_x and batch.shape[1] != earlier_x[0].shape[1]:
        raise ValueError(f"{where} returned embeddings of dimension {batch.shape[1]}, earlier batches had "
                         f"{earlier_x[0].shape[1]}; embed both arms with the same embedder.")
    return batch


def _pooled(parts: list, texts: bool):
    return tuple(t for part in parts for t in part) if texts else np.vstack(parts)


def _within_batch_perms(splits: list, n: int) -> np.ndarray:
    """Pooled re-splits (rows: arm 0 first) that exchange outputs only within their batch.

    Pooled layout: original outputs 0..n−1, perturbed n..2n−1, both in batch
    order.  ``splits[j]`` holds batch j's local orderings of its 2·s outputs
    (local u < s: the original's u-th, else the perturbed's (u − s)-th).
    """
    arm0, arm1 = [], []
    offset = 0
    for local in splits:
        s = local.shape[1] // 2
        pooled = np.where(local < s, offset + local, n + offset + local - s).astype(np.uint32)
        arm0.append(pooled[:, :s])
        arm1.append(pooled[:, s:])
        offset += s
    return np.ascontiguousarray(np.hstack(arm0 + arm1))


def _look_pvalue(observed: float, null: np.ndarray, gamma: float) -> float:
    """This look's own (fixed-n) permutation p-value, used only for the futility rule."""
    return (1 + int(np.count_nonzero(null >= observed - gamma))) / (null.size + 1)
