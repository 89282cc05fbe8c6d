r"""One perturbation across many prompts: DBPA's permutation test stratified by prompt.

An auditor's question is rarely "did the answers to *this* prompt change?" but
"did the new system prompt (model, persona) change the answers across my
prompts?".  One DBPA test per prompt and a multiplicity correction answers it
with little power: with a few outputs per prompt no single prompt reaches
α/m even when every prompt moved a little.  :func:`dbpa_test_many` combines
the prompts' ω in one statistic and re-splits each prompt's pooled outputs
**within that prompt** (a stratified permutation test), then still says
*where* it moved with per-prompt p-values under the false discovery rate.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._validation import (MAX_PERMUTATION_WORK, PERMUTATION_WORK_WHY, InvalidValue, check_embeddings,
                           check_n_resamples, check_positive_int, check_probability, check_rng, check_test_size,
                           check_texts)
from .corrections import adjust_pvalues
from .discrepancy import Discrepancy
from .engine import effect_sizes, enumerated_splits, pooled_comparison, random_splits, tie_tolerance
from .permutation import DEGENERATE, DegenerateSampleWarning, check_measures
from .similarity import TEXT_SIMILARITIES

__all__ = ["MAX_PROMPTS", "ManyPromptsResult", "PromptResult", "dbpa_test_many"]

#: Most prompts in one test (memory: one similarity matrix per prompt; beyond it, split the suite).
MAX_PROMPTS = 100_000
# A prompt whose distinct splits are at most this many (and at most B) has ω evaluated once on every split;
# a resample then picks one of them.  Same law as drawing a split, far fewer kernel calls (k = 5: 252 splits).
_TABLE_SPLITS = 1 << 16


@dataclass(frozen=True)
class PromptResult:
    """One prompt's part of :func:`dbpa_test_many`.

    Attributes
    ----------
    statistic : float
        This prompt's ω(P0, P1).
    pvalue : float
        This prompt's own permutation p-value (exact when its splits number at most B, as in
        :func:`~dbpa_core.dbpa_test`; else (1 + #{ω_b ≥ ω_obs}) / (1 + B) on the same re-splits).
    qvalue : float
        Benjamini–Hochberg adjusted p-value over the prompts: the prompts with q ≤ ``fdr`` are the
        ones declared changed, with at most a share ``fdr`` of false discoveries expected among them.
    effect_size : float
        ω minus the mean of this prompt's null: the discrepancy beyond what chance gives at these k.
    weight : float
        This prompt's share of the combined statistic (its across-arm pairs k₀·k₁ over all prompts').
    n_original, n_perturbed : int
        k per arm for this prompt.
    exact : bool
        True when every split of this prompt was enumerated for its p-value.
    degenerate : bool
        Every split gives the same ω (e.g. identical outputs): the prompt carries nothing to test.
    """

    statistic: float
    pvalue: float
    qvalue: float
    effect_size: float
    weight: float
    n_original: int
    n_perturbed: int
    exact: bool
    degenerate: bool


@dataclass(frozen=True, eq=False)
class ManyPromptsResult:
    """Result of :func:`dbpa_test_many`.

    Attributes
    ----------
    statistic : float
        T_obs = Σᵢ wᵢ ωᵢ, the prompts' ω averaged with weights wᵢ ∝ k₀ᵢ·k₁ᵢ (their across-arm pairs).
    pvalue : float
        Stratified permutation p-value: #{T_b ≥ T_obs} / N over all N joint splits when they were
        enumerated (``exact``), else (1 + #{T_b ≥ T_obs}) / (1 + B).
    null_distribution : ndarray
        T on each resample (every joint split when ``exact``).
    effect_size, standardized_effect : float
        T_obs minus the null mean, and the same in null standard deviations.
    per_prompt : tuple of PromptResult
        One per prompt, in input order.
    n_resamples : int
        Resamples used (the number of joint splits when ``exact``).
    exact : bool
    fdr : float
        The false discovery rate the per-prompt ``changed`` flags are read at.
    similarity, discrepancy : str
        Settings used (``discrepancy`` is ω's repr, with its options).
    warnings : tuple of str
    """

    statistic: float
    pvalue: float
    null_distribution: np.ndarray = field(repr=False)
    effect_size: float
    standardized_effect: float
    per_prompt: tuple[PromptResult, ...] = field(repr=False)
    n_resamples: int
    exact: bool
    fdr: float
    similarity: str
    discrepancy: str
    warnings: tuple[str, ...] = ()

    @property
    def n_prompts(self) -> int:
        return len(self.per_prompt)

    @property
    def changed(self) -> np.ndarray:
        """Per prompt: q ≤ ``fdr`` (the prompts declared changed)."""
        return np.array([p.qvalue <= self.fdr for p in self.per_prompt], dtype=bool)


def dbpa_test_many(x_groups, y_groups, *, similarity: str = "cosine", discrepancy: str | Discrepancy = "jsd",
                   n_resamples: int = 1000, rng=None, fdr: float = 0.1, batch: int | None = None
                   ) -> ManyPromptsResult:
    r"""Test whether one perturbation changed the outputs across many prompts.

    Each prompt i has the original arm's outputs ``x_groups[i]`` and the
    perturbed arm's ``y_groups[i]``.  Its ω is DBPA's discrepancy between P0
    (similarities within the original arm) and P1 (across the arms) of that
    prompt alone (Rauba, Wei & van der Schaar, ICML 2025, §3); the prompts
    are combined as

    .. math::  T = \sum_i w_i\, \omega_i, \qquad w_i = \frac{k_{0i} k_{1i}}{\sum_j k_{0j} k_{1j}},

    a mean over prompts weighted by the across-arm pairs each contributes
    (a plain mean when every prompt has the same k).  The null distribution
    re-splits every prompt's pooled outputs **within that prompt**, each
    resample drawing an independent split inside every prompt.

    Parameters
    ----------
    x_groups, y_groups : sequence of array_like
        One (kᵢ, dim) array of embeddings per prompt and arm (sequences of str for the text
        similarities); k may differ between prompts and arms, each at least 2.
    similarity, discrepancy
        As in :func:`~dbpa_core.dbpa_test`; every ω of
        :data:`~dbpa_core.stats.discrepancy.DISCREPANCIES` (and ``"js_distance"``) works.
    n_resamples : int
        B.  When the joint splits (the product of the prompts' C(k₀ᵢ + k₁ᵢ, k₀ᵢ)) number at most B,
        all are enumerated and the p-value is exact.
    rng : numpy.random.Generator, int or None
        Keyword-only; for a fixed seed the result does not depend on ``batch`` or the thread count.
    fdr : float
        False discovery rate at which prompts are flagged changed (Benjamini–Hochberg q ≤ ``fdr``).
    batch : int, optional
        Resamples per compiled call; bounds memory only.

    Returns
    -------
    ManyPromptsResult

    Notes
    -----
    **Why re-split within prompts.**  Outputs of different prompts differ far more than the outputs of
    one prompt under two arms (a CVD guideline is not a poem).  Under the null hypothesis — in every
    prompt the two arms' outputs are exchangeable — only a relabelling *inside* a prompt leaves the data's
    law unchanged; that is the permutation group of this test, so its level is exact for any design.
    Ignoring the prompts (pooling each arm's outputs over all prompts and permuting freely) is valid
    only when every prompt contributes the same share of each arm: in an unbalanced design (prompt A
    answered mostly by arm 0, prompt B by arm 1) the prompt mix itself reads as a change and the test
    rejects under the null (``tests/test_many.py`` shows it); in a balanced one P0 and P1 then mostly
    hold pairs of different prompts, whose spread swamps the within-prompt shifts, and shifts that go
    different ways in different prompts cancel in the pooled arms.

    **The p-values.**  The +1 rule counts the observed split among the B resamples (Phipson & Smyth
    2010), so p is never 0 and the level is exact; with every joint split enumerated no +1 is needed.
    Per-prompt p-values use the same re-splits (exact for a prompt whose own splits number at most B)
    and are adjusted by Benjamini–Hochberg; they say *where* a change lies, the combined p whether there
    is one.  Null values within a relative 100·machine-ε of the observed one count as ties.

    Each prompt's similarity matrix is computed once; resamples re-index it.  A prompt with at most B
    distinct splits has ω evaluated once on each, and a resample picks one uniformly (the same law as
    drawing a split).  Randomness is consumed prompt by prompt, each prompt's resamples in order, so
    batches of 50 give exactly the result of one batch of 100.

    References
    ----------
    .. [1] Rauba, Wei & van der Schaar, "Quantifying perturbation impacts for large language models",
       ICML 2025, §3 and Algorithm 1.
    .. [2] Phipson & Smyth, "Permutation p-values should never be zero", Stat. Appl. Genet. Mol. Biol. 9 (2010).
    .. [3] Benjamini & Hochberg, "Controlling the false discovery rate", JRSS B 57 (1995).

    Examples
    --------
    >>> import numpy as np, dbpa_core as d
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.normal(size=(30, 8)) * 3          # strong prompt effects
    >>> x = [c + rng.normal(size=(5, 8)) for c in centres]
    >>> y = [c + 0.8 + rng.normal(size=(5, 8)) for c in centres]  # every prompt moves a little
    >>> r = d.dbpa_test_many(x, y, discrepancy="energy", rng=1)
    >>> bool(r.pvalue < 0.01)
    True
    """
    x_groups, y_groups, similarity, omega, n_resamples, rng, fdr, batch = _dbpa_test_many_iv(
        x_groups, y_groups, similarity, discrepancy, n_resamples, rng, fdr, batch)
    engines = [pooled_comparison(x, y, similarity=similarity, discrepancy=omega) for x, y in zip(x_groups, y_groups)]
    pairs = np.array([e.n_original * (e.n - e.n_original) for e in engines], dtype=np.float64)
    weights = pairs / pairs.sum()
    splits = [math.comb(e.n, e.n_original) for e in engines]
    observed = np.array([e.observed for e in engines])
    joint = 1
    for c in splits:
        joint *= c
        if joint > n_resamples:
            break
    exact = joint <= n_resamples
    # The tables of ω over every split: all prompts' when enumerating, else those with few enough splits.
    tables = [_split_table(e, batch) if exact or c <= min(n_resamples, _TABLE_SPLITS) else None
              for e, c in zip(engines, splits)]

    statistic = _combine(observed, weights)
    if exact:
        null = np.zeros(1)
        for w, table in zip(weights, tables):
            null = (null[:, None] + w * table[None, :]).ravel()
        prompt_nulls = tables
    else:
        null = np.zeros(n_resamples)
        prompt_nulls = []
        for engine, w, table in zip(engines, weights, tables):
            values = _resample_prompt(engine, table, n_resamples, batch or engine.batch, rng)
            null = null + w * values
            prompt_nulls.append(values)

    issued = []
    degenerate = [bool(e.degenerate) for e in engines]
    if any(degenerate):
        which = [i for i, flag in enumerate(degenerate) if flag]
        message = (f"{DEGENERATE} in {len(which)} of {len(engines)} prompts (indices {_listed(which)}): each "
                   "gets p = 1 and adds a constant to the combined statistic.")
        warnings.warn(message, DegenerateSampleWarning, stacklevel=2)
        issued.append(message)

    pvalue = _pvalue(statistic, null, exact) if not all(degenerate) else 1.0
    prompt_pvalues, prompt_exact, prompt_effects = [], [], []
    for obs, table, values, flag in zip(observed, tables, prompt_nulls, degenerate, strict=True):
        own_exact = table is not None
        prompt_pvalues.append(1.0 if flag else _pvalue(obs, table if own_exact else values, own_exact))
        prompt_exact.append(own_exact)
        prompt_effects.append(effect_sizes(obs, table if own_exact else values)[0])
    qvalues = adjust_pvalues(prompt_pvalues, "fdr_bh", alpha=fdr).pvalues_adjusted
    per_prompt = tuple(
        PromptResult(statistic=float(obs), pvalue=float(p), qvalue=float(q), effect_size=float(eff), weight=float(w),
                     n_original=e.n_original, n_perturbed=e.n - e.n_original, exact=ex, degenerate=flag)
        for e, obs, p, q, eff, w, ex, flag in zip(engines, observed, prompt_pvalues, qvalues, prompt_effects, weights,
                                                 prompt_exact, degenerate))
    effect, standardized = effect_sizes(statistic, null)
    return ManyPromptsResult(statistic=statistic, pvalue=float(pvalue), null_distribution=null, effect_size=effect,
                             standardized_effect=standardized, per_prompt=per_prompt, n_resamples=int(null.size),
                             exact=exact, fdr=fdr, similarity=similarity, discrepancy=repr(omega),
                             warnings=tuple(issued))


def _combine(values: np.ndarray, weights: np.ndarray) -> float:
    """Σ wᵢ ωᵢ accumulated prompt by prompt, in the order the null is (so the observed split ties exactly)."""
    total = 0.0
    for w, v in zip(weights, values):
        total = total + w * v
    return float(total)


def _split_table(engine, batch) -> np.ndarray:
    """ω on every split of one prompt, in :func:`enumerated_splits` order (the observed split first)."""
    return np.concatenate([engine.statistics(s) for s in enumerated_splits(engine.n, engine.n_original,
                                                                           batch or engine.batch)])


def _resample_prompt(engine, table, n_resamples: int, batch: int, rng: np.random.Generator) -> np.ndarray:
    """This prompt's ω on B uniformly random splits, drawn in order (batch-invariant)."""
    if table is not None:
        # One uniform per resample picks a split: ⌊u·C⌋ is off the discrete uniform by < C / 2⁵³.
        picks = np.minimum((rng.random(n_resamples) * table.size).astype(np.int64), table.size - 1)
        return table[picks]
    return np.concatenate([engine.statistics(random_splits(rng, engine.n, engine.n_original,
                                                           min(batch, n_resamples - start)))
                           for start in range(0, n_resamples, batch)])


def _pvalue(observed: float, null: np.ndarray, exact: bool) -> float:
    adjustment = 0 if exact else 1
    hits = np.count_nonzero(null >= observed - tie_tolerance(observed))
    return float((hits + adjustment) / (null.size + adjustment))


def _listed(indices: list[int], limit: int = 10) -> str:
    shown = ", ".join(map(str, indices[:limit]))
    return shown + (f", … ({len(indices) - limit} more)" if len(indices) > limit else "")


def _dbpa_test_many_iv(x_groups, y_groups, similarity, discrepancy, n_resamples, rng, fdr, batch):
    similarity, omega = check_measures(similarity, discrepancy)
    n_resamples = check_n_resamples(n_resamples)
    fdr = check_probability(fdr, "fdr")
    batch = None if batch is None else check_positive_int(batch, "batch")
    rng = check_rng(rng)
    groups = []
    for name, value in (("x_groups", x_groups), ("y_groups", y_groups)):
        if isinstance(value, np.ndarray) and value.ndim == 2 or isinstance(value, str):
            raise ValueError(f"`{name}` must be a sequence with one array of outputs per prompt; got a single "
                             "array. Wrap one prompt's outputs in a list: [outputs].")
        try:
            groups.append(list(value))
        except TypeError:
            raise ValueError(f"`{name}` must be a sequence with one array of outputs per prompt; "
                             f"got {type(value).__name__}.") from None
    xs, ys = groups
    if not xs:
        raise ValueError("`x_groups` must hold at least one prompt's outputs; got an empty sequence.")
    if len(xs) != len(ys):
        raise ValueError(f"`x_groups` and `y_groups` must hold the same prompts; got {len(xs)} and {len(ys)} groups.")
    if len(xs) > MAX_PROMPTS:
        raise InvalidValue("x_groups", f"holds at most {MAX_PROMPTS:,} prompts; split the suite into several tests",
                           f"{len(xs):,}")
    check = ((lambda v, name: check_texts(v, name)) if similarity in TEXT_SIMILARITIES
             else (lambda v, name: check_embeddings(v, name)))
    xs = [check(v, f"x_groups[{i}]") for i, v in enumerate(xs)]
    ys = [check(v, f"y_groups[{i}]") for i, v in enumerate(ys)]
    if similarity not in TEXT_SIMILARITIES:
        dims = {a.shape[1] for a in xs + ys}
        if len(dims) > 1:
            raise ValueError(f"`x_groups` and `y_groups` must share one embedding dimension; got {sorted(dims)}. "
                             "Embed every output with the same embedder.")
    work = 0
    for i, (x, y) in enumerate(zip(xs, ys)):
        check_test_size(len(x), len(y), n_resamples, names=(f"x_groups[{i}]", f"y_groups[{i}]"))
        n = len(x) + len(y)
        work += min(n_resamples, math.comb(n, len(x)) if n <= 1_000 else n_resamples) * n * n
    if work > MAX_PERMUTATION_WORK:
        raise InvalidValue("n_resamples", f"is too large for these prompts: {PERMUTATION_WORK_WHY} (summed over "
                                          "the prompts)", f"B = {n_resamples:,}")
    return xs, ys, similarity, omega, n_resamples, rng, fdr, batch
