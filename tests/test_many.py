"""Tests of dbpa_core.stats.many (one perturbation across many prompts, stratified permutation test)."""

from __future__ import annotations

import math
from itertools import combinations, product

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist, jensenshannon

import dbpa_core as d
from dbpa_core.stats.discrepancy import DISCREPANCY_NAMES
from dbpa_core.stats.permutation import DegenerateSampleWarning


def prompts(rng, sizes, *, dim=5, spread=5.0, shift=0.0):
    """Per-prompt arms around prompt centres far apart (strong prompt effects); arm 1 moved by ``shift``."""
    xs, ys = [], []
    for k0, k1 in sizes:
        centre = rng.normal(size=dim) * spread
        scale = rng.uniform(0.5, 2.0)  # prompts differ in spread too
        xs.append(centre + scale * rng.normal(size=(k0, dim)))
        ys.append(centre + shift + scale * rng.normal(size=(k1, dim)))
    return xs, ys


def reference_jsd(x, y, bins=30):
    """JSD (base 2) of one prompt's split with numpy's histogram and scipy's JS distance."""
    pooled = np.vstack([x, y])
    unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    sim = unit @ unit.T
    off = sim[np.triu_indices_from(sim, k=1)]
    k0 = len(x)
    p0 = sim[:k0, :k0][np.triu_indices(k0, k=1)]
    p1 = sim[:k0, k0:].ravel()
    h0, _ = np.histogram(p0, bins=bins, range=(off.min(), off.max()))
    h1, _ = np.histogram(p1, bins=bins, range=(off.min(), off.max()))
    return jensenshannon(h0, h1, base=2) ** 2


def reference_energy(x, y):
    """Energy distance (V-statistic) with the cosine distance, from scipy's cdist."""
    return 2 * cdist(x, y, "cosine").mean() - cdist(x, x, "cosine").mean() - cdist(y, y, "cosine").mean()


def brute_force(xs, ys, statistic):
    """Every joint split of every prompt: (T_obs, the sorted null, the exact p)."""
    pooled = [np.vstack([x, y]) for x, y in zip(xs, ys)]
    pairs = np.array([len(x) * len(y) for x, y in zip(xs, ys)], dtype=float)
    weights = pairs / pairs.sum()
    per_prompt = []
    for data, x in zip(pooled, xs):
        n, k0 = len(data), len(x)
        per_prompt.append([statistic(data[list(a)], data[[i for i in range(n) if i not in a]])
                           for a in combinations(range(n), k0)])
    observed = sum(w * statistic(x, y) for w, x, y in zip(weights, xs, ys))
    null = np.array([sum(w * v for w, v in zip(weights, values)) for values in product(*per_prompt)])
    return observed, np.sort(null), np.mean(null >= observed - 1e-12)


class TestExact:
    @pytest.mark.parametrize(("omega", "reference"), [("jsd", reference_jsd), ("energy", reference_energy)])
    def test_equals_brute_force(self, omega, reference):
        xs, ys = prompts(np.random.default_rng(1), [(3, 3), (3, 2), (2, 3)])  # 20 · 10 · 10 joint splits
        res = d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=5000, rng=0)
        observed, null, pvalue = brute_force(xs, ys, reference)
        assert res.exact and res.n_resamples == 2000
        assert_allclose(res.statistic, observed, rtol=1e-12)
        assert_allclose(np.sort(res.null_distribution), null, rtol=1e-10, atol=1e-14)
        assert res.pvalue == pytest.approx(pvalue, abs=1e-12)
        # Each prompt's own p equals DBPA's exact test of that prompt alone.
        for i, (x, y) in enumerate(zip(xs, ys)):
            assert res.per_prompt[i].pvalue == pytest.approx(d.dbpa_test(x, y, discrepancy=omega).pvalue)
            assert res.per_prompt[i].exact

    @pytest.mark.parametrize("omega", DISCREPANCY_NAMES)
    def test_every_discrepancy_against_single_prompt_tests(self, omega):
        """The combined exact null, built from dbpa_test's own statistic on every split (another code path)."""
        xs, ys = prompts(np.random.default_rng(2), [(3, 3), (2, 3)], shift=0.5)

        def statistic(a, b):
            return d.dbpa_test(a, b, discrepancy=omega, n_resamples=1).statistic

        res = d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=1000, rng=0)
        observed, null, pvalue = brute_force(xs, ys, statistic)
        assert res.exact
        assert_allclose(res.statistic, observed, rtol=1e-10)
        assert_allclose(np.sort(res.null_distribution), null, rtol=1e-9, atol=1e-12)
        assert res.pvalue == pytest.approx(pvalue, abs=1e-12)

    def test_randomized_approaches_exact(self):
        xs, ys = prompts(np.random.default_rng(3), [(3, 3)] * 3, shift=0.7)  # 8 000 joint splits
        exact = d.dbpa_test_many(xs, ys, discrepancy="energy", n_resamples=10_000, rng=0)
        randomized = d.dbpa_test_many(xs, ys, discrepancy="energy", n_resamples=4_000, rng=0)
        assert exact.exact and not randomized.exact and randomized.n_resamples == 4000
        se = math.sqrt(exact.pvalue * (1 - exact.pvalue) / 4000)
        assert abs(randomized.pvalue - exact.pvalue) <= 4 * se + 1 / 4001
        assert randomized.pvalue >= 1 / 4001  # the +1 rule: never 0


