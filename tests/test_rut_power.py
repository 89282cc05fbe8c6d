"""Tests of dbpa_core.rut.power: power of RUT, MMD and KS from answer pools; score selection (AUROC)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dbpa_core.rut.mmd import hamming_mmd_test
from dbpa_core.rut.pools import Arm, RUTPools
from dbpa_core.rut.power import auroc, power_study, score_selection
from dbpa_core.rut.scoring import SCORES
from dbpa_core.rut.uniformity import rank_uniformity_test

LENGTH, VOCABULARY = 8, 6


def _tokens(rng, probabilities, n):
    """n sequences per prompt, each position drawn from the prompt's categorical distribution."""
    cumulative = probabilities.cumsum(axis=-1)  # (P, L, V)
    u = rng.random((probabilities.shape[0], n, LENGTH, 1))
    return (u > cumulative[:, None]).sum(axis=-1)


def synthetic_pools(seed, *, prompts=120, reference=60, answers=12, shifts=None):
    """Pools whose substitutes shift the log-rank score by ``shift`` and favour token 0 by ``shift``."""
    shifts = shifts or {"near": 0.0, "far": 1.0}
    rng = np.random.default_rng(seed)
    probabilities = rng.dirichlet(np.full(VOCABULARY, 0.8), size=(prompts, LENGTH))
    centre = rng.normal(size=(prompts, 1))

    def arm(name, kind, n, shift):
        other = probabilities.copy()
        other[..., 0] += shift
        other /= other.sum(axis=-1, keepdims=True)
        scores = {s: rng.normal(size=(prompts, n)) for s in SCORES}
        scores["log_rank"] = centre + shift + rng.normal(size=(prompts, n))
        return Arm(name, kind, name, _tokens(rng, other, n), scores)

    return RUTPools(tuple(f"prompt {i}" for i in range(prompts)), arm("reference", "reference", reference, 0.0),
                    {name: arm(name, "quantization", answers, shift) for name, shift in shifts.items()})


def test_power_at_q_zero_is_alpha_for_every_method():
    pools = synthetic_pools(1, prompts=200)
    curves = power_study(pools, n_prompts=30, m=20, q_values=[0.0], n_trials=600, n_resamples=199, rng=2)
    for method in ("rut", "mmd", "ks"):
        # binomial sd 0.0089 at α = 0.05: each trial is an exact-level test given the pools (module docstring)
        assert 0.025 <= curves["far"].power[method][0] <= 0.08, method
        # common random numbers: at q = 0 every substitute sees the same audits
        assert curves["far"].power[method][0] == curves["near"].power[method][0]


def _independent_audits(pools, substitute, *, trials, n, m, q, seed):
    """The same audits drawn one by one and tested with the one-audit functions (a slow reference)."""
    rng = np.random.default_rng(seed)
    arm = pools.substitutes[substitute]
    rejected = {"rut": 0, "mmd": 0, "ks": 0}
    for _ in range(trials):
        rows = rng.choice(len(pools.prompts), size=n, replace=False)
        target_scores, target_tokens, ref_scores, ref_tokens = [], [], [], []
        for row in rows:
            drawn = rng.choice(pools.reference.n_answers, size=m + 1, replace=False)
            if rng.random() < q:
                a = rng.integers(arm.n_answers)
                target_scores.append(arm.scores["log_rank"][row, a])
                target_tokens.append(arm.tokens[row, a])
            else:
                target_scores.append(pools.reference.scores["log_rank"][row, drawn[m]])
                target_tokens.append(pools.reference.tokens[row, drawn[m]])
            ref_scores.append(pools.reference.scores["log_rank"][row, drawn[:m]])
            ref_tokens.append(pools.reference.tokens[row, drawn[:m]])
        rut = rank_uniformity_test(np.array(target_scores), np.array(ref_scores), rng=rng)
        mmd = hamming_mmd_test(np.array(target_tokens), np.array(ref_tokens), n_resamples=199, rng=rng)
        rejected["rut"] += rut.pvalue <= 0.05
        rejected["ks"] += rut.ks_pvalue <= 0.05
        rejected["mmd"] += mmd.pvalue <= 0.05
    return {k: v / trials for k, v in rejected.items()}


