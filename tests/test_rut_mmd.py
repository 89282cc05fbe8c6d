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


def brute_force_character_mmd(target_texts, reference_texts):
    """Zhu et al. §5.7's character-level Hamming MMD written out on Python strings, pair by pair.

    Strings are padded with a character that is in none of them to the longest one's length L; the kernel is
    the share of the L positions where two answers to the same prompt hold the same character.
    """
    texts = list(target_texts) + [t for row in reference_texts for t in row]
    length = max(len(t) for t in texts)
    fill = "\x00"

    def k(a, b):
        a, b = a.ljust(length, fill), b.ljust(length, fill)
        return sum(ca == cb for ca, cb in zip(a, b, strict=True)) / length

    n, m = len(target_texts), len(reference_texts[0])
    yy = [k(reference_texts[i][p], reference_texts[i][q]) for i in range(n) for p in range(m) for q in range(m)
          if p != q]
    xy = [k(target_texts[i], reference_texts[i][j]) for i in range(n) for j in range(m)]
    return float(np.mean(yy) - 2 * np.mean(xy)), k


def test_character_kernel_equals_a_brute_force_on_tiny_strings():
    from dbpa_core.rut.mmd import KERNELS, pad_characters

    assert KERNELS == ("token", "character")
    target = ["Paris", " Paris", "né"]
    reference = [["Paris.", "Pari"], ["Paris", "Lyon"], ["ne", "né!"]]
    expected, k = brute_force_character_mmd(target, reference)
    length = max(len(t) for t in target + [t for row in reference for t in row])
    chars_t = pad_characters(target, length)
    chars_r = np.stack([pad_characters(row, length) for row in reference])
    result = hamming_mmd_test(chars_t, chars_r, n_resamples=1000, rng=0)
    assert result.statistic == pytest.approx(expected, abs=1e-15)
    # The kernel itself, entry by entry, and the leading-space case of §5.7: " Paris" shares no position with
    # "Paris" beyond the padding (every character moved by one), "Paris" shares 5 of 6 with "Paris.".
    flat = [*target, *(t for row in reference for t in row)]
    codes = pad_characters(flat, length)
    np.testing.assert_allclose(hamming_kernel(codes, codes), [[k(a, b) for b in flat] for a in flat], atol=1e-15)
    assert k("Paris", " Paris") == 0 and k("Paris", "Paris.") == 5 / 6
    # Exact p over the (m + 1)^n = 27 re-splits, counted by brute force from the same pairwise definition.
    null = []
    for picks in np.ndindex(3, 3, 3):
        t = [([*reference[i], target[i]])[j] for i, j in enumerate(picks)]
        r = [[a for c, a in enumerate([*reference[i], target[i]]) if c != j] for i, j in enumerate(picks)]
        null.append(brute_force_character_mmd(t, r)[0])
    assert result.exact and result.pvalue == pytest.approx(np.mean(np.array(null) >= expected - 1e-12), abs=1e-15)


def test_character_pools_swap_tokens_for_code_points_and_check_the_texts():
    from dbpa_core.rut.pools import Arm, RUTPools, character_pools
    from dbpa_core.rut.scoring import SCORES

    def arm(name, n):
        return Arm(name, "reference" if name == "ref" else "quantization", name, np.zeros((2, n, 3), dtype=np.int64),
                   {s: np.zeros((2, n)) for s in SCORES})

    pools = RUTPools(("p", "q"), arm("ref", 2), {"sub": arm("sub", 1)})
    texts = {("ref", "p"): ["ab", "abc"], ("ref", "q"): ["x", ""], ("sub", "p"): [" ab"], ("sub", "q"): ["é"]}
    chars = character_pools(pools, texts)
    assert chars.reference.tokens.tolist() == [[[97, 98, PAD], [97, 98, 99]], [[120, PAD, PAD], [PAD] * 3]]
    assert chars.substitutes["sub"].tokens.tolist() == [[[32, 97, 98]], [[233, PAD, PAD]]]
    assert chars.reference.scores is pools.reference.scores and chars.prompts == pools.prompts
    with pytest.raises(ValueError, match="`texts` has no answers"):
        character_pools(pools, {k: v for k, v in texts.items() if k != ("sub", "q")})
    with pytest.raises(ValueError, match="`texts` of arm 'ref'"):
        character_pools(pools, {**texts, ("ref", "q"): ["x"]})