def rejection_rate(pvalues, alpha):
    return float(np.mean(np.asarray(pvalues) <= alpha))


def mc_band(alpha, n):
    """A 3.5-standard-error band around α for n independent audits."""
    half = 3.5 * math.sqrt(alpha * (1 - alpha) / n)
    return alpha - half, alpha + half


class TestCalibration:
    @pytest.mark.parametrize("omega", ["jsd", "energy"])
    def test_null_with_strong_prompt_effects(self, omega):
        """No change anywhere, prompts far apart and unbalanced in k: the stratified test keeps its level."""
        rng = np.random.default_rng(7)
        n_audits, pvalues = 300, []
        for _ in range(n_audits):
            sizes = [(int(rng.integers(3, 6)), int(rng.integers(2, 6))) for _ in range(5)]
            xs, ys = prompts(rng, sizes, spread=10.0)
            pvalues.append(d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=99, rng=rng).pvalue)
        for alpha in (0.05, 0.2):
            low, high = mc_band(alpha, n_audits)
            assert low <= rejection_rate(pvalues, alpha) <= high, (alpha, rejection_rate(pvalues, alpha))

    def test_ignoring_prompts_fails_in_unbalanced_designs(self):
        """Pooling each arm over prompts (a free permutation) reads the prompt mix as a change; ours does not."""
        rng = np.random.default_rng(8)
        pooled, stratified = [], []
        for _ in range(40):
            xs, ys = prompts(rng, [(8, 2), (2, 8)], spread=10.0)  # prompt A mostly arm 0, prompt B mostly arm 1
            pooled.append(d.dbpa_test(np.vstack(xs), np.vstack(ys), discrepancy="energy", n_resamples=99,
                                      rng=rng).pvalue)
            stratified.append(d.dbpa_test_many(xs, ys, discrepancy="energy", n_resamples=99, rng=rng).pvalue)
        assert rejection_rate(pooled, 0.05) > 0.9
        assert rejection_rate(stratified, 0.05) <= 0.15

    @pytest.fixture(scope="class")
    def paper_prompts(self):
        """GPT-4's answers to the paper's 9 prompts of one seed (20 each), as shipped MiniLM vectors."""
        from dbpa_core.data.store import text_hash
        from dbpa_core.paper.embeddings import load_shipped_embeddings, shipped_embeddings
        from dbpa_core.paper.loaders import load_paraphrases

        run = load_paraphrases("SWNorth-gpt-4-0613-20231016", 9)
        groups = [run.base, *run.paraphrases]
        shipped = shipped_embeddings()
        found = load_shipped_embeddings([t for g in groups for t in g], embedder_key=shipped.embedder_key)
        return [np.stack([found[text_hash(t)] for t in g]) for g in groups]

    @pytest.mark.parametrize("omega", ["jsd", "energy"])
    def test_null_on_the_papers_responses(self, paper_prompts, omega):
        """Within each prompt, two random halves of 5 of one model's answers: no change, real text."""
        rng = np.random.default_rng(11)
        n_audits, pvalues = 200, []
        for _ in range(n_audits):
            picks = [rng.permutation(len(g))[:10] for g in paper_prompts]
            xs = [g[p[:5]] for g, p in zip(paper_prompts, picks)]
            ys = [g[p[5:]] for g, p in zip(paper_prompts, picks)]
            pvalues.append(d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=99, rng=rng).pvalue)
        low, high = mc_band(0.1, n_audits)
        assert low <= rejection_rate(pvalues, 0.1) <= high


class TestPower:
    def test_every_prompt_moves_a_little(self):
        """60 prompts × 5 outputs, each shifted a little: the combined test finds it, no single prompt does."""
        rng = np.random.default_rng(5)
        combined, any_prompt = [], []
        for _ in range(20):
            xs, ys = prompts(rng, [(5, 5)] * 60, dim=8, spread=3.0)
            direction = rng.normal(size=8)
            ys = [y + 0.4 * math.sqrt(8) * direction / np.linalg.norm(direction) for y in ys]
            res = d.dbpa_test_many(xs, ys, discrepancy="energy", n_resamples=499, rng=rng)
            combined.append(res.pvalue)
            any_prompt.append(d.adjust_pvalues([p.pvalue for p in res.per_prompt], "bonferroni").n_rejected > 0)
        assert rejection_rate(combined, 0.05) >= 0.6
        assert not any(any_prompt)  # per-prompt tests + Bonferroni: no prompt is ever significant