def test_power_agrees_with_the_one_audit_functions():
    pools = synthetic_pools(3, shifts={"mid": 0.35})
    trials, n, m, q = 300, 25, 15, 0.6
    study = power_study(pools, n_prompts=n, m=m, q_values=[q], n_trials=trials, n_resamples=199, rng=4)["mid"]
    reference = _independent_audits(pools, "mid", trials=trials, n=n, m=m, q=q, seed=5)
    for method, expected in reference.items():
        got = study.power[method][0]
        sd = np.sqrt((got * (1 - got) + expected * (1 - expected)) / trials)
        assert 0.1 < expected < 0.95, (method, expected)  # a test with something to agree on
        assert abs(got - expected) <= 4 * max(sd, 0.01), (method, got, expected)


def test_mmd_path_matches_the_exact_enumeration():
    """Identical reference answers: every audit is the same, so power = 1{exact p ≤ α}."""
    reference = np.tile(np.array([[[1, 1, 1, 1, 2, 2, 2, 2]]]), (3, 5, 1))
    for target, expected in (([[1, 1, 1, 1, 3, 3, 3, 3]] * 3, 1.0),  # p = 1/27 in every prompt's worst case
                             ([[1, 1, 1, 1, 3, 3, 3, 3]] * 2 + [[1, 1, 1, 1, 2, 2, 2, 2]], 0.0)):
        target = np.array(target)
        exact = hamming_mmd_test(target, reference[:, :2], n_resamples=10_000).pvalue
        scores = {s: np.zeros((3, 5)) for s in SCORES}
        pools = RUTPools(("a", "b", "c"), Arm("reference", "reference", "r", reference, scores),
                         {"sub": Arm("sub", "quantization", "s", target[:, None, :], {s: np.zeros((3, 1))
                                                                                       for s in SCORES})})
        curves = power_study(pools, n_prompts=3, m=2, q_values=[1.0], n_trials=40, n_resamples=2000, rng=0)
        assert (exact <= 0.05) == bool(expected)
        assert curves["sub"].power["mmd"][0] == expected


def test_power_grows_with_q_and_the_auc_table_is_reproducible():
    pools = synthetic_pools(6)
    kwargs = dict(n_prompts=30, m=20, q_values=[0.0, 0.5, 1.0], n_trials=120, n_resamples=99)
    first = power_study(pools, rng=7, **kwargs)["far"]
    again = power_study(pools, rng=7, **kwargs)["far"]
    other = power_study(pools, rng=8, **kwargs)["far"]
    assert first.power_auc == again.power_auc
    assert all(np.array_equal(first.power[k], again.power[k]) for k in first.power)
    assert first.power_auc != other.power_auc
    for method in ("rut", "mmd", "ks"):
        power = first.power[method]
        assert power[0] < power[1] < power[2] and power[2] >= 0.9, (method, power)
        assert first.power_auc[method] == pytest.approx(np.trapezoid(power, [0.0, 0.5, 1.0]))
    assert first.mean_share_bound[0] < first.mean_share_bound[2] <= 1.0


def test_auroc_agrees_with_mann_whitney_and_the_pairwise_definition():
    rng = np.random.default_rng(9)
    x, y = rng.integers(0, 5, 40).astype(float), rng.integers(0, 5, 30).astype(float)
    x[:3] = np.inf
    pairwise = np.mean([(a > b) + 0.5 * (a == b) for a in x for b in y])
    assert auroc(x, y) == pytest.approx(pairwise, rel=1e-14)
    finite = x[3:]
    u = stats.mannwhitneyu(finite, y).statistic
    assert auroc(finite, y) == pytest.approx(u / (len(finite) * len(y)), rel=1e-14)
    with pytest.raises(ValueError, match="NaN"):
        auroc([np.nan, 1.0], [1.0])


