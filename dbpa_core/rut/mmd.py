r"""MMD with the Hamming kernel on character or token sequences: the RUT paper's MMD baseline.

Gao, Liang & Guestrin, "Model equality testing: which model is this API
serving?", ICLR 2025 (arXiv:2410.20247; their ``mmd_hamming``), used by Zhu et
al. (ICLR 2026, §5) as the baseline RUT is compared with.

Kernel.  An answer is a (prompt, sequence) pair, the sequence padded to a
common length L.  Zhu et al. (§5.7, §6) describe the baseline as
"character-level Hamming distance": the sequence is the answer's characters
(:func:`pad_characters`, one Unicode code point per position), which is why a
provider that strips one leading space shifts every position and moved its
power from 0.21 to 1.0 in their §5.7.  A sequence of token ids
(:func:`pad_tokens`) is offered too, named: the shipped power tables were
computed with it (:data:`KERNELS`).  The kernel and the test below are the
same for both; only what a position holds differs.  Gao et al. count the positions where two sequences agree,
set the kernel to 0 for answers to different prompts, and normalize it so that
k(a, a) = 1; with sequences of one length L that is

.. math::  k\bigl((x, y), (x', y')\bigr) = \mathbb 1\{x = x'\}\,\frac1L \sum_{l=1}^{L} \mathbb 1\{y_l = y'_l\}.

Statistic.  Their estimate of MMD² averages the kernel over pairs of
*different* answers to the *same* prompt:

.. math::  T = \overline{k}_{XX} - 2\,\overline{k}_{XY} + \overline{k}_{YY}.

In the RUT's asymmetric design each prompt has one target answer (X) and m
reference answers (Y), so no two target answers share a prompt: the XX average
has no pairs (their code divides by the number of pairs, zero here) and is left
out.  With :math:`s_{ij}` the sum of the kernel between answer j of prompt i and
the other m answers to it, and the target at position :math:`j_i`,

.. math::  T = \frac{\sum_i S_i}{n\,m\,(m-1)} - \frac{2}{n\,(m-1)} \sum_i s_{i j_i},
           \qquad S_i = \sum_{j} s_{ij},

so T is large when the target's answers agree with the reference's less than
the reference's agree with each other.

Permutation test.  Gao et al. pool the two samples and re-split them at
random, which is exact when both samples draw their prompts from one
distribution.  Here the design fixes one target and m reference answers per
prompt, so the re-split is *within* each prompt: which of its m + 1 answers
plays the target.  (Pooled re-splits would give X several answers to one
prompt and an XX term the observed split never has: on simulated audits
without substitution that version rejected 0 of 200 at α = 0.05.)  Under H0 those m + 1 answers are exchangeable (the property
the RUT's rank rests on), so the test is exact at any number of re-splits B
with :math:`p = (1 + \#\{T_b \ge T\}) / (1 + B)`; when the
:math:`(m+1)^n` re-splits are fewer than B they are all enumerated (p exact).
:math:`S_i` does not change under these re-splits, so only
:math:`\sum_i s_{i j_i}` has to be recomputed per re-split (never the kernel).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_positive_int, check_rng

#: Value that fills a sequence up to the common length L (never a real token id or code point).
PAD = -1
#: What a position of the Hamming kernel holds: "character" (a Unicode code point, the paper's baseline) or
#: "token" (a token id of the reference model's tokenizer; the shipped tables' and this project's default).
KERNELS = ("token", "character")


@dataclass(frozen=True, eq=False)
class MMDResult:
    """Result of :func:`hamming_mmd_test`.

    Attributes
    ----------
    statistic : float
        T, the MMD² estimate over same-prompt pairs (module docstring).
    pvalue : float
        Within-prompt permutation p-value, (1 + #{T_b ≥ T}) / (1 + B); exact when ``exact``.
    null_distribution : ndarray
        T over the re-splits.
    n_prompts, n_reference, n_resamples : int
    exact : bool
        Every re-split was enumerated.
    """

    statistic: float
    pvalue: float
    null_distribution: np.ndarray = field(repr=False)
    n_prompts: int
    n_reference: int
    n_resamples: int
    exact: bool


def pad_tokens(sequences, length: int | None = None) -> np.ndarray:
    """Token sequences as one (n, L) integer array, filled with :data:`PAD` (cut at ``length`` if given).

    Parameters
    ----------
    sequences : sequence of sequences of int
    length : int, optional
        L; default the longest sequence.
    """
    sequences = [np.asarray(s, dtype=np.int64).ravel() for s in sequences]
    if length is None:
        length = max((len(s) for s in sequences), default=1)
    length = check_positive_int(length, "length")
    out = np.full((len(sequences), length), PAD, dtype=np.int64)
    for i, s in enumerate(sequences):
        out[i, : min(len(s), length)] = s[:length]
    return out


def pad_characters(texts, length: int | None = None) -> np.ndarray:
    """Texts as one (n, L) integer array of their characters' code points, filled with :data:`PAD`.

    The input of the character-level Hamming kernel (Zhu et al. §5.7; Gao et
    al.'s ``mmd_hamming`` on strings).

    Parameters
    ----------
    texts : sequence of str
    length : int, optional
        L; default the longest text (a longer text is cut at L characters).
    """
    texts = list(texts)
    if not all(isinstance(t, str) for t in texts):
        raise ValueError("`texts` must be strings (the answers' texts).")
    return pad_tokens([[ord(c) for c in t] for t in texts], length)


def hamming_matches(a, b) -> np.ndarray:
    """Number of positions where each row of ``a`` (p, L) equals each row of ``b`` (q, L): shape (p, q)."""
    a, b = np.asarray(a), np.asarray(b)
    # Compare one position at a time: memory p·q, not p·q·L.
    out = np.zeros((a.shape[0], b.shape[0]), dtype=np.int32)
    for position in range(a.shape[1]):
        out += a[:, position, None] == b[None, :, position]
    return out


def hamming_kernel(a, b) -> np.ndarray:
    """Gao et al.'s normalized Hamming kernel of same-length token sequences: the share of equal positions."""
    a = np.asarray(a)
    return hamming_matches(a, b) / a.shape[1]


def mmd_statistic(pair_sums, target_sums, m: int) -> np.ndarray:
    r"""T of the module docstring from :math:`\sum_i S_i` and :math:`\sum_i s_{ij_i}` (broadcast; n = prompts).

    Parameters
    ----------
    pair_sums : array_like of shape (..., n)
        :math:`S_i` per prompt.
    target_sums : array_like of shape (..., n)
        :math:`s_{ij_i}` per prompt.
    m : int
        Reference answers per prompt (≥ 2).
    """
    pair_sums, target_sums = np.asarray(pair_sums, dtype=np.float64), np.asarray(target_sums, dtype=np.float64)
    n = pair_sums.shape[-1]
    return pair_sums.sum(axis=-1) / (n * m * (m - 1)) - 2.0 * target_sums.sum(axis=-1) / (n * (m - 1))


def row_sums(kernels) -> np.ndarray:
    r""":math:`s_{ij}`: per prompt, each answer's kernel summed over the prompt's other answers.

    ``kernels`` has shape (n, m + 1, m + 1) (one kernel matrix per prompt);
    returns (n, m + 1).
    """
    kernels = np.asarray(kernels, dtype=np.float64)
    return kernels.sum(axis=2) - np.diagonal(kernels, axis1=1, axis2=2)


def hamming_mmd_test(target_tokens, reference_tokens, *, n_resamples: int = 1000, rng=None) -> MMDResult:
    """Test whether the target's answers differ from the reference's: MMD, Hamming kernel, within-prompt re-splits.

    Parameters
    ----------
    target_tokens : array_like of int, shape (n, L)
        The target's answer to each of n prompts, padded with :data:`PAD` (:func:`pad_tokens`).
    reference_tokens : array_like of int, shape (n, m, L)
        m reference answers per prompt, padded to the same L (m ≥ 2).
    n_resamples : int
        Re-splits B (all of them, exactly, when there are fewer than B).
    rng : Generator, int or None

    Returns
    -------
    MMDResult
    """
    target, reference = _tokens_iv(target_tokens, reference_tokens)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    rng = check_rng(rng)
    n, m, _ = reference.shape
    answers = np.concatenate([reference, target[:, None, :]], axis=1)  # the target at position m
    sums = row_sums(np.stack([hamming_kernel(a, a) for a in answers]))
    pair_sums = sums.sum(axis=1)
    statistic = float(mmd_statistic(pair_sums, sums[:, m], m))
    exact = (m + 1) ** n <= n_resamples
    if exact:
        positions = np.array(list(itertools.product(range(m + 1), repeat=n)))
    else:
        positions = rng.integers(m + 1, size=(n_resamples, n))
    null = mmd_statistic(pair_sums, sums[np.arange(n), positions], m)
    # Enumerated, the re-splits include the observed one: p = share of T_b ≥ T;
    # sampled, the +1 counts it (Phipson & Smyth 2010).  A relative tolerance
    # keeps re-splits that tie T in exact arithmetic from falling below it.
    at_least = int(np.sum(null >= statistic - 1e-12 * max(1.0, abs(statistic))))
    pvalue = at_least / len(null) if exact else (1 + at_least) / (1 + n_resamples)
    return MMDResult(statistic, float(pvalue), null, n, m, len(null), exact)


def _tokens_iv(target_tokens, reference_tokens):
    target = np.asarray(target_tokens)
    reference = np.asarray(reference_tokens)
    if not (np.issubdtype(target.dtype, np.integer) and np.issubdtype(reference.dtype, np.integer)):
        raise ValueError("`target_tokens` and `reference_tokens` must be integer token ids (pad with pad_tokens).")
    if target.ndim != 2 or target.shape[0] < 2:
        raise ValueError(f"`target_tokens` must be 2-D (n prompts, L tokens) with n >= 2; got shape {target.shape}.")
    if reference.ndim != 3 or reference.shape[1] < 2:
        raise ValueError(f"`reference_tokens` must be 3-D (n prompts, m answers, L tokens) with m >= 2; "
                         f"got shape {reference.shape}.")
    if reference.shape[0] != target.shape[0] or reference.shape[2] != target.shape[1]:
        raise ValueError(f"`reference_tokens` must have one row per prompt and the target's length L: target "
                         f"{target.shape}, reference {reference.shape}; pad both to one L with pad_tokens.")
    return target, reference
