r"""Power against probabilistic substitution, and score selection, from recorded answer pools (paper §5, Fig 2).

Zhu et al., ICLR 2026, §5: an audit takes n prompts; per prompt, m reference
answers and one target answer, which with probability q comes from the
substitute and otherwise from the reference model.  Power at q is the share of
Monte Carlo audits (trials) with p ≤ α, and the power AUC is the trapezoidal
area under power(q) over q ∈ [0, 1].  Three tests see the same audits:

- ``rut``: randomized ranks of the log-rank score, Cramér–von Mises
  (:mod:`dbpa_core.rut.uniformity`);
- ``ks``: Kolmogorov–Smirnov on the same ranks;
- ``mmd``: the Hamming-kernel MMD on the answers' tokens (``kernel="token"``,
  the default) or characters (``kernel="character"``, as the paper describes
  it) with within-prompt re-splits (:mod:`dbpa_core.rut.mmd`).

Trials draw from the pools without replacement: the n prompts, then per prompt
m + 1 distinct reference answers (m for the reference sample, one as the target
when it is not substituted) and one substitute answer.  Common random numbers:
within a trial the draws are shared by every q and every substitute, and an
answer is substituted when its uniform :math:`u_i < q`, so the curves move
with q and differ between methods and substitutes by their power, not by
which audits each one saw (each point is still an average over independent
trials).  The MMD's re-splits are shared likewise; the kernel is computed once
per prompt over its whole pool, and a trial only sums entries of it
(:mod:`dbpa_core.rut.mmd`: only :math:`\sum_i s_{ij_i}` changes per re-split).

Score selection (paper §4.2, Fig 2): per trial a few prompts, the scores of
the substitute's answers and of as many reference answers to them, and the
AUROC of each score function for telling them apart (0.5: no signal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from .._validation import check_choice, check_positive_int, check_probability, check_rng
from .mmd import KERNELS, MMDResult, hamming_matches, hamming_mmd_test
from .pools import RUTPools, character_pools
from .scoring import SCORES
from .uniformity import RUTResult, rank_uniformity_test, substituted_share_bound

METHODS = ("rut", "mmd", "ks")
#: The paper's grid of substitution probabilities.
Q_GRID = tuple(np.round(np.linspace(0.0, 1.0, 11), 1))


@dataclass(frozen=True, eq=False)
class PowerCurves:
    """Power of each method against one substitute, over q.

    Attributes
    ----------
    substitute : str
    q : ndarray
    power : dict
        method → share of trials with p ≤ α at each q.
    power_auc : dict
        method → trapezoidal area under power(q) over the q grid.
    rejections : dict
        method → (n_trials, len(q)) booleans: trial t rejected at q (the same audit draws at every q).
    mean_share_bound : ndarray
        Mean of the RUT's 1 − α lower bound on the substituted share at each q.
    n_trials, n_prompts, m, n_resamples : int
    alpha : float
    """

    substitute: str
    q: np.ndarray
    power: dict = field(repr=False)
    power_auc: dict = field(repr=False)
    rejections: dict = field(repr=False)
    mean_share_bound: np.ndarray = field(repr=False)
    n_trials: int
    n_prompts: int
    m: int
    n_resamples: int
    alpha: float

    def _per_trial_auc(self, method: str) -> np.ndarray:
        """Each trial's contribution to the power AUC: with common random numbers a trial is one audit's
        draws at every q, so the AUC is the mean of these n_trials independent values."""
        order = np.argsort(self.q)
        q = self.q[order]
        weights = np.zeros(q.size)
        weights[:-1] += np.diff(q) / 2
        weights[1:] += np.diff(q) / 2
        return self.rejections[check_choice(method, "method", METHODS)][:, order] @ weights

    def auc_se(self, method: str) -> float:
        """Monte Carlo standard error of ``power_auc[method]`` (trials are independent)."""
        return float(self._per_trial_auc(method).std(ddof=1) / np.sqrt(self.n_trials))

    def auc_difference(self, first: str, second: str) -> tuple[float, float]:
        """``power_auc[first] − power_auc[second]`` and its Monte Carlo standard error, paired by trial."""
        difference = self._per_trial_auc(first) - self._per_trial_auc(second)
        return float(difference.mean()), float(difference.std(ddof=1) / np.sqrt(self.n_trials))


@dataclass(frozen=True, eq=False)
class ScoreSelection:
    """AUROC of each score function between a substitute's answers and the reference's (paper Fig 2).

    ``aurocs`` has shape (n_trials, len(scores)); above 0.5 the substitute's answers score higher.
    """

    substitute: str
    scores: tuple[str, ...]
    aurocs: np.ndarray = field(repr=False)
    n_prompts: int
    n_answers: int

    @property
    def mean(self) -> np.ndarray:
        return self.aurocs.mean(axis=0)

    @property
    def sd(self) -> np.ndarray:
        return self.aurocs.std(axis=0, ddof=1)

    @property
    def best(self) -> str:
        """The score whose AUROC is furthest from 0.5 on average (the paper's criterion)."""
        return self.scores[int(np.argmax(np.abs(self.mean - 0.5)))]


def power_study(pools: RUTPools, *, substitutes=None, n_prompts: int = 100, m: int = 100, q_values=Q_GRID,
                n_trials: int = 500, alpha: float = 0.05, n_resamples: int = 1000, score: str = "log_rank",
                rng=None, progress: Callable[[float], object] | None = None, kernel: str = "token",
                texts: dict | None = None) -> dict[str, PowerCurves]:
    """Power curves of RUT, MMD and KS against each substitute (module docstring).

    Parameters
    ----------
    pools : RUTPools
    substitutes : sequence of str, optional
        Default: every recorded substitute.
    n_prompts, m : int
        Prompts per audit and reference answers per prompt (m ≥ 2 for the MMD).
    q_values : sequence of float
        Substitution probabilities in [0, 1] (default the paper's 0, 0.1, …, 1).
    n_trials : int
        Monte Carlo audits per q.
    alpha : float
    n_resamples : int
        Re-splits per MMD test.
    score : str
        RUT's score function (the paper's: log-rank).
    rng : Generator, int or None
    progress : callable(fraction), optional
    kernel : {"token", "character"}
        What the MMD's Hamming kernel compares position by position
        (:data:`~dbpa_core.rut.mmd.KERNELS`): token ids (default; the shipped
        tables) or characters (the paper's description, §5.7).
    texts : dict, optional
        The answers' texts for ``kernel="character"`` (default: the shipped
        ``rut_texts.jsonl.xz``, :func:`~dbpa_core.rut.pools.load_rut_texts`).

    Returns
    -------
    dict
        substitute name → :class:`PowerCurves`.
    """
    names, q_values = _study_iv(pools, substitutes, q_values)
    if check_choice(kernel, "kernel", KERNELS) == "character":
        pools = character_pools(pools, texts)
    score = check_choice(score, "score", SCORES)
    n_pool, n_reference = pools.reference.scores[score].shape
    n_prompts = check_positive_int(n_prompts, "n_prompts", minimum=2, maximum=n_pool)
    m = check_positive_int(m, "m", minimum=2, maximum=n_reference - 1)
    n_trials = check_positive_int(n_trials, "n_trials")
    alpha = check_probability(alpha, "alpha")
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    rng = check_rng(rng)

    matches, offsets = _pool_matches(pools, names)
    length = pools.reference.tokens.shape[2]
    # Each reference answer's matches with all n_reference answers to its prompt: a trial subtracts the
    # n_reference − m it leaves out (fewer entries to gather than the m it keeps).
    reference_rows = matches[:, :n_reference, :n_reference].sum(axis=2, dtype=np.int64)
    reference_scores = pools.reference.scores[score]
    n_q, rows_n = len(q_values), np.arange(n_prompts)
    ranks = {s: np.empty((n_trials, n_q, n_prompts)) for s in names}
    mmd_reject = {s: np.zeros((n_trials, n_q), dtype=bool) for s in names}
    for trial in range(n_trials):
        rows = rng.choice(n_pool, size=n_prompts, replace=False)
        drawn = np.argsort(rng.random((n_prompts, n_reference)), axis=1)
        references, null_target, left_out = drawn[:, :m], drawn[:, m], drawn[:, m:]
        substituted = rng.random(n_prompts)[None, :] < q_values[:, None]  # (n_q, n)
        weights = substituted.T.astype(np.int64)  # integer products: no BLAS threads
        tie_break = rng.random(n_prompts)
        resplits = rng.integers(m + 1, size=(n_resamples, n_prompts))
        alternative = {s: rng.integers(pools.substitutes[s].n_answers, size=n_prompts) for s in names}

        sample = reference_scores[rows[:, None], references]
        null_rank = _ranks(reference_scores[rows, null_target], sample, tie_break)
        # Kernel sums in units of matching positions (integers, so comparisons are exact).
        within = (reference_rows[rows[:, None], references] - length
                  - matches[rows[:, None, None], references[:, :, None], left_out[:, None, :]].sum(axis=2))
        null_sums = _target_sums(matches, rows, references, null_target, within)
        null_resplit = null_sums[rows_n, resplits]
        for s in names:
            candidate = offsets[s] + alternative[s]
            ranks[s][trial] = np.where(substituted, _ranks(pools.substitutes[s].scores[score][rows, alternative[s]],
                                                           sample, tie_break), null_rank)
            sums = _target_sums(matches, rows, references, candidate, within)
            observed = np.where(substituted, sums[:, m], null_sums[:, m]).sum(axis=1)  # (n_q,)
            resplit = null_resplit.sum(axis=1)[:, None] + (sums[rows_n, resplits] - null_resplit) @ weights
            # T = C − 2A / (n (m − 1) L) with C fixed under re-splits: T_b ≥ T ⇔ A_b ≤ A.
            mmd_reject[s][trial] = (1 + (resplit <= observed).sum(axis=0)) / (1 + n_resamples) <= alpha
        if progress is not None:
            progress((trial + 1) / n_trials)

    critical = stats.kstwo.isf(alpha, n_prompts)
    order = np.argsort(q_values)
    curves = {}
    for s in names:
        flat = ranks[s].reshape(-1, n_prompts)
        cvm = stats.cramervonmises(flat, "uniform", axis=1).pvalue.reshape(n_trials, n_q)
        ks = _ks_statistics(flat).reshape(n_trials, n_q)
        rejections = {"rut": cvm <= alpha, "mmd": mmd_reject[s], "ks": ks >= critical}
        power = {k: v.mean(axis=0) for k, v in rejections.items()}
        auc = {k: float(np.trapezoid(v[order], q_values[order])) if n_q > 1 else float("nan")
               for k, v in power.items()}
        bound = substituted_share_bound(ks, n_prompts, confidence_level=1 - alpha).mean(axis=0)
        curves[s] = PowerCurves(s, q_values, power, auc, rejections, bound, n_trials, n_prompts, m, n_resamples,
                                alpha)
    return curves


def score_selection(pools: RUTPools, *, substitutes=None, n_prompts: int = 10, n_trials: int = 500, rng=None
                    ) -> dict[str, ScoreSelection]:
    """AUROC of every score function between each substitute's answers and the reference's (paper Fig 2).

    Per trial: ``n_prompts`` prompts drawn without replacement; all of the
    substitute's answers to them and as many of the reference's, drawn without
    replacement; one AUROC per score over the pooled answers.  The paper used
    10 prompts and 50 answers per prompt; here the answers per prompt are the
    substitute's recorded pool.
    """
    names, _ = _study_iv(pools, substitutes, Q_GRID)
    n_pool, n_reference = pools.reference.scores[SCORES[0]].shape
    n_prompts = check_positive_int(n_prompts, "n_prompts", minimum=1, maximum=n_pool)
    n_trials = check_positive_int(n_trials, "n_trials")
    rng = check_rng(rng)
    result = {}
    for s in names:
        arm = pools.substitutes[s]
        k = min(arm.n_answers, n_reference)
        rows = np.stack([rng.choice(n_pool, size=n_prompts, replace=False) for _ in range(n_trials)])
        columns = np.argsort(rng.random((n_trials, n_prompts, n_reference)), axis=2)[:, :, :k]
        aurocs = np.empty((n_trials, len(SCORES)))
        for j, name in enumerate(SCORES):
            substitute = arm.scores[name][rows, :k].reshape(n_trials, -1)
            reference = pools.reference.scores[name][rows[:, :, None], columns].reshape(n_trials, -1)
            aurocs[:, j] = auroc(substitute, reference)
        result[s] = ScoreSelection(s, SCORES, aurocs, n_prompts, k)
    return result


@dataclass(frozen=True, eq=False)
class DrawnAudit:
    """One audit drawn from the pools: n prompts, m reference answers each, one target answer each.

    ``substituted[i]`` says whether prompt i's target answer came from the substitute.
    """

    prompts: tuple[str, ...]
    target_scores: np.ndarray = field(repr=False)
    reference_scores: np.ndarray = field(repr=False)
    target_tokens: np.ndarray = field(repr=False)
    reference_tokens: np.ndarray = field(repr=False)
    substituted: np.ndarray = field(repr=False)


def draw_audit(pools: RUTPools, substitute: str, q: float, *, n_prompts: int = 100, m: int = 100,
               score: str = "log_rank", rng=None) -> DrawnAudit:
    """One audit of an API that serves ``substitute`` for a share q of answers, drawn as a trial of :func:`power_study`."""
    (name,), _ = _study_iv(pools, [substitute], Q_GRID)
    q = check_probability(q, "q", open_low=False, open_high=False)
    score = check_choice(score, "score", SCORES)
    n_pool, n_reference = pools.reference.scores[score].shape
    n_prompts = check_positive_int(n_prompts, "n_prompts", minimum=2, maximum=n_pool)
    m = check_positive_int(m, "m", minimum=2, maximum=n_reference - 1)
    rng = check_rng(rng)
    arm = pools.substitutes[name]
    rows = rng.choice(n_pool, size=n_prompts, replace=False)
    drawn = np.argsort(rng.random((n_prompts, n_reference)), axis=1)
    references, null_target = drawn[:, :m], drawn[:, m]
    substituted = rng.random(n_prompts) < q
    alternative = rng.integers(arm.n_answers, size=n_prompts)
    reference, ref_tokens = pools.reference.scores[score], pools.reference.tokens
    target_scores = np.where(substituted, arm.scores[score][rows, alternative], reference[rows, null_target])
    target_tokens = np.where(substituted[:, None], arm.tokens[rows, alternative], ref_tokens[rows, null_target])
    return DrawnAudit(tuple(pools.prompts[r] for r in rows), target_scores, reference[rows[:, None], references],
                      target_tokens, ref_tokens[rows[:, None], references], substituted)


@dataclass(frozen=True, eq=False)
class RecordedAudit:
    """One audit drawn from the recorded pools and tested by RUT and by the Hamming-kernel MMD."""

    audit: DrawnAudit = field(repr=False)
    rut: RUTResult
    mmd: MMDResult

    @property
    def n_substituted(self) -> int:
        """How many target answers came from the substitute (the truth the test does not see)."""
        return int(self.audit.substituted.sum())


def recorded_audit(pools: RUTPools, substitute: str, q: float, *, n_prompts: int = 100, m: int = 100,
                   score: str = "log_rank", n_resamples: int = 1000, seed: int = 0, method: str = "cvm",
                   kernel: str = "token", texts: dict | None = None) -> RecordedAudit:
    """One audit of ``substitute`` at share ``q`` (:func:`draw_audit`), tested by MMD and then RUT.

    One stream, ``default_rng(seed)``, draws the answers, then the MMD's re-splits, then RUT's tie-breaking
    uniforms: the paper view's default audit and the one-audit view at the same settings are one audit,
    the same numbers (they were two draws of one stream at different points: 46 and 47 substituted).
    ``method`` is the uniformity test of the ranks ("cvm", the paper's, or "ks"); ``kernel`` and ``texts`` choose
    what the MMD compares, as in :func:`power_study` (the draws are the same for both kernels).
    """
    if check_choice(kernel, "kernel", KERNELS) == "character":
        pools = character_pools(pools, texts)
    rng = np.random.default_rng(seed)
    audit = draw_audit(pools, substitute, q, n_prompts=n_prompts, m=m, score=score, rng=rng)
    mmd = hamming_mmd_test(audit.target_tokens, audit.reference_tokens, n_resamples=n_resamples, rng=rng)
    return RecordedAudit(audit, rank_uniformity_test(audit.target_scores, audit.reference_scores, method=method,
                                                     rng=rng), mmd)


def auroc(positive, negative):
    """P(X > Y) + P(X = Y) / 2 for X from ``positive`` and Y from ``negative`` (Mann–Whitney U / (n₁ n₂)).

    1-D inputs give a float; 2-D inputs (trials, values) one AUROC per row.
    """
    positive, negative = np.asarray(positive, dtype=np.float64), np.asarray(negative, dtype=np.float64)
    if np.isnan(positive).any() or np.isnan(negative).any():
        raise ValueError("`positive` and `negative` must not contain NaN (infinite scores are allowed).")
    n1, n2 = positive.shape[-1], negative.shape[-1]
    ranks = stats.rankdata(np.concatenate([positive, negative], axis=-1), axis=-1)
    value = (ranks[..., :n1].sum(axis=-1) - n1 * (n1 + 1) / 2) / (n1 * n2)
    return float(value) if np.ndim(value) == 0 else value


def _ranks(target, reference, tie_break):
    less = (reference < target[:, None]).sum(axis=1)
    equal = (reference == target[:, None]).sum(axis=1)
    return (less + tie_break * (equal + 1)) / (reference.shape[1] + 1)


def _ks_statistics(ranks):
    ranks = np.sort(ranks, axis=1)
    n = ranks.shape[1]
    i = np.arange(1, n + 1)
    return np.maximum((i / n - ranks).max(axis=1), (ranks - (i - 1) / n).max(axis=1))


def _target_sums(matches, rows, references, target, within):
    r"""(n, m + 1): :math:`s_{ij}` of the m reference answers and, last, of the target (in matching positions)."""
    to_target = matches[rows[:, None], references, target[:, None]].astype(np.int64)
    return np.concatenate([within + to_target, to_target.sum(axis=1, keepdims=True)], axis=1)


def _pool_matches(pools: RUTPools, names):
    """Per prompt, matching positions between every two answers of its pool (reference first), and offsets."""
    arms = [pools.reference, *(pools.substitutes[s] for s in names)]
    offsets, start = {}, pools.reference.n_answers
    for s in names:
        offsets[s] = start
        start += pools.substitutes[s].n_answers
    tokens = np.concatenate([a.tokens for a in arms], axis=1)
    dtype = np.int16 if tokens.shape[2] < 2**15 else np.int32
    return np.stack([hamming_matches(t, t).astype(dtype) for t in tokens]), offsets


def _study_iv(pools, substitutes, q_values):
    if not isinstance(pools, RUTPools):
        raise ValueError(f"`pools` must be RUTPools (dbpa_core.rut.pools.load_rut_pools()); got {type(pools).__name__}.")
    names = list(pools.substitutes) if substitutes is None else [pools.substitute(s).name for s in substitutes]
    if not names:
        raise ValueError("`substitutes` must name at least one recorded substitute.")
    q_values = np.asarray(q_values, dtype=np.float64)
    if q_values.ndim != 1 or q_values.size == 0 or np.any((q_values < 0) | (q_values > 1)):
        raise ValueError("`q_values` must be substitution probabilities in [0, 1].")
    return names, q_values