def test_score_selection_finds_the_score_that_moves():
    pools = synthetic_pools(10)
    selection = score_selection(pools, n_prompts=10, n_trials=100, rng=11)
    far = selection["far"]
    assert far.best == "log_rank" and far.mean[SCORES.index("log_rank")] > 0.65
    others = [far.mean[j] for j, s in enumerate(SCORES) if s != "log_rank"]
    assert max(abs(v - 0.5) for v in others) < 0.05
    assert abs(selection["near"].mean[SCORES.index("log_rank")] - 0.5) < 0.05
    assert far.aurocs.shape == (100, len(SCORES)) and far.n_answers == 12


def test_bad_inputs():
    pools = synthetic_pools(12, prompts=10, reference=8, answers=3)
    with pytest.raises(ValueError, match="`pools`"):
        power_study({"reference": 1})
    with pytest.raises(ValueError, match="`substitute`"):
        power_study(pools, substitutes=["nope"], n_prompts=5, m=3)
    with pytest.raises(ValueError, match="`m`"):
        power_study(pools, n_prompts=5, m=8)
    with pytest.raises(ValueError, match="`n_prompts`"):
        power_study(pools, n_prompts=11, m=3)
    with pytest.raises(ValueError, match="`q_values`"):
        power_study(pools, n_prompts=5, m=3, q_values=[1.2])
    with pytest.raises(ValueError, match="`score`"):
        power_study(pools, n_prompts=5, m=3, score="perplexity")


def test_monte_carlo_error_of_the_power_auc_is_calibrated():
    """auc_se (from the per-trial contributions) matches the spread of the AUC over independent seeds."""
    pools = synthetic_pools(13, shifts={"mid": 0.4})
    kwargs = dict(n_prompts=20, m=12, q_values=[0.0, 0.25, 0.5, 0.75, 1.0], n_trials=60, n_resamples=49)
    runs = [power_study(pools, rng=seed, **kwargs)["mid"] for seed in range(24)]
    for method in ("rut", "mmd", "ks"):
        aucs = np.array([r.power_auc[method] for r in runs])
        se = np.mean([r.auc_se(method) for r in runs])
        assert 0.6 < aucs.std(ddof=1) / se < 1.6, (method, aucs.std(ddof=1), se)
        first = runs[0]
        assert first._per_trial_auc(method).mean() == pytest.approx(first.power_auc[method], abs=1e-12)
        assert first.auc_difference(method, method) == (0.0, 0.0)
    difference, se = runs[0].auc_difference("rut", "ks")
    assert difference == pytest.approx(runs[0].power_auc["rut"] - runs[0].power_auc["ks"], abs=1e-12) and se > 0


def test_character_kernel_is_the_token_path_on_code_points():
    """kernel="character" runs the same study on the answers' characters: texts whose characters are the
    synthetic tokens (as letters) give the token study's MMD rejections exactly; RUT and KS do not change."""
    from dbpa_core.rut.power import recorded_audit

    pools = synthetic_pools(3, prompts=30, reference=12, answers=4)
    arms = [pools.reference, *pools.substitutes.values()]
    texts = {(arm.name, p): ["".join(chr(97 + t) for t in answer) for answer in arm.tokens[i]]
             for arm in arms for i, p in enumerate(pools.prompts)}
    kwargs = dict(n_prompts=10, m=5, q_values=[0.0, 0.5, 1.0], n_trials=20, n_resamples=49, rng=4)
    tokens, characters = power_study(pools, **kwargs), power_study(pools, kernel="character", texts=texts, **kwargs)
    for name in pools.substitutes:
        for method in ("rut", "mmd", "ks"):
            np.testing.assert_array_equal(tokens[name].rejections[method], characters[name].rejections[method])
    one = recorded_audit(pools, "far", 1.0, n_prompts=10, m=5, kernel="character", texts=texts)
    assert one.mmd.statistic == pytest.approx(recorded_audit(pools, "far", 1.0, n_prompts=10, m=5).mmd.statistic)
    with pytest.raises(ValueError, match="`kernel`"):
        power_study(pools, kernel="word", **kwargs)
