"""Tests of dbpa_core.rut.mmd: Gao et al.'s Hamming-kernel MMD in the RUT's design, exact and calibrated."""

from __future__ import annotations

import numpy as np
import pytest

from dbpa_core.rut.mmd import PAD, hamming_kernel, hamming_mmd_test, pad_tokens


def gao_mmd(target, reference):
    """Gao et al.'s estimate written out pair by pair: kernel 0 across prompts, normalized Hamming, off-diagonal.

    Answers are (prompt, sequence); the target sample X has one answer per
    prompt, so its same-prompt average has no pairs and is left out.
    """
    n, m, length = reference.shape
    xs = [(i, target[i]) for i in range(n)]
    ys = [(i, reference[i, j]) for i in range(n) for j in range(m)]

    def k(a, b):
        return float(np.sum(a[1] == b[1])) / length if a[0] == b[0] else None

    xy = [k(a, b) for a in xs for b in ys]
    yy = [k(a, b) for p, a in enumerate(ys) for q, b in enumerate(ys) if p != q]
    xy = [v for v in xy if v is not None]
    yy = [v for v in yy if v is not None]
    return np.mean(yy) - 2 * np.mean(xy)


def test_exact_small_case_by_hand():
    target = np.array([[1, 2], [5, 5]])
    reference = np.array([[[1, 2], [1, 3]], [[6, 6], [5, 6]]])
    # k: prompt 0 (r1, r2, t): 1/2, 1, 1/2; prompt 1: 1/2, 0, 1/2.  mean_XY = 2/4, mean_YY = 1/2.
    result = hamming_mmd_test(target, reference, n_resamples=1000, rng=0)
    assert result.statistic == pytest.approx(0.5 - 2 * 0.5, abs=1e-15)
    # The 9 re-splits: s0 ∈ {1.5, 1, 1.5}, s1 ∈ {0.5, 1, 0.5}, T_b = 1.5 − (s0 + s1) ≥ −0.5 in 7 of them.
    assert result.exact and result.n_resamples == 9
    assert result.pvalue == pytest.approx(7 / 9, abs=1e-15)


def test_statistic_agrees_with_the_pairwise_definition():
    rng = np.random.default_rng(11)
    target = rng.integers(0, 4, size=(6, 5))
    reference = rng.integers(0, 4, size=(6, 7, 5))
    result = hamming_mmd_test(target, reference, n_resamples=50, rng=1)
    assert result.statistic == pytest.approx(gao_mmd(target, reference), rel=1e-12)
    assert not result.exact and result.n_resamples == 50


def test_kernel_is_the_share_of_equal_positions_and_pads_match():
    a = pad_tokens([[1, 2, 3], [1, 2]])
    assert a.tolist() == [[1, 2, 3], [1, 2, PAD]]
    np.testing.assert_allclose(hamming_kernel(a, a), [[1, 2 / 3], [2 / 3, 1]])
    assert pad_tokens([[1, 2, 3]], length=2).tolist() == [[1, 2]]


def test_enumerated_pvalue_matches_many_sampled_resplits():
    rng = np.random.default_rng(5)
    target = rng.integers(0, 3, size=(4, 4))
    reference = rng.integers(0, 3, size=(4, 3, 4))
    exact = hamming_mmd_test(target, reference, n_resamples=10_000, rng=0)  # 4^4 = 256 re-splits
    sampled = hamming_mmd_test(target, reference, n_resamples=255, rng=0)
    sampled_many = hamming_mmd_test(target, reference, n_resamples=20_000, rng=0)
    assert exact.exact and not sampled.exact
    assert sampled_many.pvalue == pytest.approx(exact.pvalue, abs=0.01)


def _answers(rng, probabilities, size):
    """Token sequences drawn position by position from per-position categorical distributions."""
    length, vocabulary = probabilities.shape
    cumulative = probabilities.cumsum(axis=1)
    u = rng.random((*size, length, 1))
    return (u > cumulative).sum(axis=-1)


def _audit(rng, n, m, shift):
    prompts = rng.dirichlet(np.full(5, 0.7), size=(n, 6))  # per prompt: 6 positions × 5 tokens
    reference = np.stack([_answers(rng, p, (m,)) for p in prompts])
    other = prompts.copy()
    other[:, :, 0] += shift  # the substitute favours token 0
    other /= other.sum(axis=2, keepdims=True)
    target = np.stack([_answers(rng, p, ()) for p in other])
    return target, reference


def test_null_rejection_rate_is_alpha():
    rng = np.random.default_rng(2026)
    trials = 600
    rejected = sum(hamming_mmd_test(*_audit(rng, 12, 6, 0.0), n_resamples=199, rng=rng).pvalue <= 0.05
                   for _ in range(trials))
    # binomial sd 0.0089.  Gao et al.'s pooled re-split in this design rejected 0 of 200 such audits:
    # the observed split has no XX pairs, the re-split ones do.
    assert 0.025 <= rejected / trials <= 0.08


def test_a_different_model_is_detected():
    rng = np.random.default_rng(3)
    pvalues = [hamming_mmd_test(*_audit(rng, 30, 8, 2.0), n_resamples=199, rng=rng).pvalue for _ in range(20)]
    assert np.mean(np.array(pvalues) <= 0.05) >= 0.9


@pytest.mark.parametrize(("target", "reference", "match"), [
    (np.ones((1, 3), int), np.ones((1, 2, 3), int), "`target_tokens` must be 2-D"),
    (np.ones((2, 3), int), np.ones((2, 1, 3), int), "m >= 2"),
    (np.ones((2, 3), int), np.ones((3, 2, 3), int), "one row per prompt"),
    (np.ones((2, 3), int), np.ones((2, 2, 4), int), "length L"),
    (np.ones((2, 3)), np.ones((2, 2, 3)), "integer token ids"),
])
def test_bad_inputs(target, reference, match):
    with pytest.raises(ValueError, match=match):
        hamming_mmd_test(target, reference)


def test_bad_n_resamples():
    with pytest.raises(ValueError, match="`n_resamples`"):
        hamming_mmd_test(np.ones((2, 3), int), np.ones((2, 2, 3), int), n_resamples=0)