class TestInvariance:
    @pytest.fixture
    def mixed(self):
        # Prompts with a table of every split (C(8, 4) = 70) and one drawn split by split (C(24, 12) > B).
        return prompts(np.random.default_rng(4), [(4, 4), (3, 5), (12, 12)], shift=0.3)

    @pytest.mark.parametrize("omega", ["jsd", "energy", "wasserstein"])
    def test_batch_size_does_not_matter(self, mixed, omega):
        xs, ys = mixed
        results = [d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=300, rng=42, batch=b) for b in (1, 7, 300)]
        for other in results[1:]:
            assert_array_equal(other.null_distribution, results[0].null_distribution)
            assert other.pvalue == results[0].pvalue
            assert [p.pvalue for p in other.per_prompt] == [p.pvalue for p in results[0].per_prompt]

    @pytest.mark.parametrize("omega", ["jsd", "energy"])
    def test_parallel_kernels_give_the_serial_result(self, mixed, omega, monkeypatch):
        from dbpa_core.stats import _kernels

        xs, ys = mixed
        monkeypatch.setattr(_kernels, "PARALLEL_MIN_WORK", 10**18)
        serial = d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=300, rng=5)
        monkeypatch.setattr(_kernels, "PARALLEL_MIN_WORK", 0)
        parallel = d.dbpa_test_many(xs, ys, discrepancy=omega, n_resamples=300, rng=5)
        assert_array_equal(parallel.null_distribution, serial.null_distribution)

    def test_seed(self, mixed):
        xs, ys = mixed
        a = d.dbpa_test_many(xs, ys, n_resamples=200, rng=3)
        b = d.dbpa_test_many(xs, ys, n_resamples=200, rng=np.random.default_rng(3))
        c = d.dbpa_test_many(xs, ys, n_resamples=200, rng=4)
        assert_array_equal(a.null_distribution, b.null_distribution)
        assert not np.array_equal(a.null_distribution, c.null_distribution)

    def test_result_is_frozen_and_complete(self, mixed):
        res = d.dbpa_test_many(*mixed, n_resamples=200, rng=0, fdr=0.2)
        with pytest.raises(AttributeError):
            res.pvalue = 0.0
        assert res.n_prompts == 3 and res.fdr == 0.2
        assert sum(p.weight for p in res.per_prompt) == pytest.approx(1.0)
        assert res.per_prompt[2].n_original == 12 and not res.per_prompt[2].exact
        assert all(p.qvalue >= p.pvalue for p in res.per_prompt)

    def test_degenerate_prompt(self):
        xs, ys = prompts(np.random.default_rng(6), [(4, 4), (4, 4)])
        xs[1] = np.ones((4, 5))
        ys[1] = np.ones((4, 5))
        with pytest.warns(DegenerateSampleWarning, match="1 of 2 prompts"):
            res = d.dbpa_test_many(xs, ys, rng=0)
        assert res.per_prompt[1].pvalue == 1.0 and res.per_prompt[1].degenerate


class TestBadInput:
    @pytest.fixture
    def ok(self):
        return prompts(np.random.default_rng(0), [(3, 3), (3, 3)])

    @pytest.mark.parametrize(("change", "match"), [
        (lambda xs, ys: (xs, ys[:1]), "`x_groups` and `y_groups` must hold the same prompts"),
        (lambda xs, ys: ([], []), "`x_groups` must hold at least one"),
        (lambda xs, ys: (xs[0], ys), "`x_groups` must be a sequence"),
        (lambda xs, ys: (xs, 5), "`y_groups` must be a sequence"),
        (lambda xs, ys: ([xs[0], xs[1][:1]], ys), r"x_groups\[1\]"),
        (lambda xs, ys: (xs, [ys[0], ys[1][:, :2]]), "one embedding dimension"),
        (lambda xs, ys: (xs, [ys[0], np.full((3, 5), np.nan)]), r"y_groups\[1\]"),
    ])
    def test_groups(self, ok, change, match):
        with pytest.raises(ValueError, match=match):
            d.dbpa_test_many(*change(*ok))

    @pytest.mark.parametrize(("keyword", "value"), [("n_resamples", 0), ("fdr", 0.0), ("fdr", 1.5), ("rng", "x"),
                                                ("discrepancy", "nope"), ("similarity", "nope"), ("batch", 0)])
    def test_settings(self, ok, keyword, value):
        with pytest.raises(ValueError, match=f"`{keyword}`"):
            d.dbpa_test_many(*ok, **{keyword: value})


def test_text_similarity_groups():
    """BLEU / ROUGE-L read the texts themselves; each prompt's texts are compared only among themselves."""
    xs = [["the cat sat", "a cat sat down", "the cat is sitting"], ["buy low", "sell high", "buy and hold"]]
    ys = [["the dog ran", "a dog ran off", "the dog is running"], ["buy low", "sell high", "hold cash"]]
    res = d.dbpa_test_many(xs, ys, similarity="rouge_l", discrepancy="energy", n_resamples=1000, rng=0)
    assert res.exact and res.n_resamples == 400 and res.similarity == "rouge_l"
    assert res.per_prompt[0].pvalue <= res.per_prompt[1].pvalue
    with pytest.raises(ValueError, match="`discrepancy='mmd'` needs embeddings"):
        d.dbpa_test_many(xs, ys, similarity="bleu", discrepancy="mmd")
