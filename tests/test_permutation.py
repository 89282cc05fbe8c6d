"""Tests of dbpa_core.stats.permutation (Algorithm 1), in the manner of scipy's test_resampling."""

from __future__ import annotations

import math
from itertools import combinations

import numba
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal, assert_equal
from scipy import stats
from scipy.spatial.distance import cdist, jensenshannon

import dbpa_core as d
from dbpa_core.stats.discrepancy import JensenShannon
from dbpa_core.stats.similarity import similarity_matrix


def reference_jsd(sim, a, b, bins=30):
    """Independent JSD (base 2) of one split, with numpy's histogram and scipy's JS distance."""
    off = sim[np.triu_indices_from(sim, k=1)]
    value_range = (off.min(), off.max())
    a = np.asarray(a)
    p0 = sim[np.ix_(a, a)][np.triu_indices(len(a), k=1)]
    p1 = sim[np.ix_(a, np.asarray(b))].ravel()
    h0, _ = np.histogram(p0, bins=bins, range=value_range)
    h1, _ = np.histogram(p1, bins=bins, range=value_range)
    return jensenshannon(h0, h1, base=2) ** 2


def brute_force_pvalue(n, k0, statistic):
    """Enumerate every split of n outputs into k0 + (n - k0); statistic(a, b) on index lists."""
    observed = statistic(list(range(k0)), list(range(k0, n)))
    null = []
    for chosen in combinations(range(n), k0):
        rest = [i for i in range(n) if i not in chosen]
        null.append(statistic(list(chosen), rest))
    null = np.array(null)
    return observed, null, np.mean(null >= observed * (1 - 1e-12))


@pytest.fixture
def two_arms():
    rng = np.random.default_rng(12345)
    x = rng.normal(size=(6, 5)) + np.array([2.0, 0, 0, 0, 0])
    y = rng.normal(size=(5, 5)) + np.array([1.0, 1.0, 0, 0, 0])
    return x, y


class TestExact:
    def test_exact_jsd_equals_brute_force(self, two_arms):
        x, y = two_arms
        res = d.dbpa_test(x, y, n_resamples=10_000, rng=0)
        sim = similarity_matrix(np.vstack([x, y]), "cosine")
        observed, null, pvalue = brute_force_pvalue(len(sim), len(x), lambda a, b: reference_jsd(sim, a, b))
        assert res.exact
        assert_equal(res.n_resamples, math.comb(11, 6))
        assert_allclose(res.statistic, observed, rtol=1e-14)
        assert_allclose(np.sort(res.null_distribution), np.sort(null), rtol=1e-12, atol=1e-15)
        assert_allclose(res.pvalue, pvalue, rtol=1e-14)

    @pytest.mark.parametrize("similarity", ["neg_l1", "neg_l2", "cosine"])
    def test_exact_energy_equals_brute_force(self, two_arms, similarity):
        x, y = two_arms
        metric = {"neg_l1": "cityblock", "neg_l2": "euclidean", "cosine": "cosine"}[similarity]
        pooled = np.vstack([x, y])

        def energy(a, b):
            a, b = pooled[a], pooled[b]
            return 2 * cdist(a, b, metric).mean() - cdist(a, a, metric).mean() - cdist(b, b, metric).mean()

        res = d.dbpa_test(x, y, similarity=similarity, discrepancy="energy", n_resamples=10_000, rng=0)
        observed, null, pvalue = brute_force_pvalue(len(pooled), len(x), energy)
        assert_allclose(res.statistic, observed, rtol=1e-12)
        assert_allclose(res.pvalue, pvalue, rtol=1e-14)

    def test_exact_agrees_with_scipy_permutation_test(self, two_arms):
        """Exact p of scipy.stats.permutation_test on an index-permuting statistic."""
        x, y = two_arms
        sim = similarity_matrix(np.vstack([x, y]), "cosine")
        k0 = len(x)

        def statistic(a, b):
            return reference_jsd(sim, a.astype(int), b.astype(int))

        ref = stats.permutation_test((np.arange(k0), np.arange(k0, len(sim))), statistic,
                                     permutation_type="independent", vectorized=False,
                                     n_resamples=np.inf, alternative="greater", rng=0)
        res = d.dbpa_test(x, y, n_resamples=10_000, rng=0)
        assert_allclose(res.statistic, ref.statistic, rtol=1e-12)
        assert_allclose(res.pvalue, ref.pvalue, rtol=1e-14)

    def test_randomized_agrees_with_exact(self):
        rng = np.random.default_rng(7)
        x = rng.normal(size=(6, 4)) + 0.4
        y = rng.normal(size=(6, 4))
        exact = d.dbpa_test(x, y, discrepancy="energy", similarity="neg_l2", n_resamples=924, rng=0)
        assert exact.exact
        randomized = [d.dbpa_test(x, y, discrepancy="energy", similarity="neg_l2", n_resamples=900, rng=s).pvalue
                      for s in range(10)]
        assert not d.dbpa_test(x, y, n_resamples=900, rng=0).exact
        # mean of 10 × 900 resamples: standard error ≤ sqrt(.25 / 9000) ≈ 0.0053
        assert_allclose(np.mean(randomized), exact.pvalue, atol=0.02)

    def test_pvalue_formula_and_never_zero(self):
        rng = np.random.default_rng(0)
        x = rng.normal(size=(30, 4)) + 5
        y = rng.normal(size=(30, 4))
        res = d.dbpa_test(x, y, similarity="neg_l2", discrepancy="energy", n_resamples=99, rng=0)
        count = np.count_nonzero(res.null_distribution >= res.statistic)
        assert_equal(res.pvalue, (1 + count) / 100)
        assert res.pvalue == 0.01

    @pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
    def test_alternatives_match_scipy(self, alternative):
        rng = np.random.default_rng(3)
        x, y = rng.normal(size=(5, 1)), rng.normal(size=(4, 1)) + 0.3

        def energy(a, b):
            return stats.energy_distance(a, b) ** 2

        ref = stats.permutation_test((x[:, 0], y[:, 0]), energy, vectorized=False, n_resamples=np.inf,
                                     alternative=alternative, rng=0)
        res = d.dbpa_test(x, y, similarity="neg_l2", discrepancy="energy", alternative=alternative,
                          n_resamples=1000, rng=0)
        assert_allclose(res.statistic, ref.statistic, rtol=1e-12)
        assert_allclose(res.pvalue, ref.pvalue, rtol=1e-12)


class TestAgreementRandomized:
    def test_jsd_agrees_with_scipy_permutation_test_randomized(self):
        rng = np.random.default_rng(11)
        x = rng.normal(size=(12, 6)) + np.eye(6)[0] * 1.2
        y = rng.normal(size=(12, 6)) + np.eye(6)[1] * 1.2
        sim = similarity_matrix(np.vstack([x, y]), "cosine")

        def statistic(a, b):
            return reference_jsd(sim, a.astype(int), b.astype(int))

        ref = stats.permutation_test((np.arange(12), np.arange(12, 24)), statistic, vectorized=False,
                                     n_resamples=2000, alternative="greater", rng=1)
        res = d.dbpa_test(x, y, n_resamples=2000, rng=2)
        assert_allclose(res.statistic, ref.statistic, rtol=1e-12)
        # two independent Monte Carlo estimates: sd of the difference ≤ sqrt(2 · .25 / 2000) = 0.016
        assert_allclose(res.pvalue, ref.pvalue, atol=0.05)


class TestReproducibility:
    @pytest.mark.parametrize("discrepancy", ["jsd", "energy", "wasserstein"])
    def test_batch_size_does_not_change_result(self, discrepancy):
        rng = np.random.default_rng(5)
        x, y = rng.normal(size=(15, 8)), rng.normal(size=(13, 8))
        results = [d.dbpa_test(x, y, discrepancy=discrepancy, n_resamples=300, batch=b, rng=42)
                   for b in (1, 50, 100, None)]
        for res in results[1:]:
            assert_array_equal(res.null_distribution, results[0].null_distribution)
            assert_equal(res.pvalue, results[0].pvalue)

    @pytest.mark.parametrize("discrepancy", ["jsd", "energy", "ks"])
    def test_thread_count_does_not_change_result(self, discrepancy):
        rng = np.random.default_rng(6)
        x, y = rng.normal(size=(60, 8)), rng.normal(size=(60, 8))  # large enough for the parallel kernels
        before = numba.get_num_threads()
        try:
            numba.set_num_threads(1)
            one = d.dbpa_test(x, y, n_resamples=3000, discrepancy=discrepancy, rng=9)
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
            many = d.dbpa_test(x, y, n_resamples=3000, discrepancy=discrepancy, rng=9)
        finally:
            numba.set_num_threads(before)
        assert_array_equal(one.null_distribution, many.null_distribution)

    def test_serial_and_parallel_kernels_agree(self):
        from dbpa_core.stats import _kernels

        rng = np.random.default_rng(8)
        n, k0 = 30, 14
        perms = np.argsort(rng.random((257, n)), axis=1).astype(np.uint32)
        codes = rng.integers(0, 7, size=(n, n)).astype(np.uint8)  # the dtypes the engine passes
        codes = np.triu(codes) + np.triu(codes, 1).T
        counts = np.array([np.bincount(np.delete(codes[i], i), minlength=7) for i in range(n)])
        matrix = rng.random((n, n))
        matrix = matrix + matrix.T
        widths = rng.random(6)
        for name, args in (("pair_histograms", (perms, k0, codes, 7)),
                           ("pair_histograms_by_rows", (perms, k0, codes, counts)),
                           ("cdf_gaps", (perms, k0, codes, widths, True, counts)),
                           ("cdf_gaps", (perms, k0, codes, widths, False, np.zeros((0, 1), np.int64))),
                           ("block_sums", (perms, k0, matrix, matrix.sum(axis=1), matrix.sum()))):
            serial, parallel = _kernels._SERIAL[name](*args), _kernels._PARALLEL[name](*args)
            assert_array_equal(np.asarray(serial), np.asarray(parallel))
        h0, h1 = _kernels._SERIAL["pair_histograms"](perms, k0, codes, 7)
        g0, g1 = _kernels._SERIAL["pair_histograms_by_rows"](perms, k0, codes, counts)
        assert_array_equal(h0, g0)
        assert_array_equal(h1, g1)

    def test_kernels_do_not_depend_on_index_dtypes(self):
        """Narrow unsigned codes and indices (the fast path) count exactly what int64 ones count."""
        from dbpa_core.stats import _kernels

        rng = np.random.default_rng(81)
        n, k0, n_codes = 40, 17, 300  # more than 256 cells: uint16 codes
        perms = np.argsort(rng.random((64, n)), axis=1)
        codes = rng.integers(0, n_codes, size=(n, n))
        codes = np.triu(codes) + np.triu(codes, 1).T
        wide = _kernels._SERIAL["pair_histograms"](perms.astype(np.int64), k0, codes, n_codes)
        narrow = _kernels._SERIAL["pair_histograms"](perms.astype(np.uint32), k0, codes.astype(np.uint16), n_codes)
        for a, b in zip(wide, narrow):
            assert_array_equal(a, b)

    def test_support_codes_use_the_smallest_unsigned_dtype(self):
        sim = similarity_matrix(np.random.default_rng(3).normal(size=(30, 4)), "cosine")
        assert JensenShannon().support(sim).codes.dtype == np.uint8
        wide = d.get_discrepancy("ks").support(sim)  # 436 unique values
        assert wide.codes.dtype == np.uint16 and wide.n_codes > 256
        assert_array_equal(wide.cell_values[wide.codes], sim)

    def test_seed_types(self):
        rng = np.random.default_rng(0)
        x, y = rng.normal(size=(10, 3)), rng.normal(size=(10, 3))
        a = d.dbpa_test(x, y, rng=3)
        b = d.dbpa_test(x, y, rng=np.random.default_rng(3))
        assert_array_equal(a.null_distribution, b.null_distribution)
        c = d.dbpa_test(x, y, rng=4)
        assert not np.array_equal(a.null_distribution, c.null_distribution)


class TestRandomSplits:
    """The splits themselves: every arm-0 subset equally likely, rows are permutations."""

    @pytest.mark.parametrize(("n", "k0"), [(6, 3), (7, 2), (7, 5)])
    def test_every_subset_equally_likely(self, n, k0):
        from dbpa_core.stats.engine import random_splits

        splits = random_splits(np.random.default_rng(n * 10 + k0), n, k0, 60_000)
        assert splits.dtype == np.uint32
        assert_array_equal(np.sort(splits, axis=1), np.broadcast_to(np.arange(n), splits.shape))
        index = {subset: i for i, subset in enumerate(combinations(range(n), k0))}
        counts = np.bincount([index[tuple(sorted(row[:k0]))] for row in splits.tolist()], minlength=len(index))
        # Chi-square goodness of fit against the uniform over all C(n, k0) subsets; a generator
        # that favoured early positions (e.g. a plain modulo of too few bits) fails at this size.
        assert stats.chisquare(counts).pvalue > 1e-3
        # Each output lands in arm 0 with probability k0 / n (binomial sd ≈ 0.002 here).
        inclusion = np.bincount(splits[:, :k0].ravel(), minlength=n) / len(splits)
        assert_allclose(inclusion, k0 / n, atol=0.01)

    def test_extreme_uniforms(self):
        from dbpa_core.stats._kernels import shuffled_prefixes

        assert_array_equal(shuffled_prefixes(np.zeros((1, 3)), 5), [[0, 1, 2, 3, 4]])
        # The largest double below 1 picks the last position at each step (and stays in range):
        # [0 1 2 3 4] → [4 1 2 3 0] → [4 0 2 3 1] → [4 0 1 3 2].
        top = np.full((1, 3), np.nextafter(1.0, 0.0))
        assert_array_equal(shuffled_prefixes(top, 5), [[4, 0, 1, 3, 2]])


class TestCalibration:
    """Under H0 the rejection rate at α = 0.05 must be close to 0.05."""

    @pytest.mark.parametrize(("discrepancy", "similarity"), [("jsd", "cosine"), ("energy", "neg_l2")])
    def test_null_rejection_rate_and_uniform_pvalues(self, discrepancy, similarity):
        rng = np.random.default_rng(20250713)
        pvalues = np.array([
            d.dbpa_test(rng.normal(size=(10, 5)) + 1.0, rng.normal(size=(10, 5)) + 1.0,
                        similarity=similarity, discrepancy=discrepancy, n_resamples=199, rng=rng).pvalue
            for _ in range(1000)
        ])
        rate = np.mean(pvalues <= 0.05)
        # binomial sd at n=1000 is 0.0069: [0.03, 0.07] is ±2.9 sd; an anti-conservative or
        # always-accepting test falls outside.
        assert 0.03 <= rate <= 0.07, rate
        assert stats.kstest(pvalues, "uniform").pvalue > 0.01

    def test_power_clear_shift(self):
        """Outputs around 2·e1 vs around 2·e1 + 1.5·e0 (a 37° turn of the mean), noise sd 0.3, k = 20."""
        rng = np.random.default_rng(99)
        centre, shift = 2 * np.eye(8)[1], 1.5 * np.eye(8)[0]
        for discrepancy, similarity in (("jsd", "cosine"), ("energy", "neg_l2")):
            hits = [
                d.dbpa_test(centre + 0.3 * rng.normal(size=(20, 8)),
                            centre + shift + 0.3 * rng.normal(size=(20, 8)),
                            similarity=similarity, discrepancy=discrepancy, n_resamples=199, rng=rng).pvalue <= 0.05
                for _ in range(100)
            ]
            assert np.mean(hits) >= 0.9, (discrepancy, np.mean(hits))


class TestRealText:
    """Split one real arm of the paper's responses in two halves: H0 holds by construction."""

    @pytest.mark.parametrize("similarity", ["rouge_l", "bleu"])
    def test_null_calibration_on_persona_responses(self, persona_arms, similarity):
        rng = np.random.default_rng(2025)
        matrices = [similarity_matrix(texts, similarity) for texts in persona_arms.values()]
        pvalues = []
        for replicate in range(1000):
            sim = matrices[replicate % len(matrices)]
            order = rng.permutation(len(sim))
            res = d.dbpa_test_precomputed(sim[np.ix_(order, order)], 10, n_resamples=199, rng=rng)
            pvalues.append(res.pvalue)
        rate = np.mean(np.array(pvalues) <= 0.05)
        assert 0.03 <= rate <= 0.07, rate

    def test_text_similarity_through_engine(self, persona_arms):
        doctor, child = persona_arms["doctor"], persona_arms["child"]
        res = d.dbpa_test(doctor[:10], child[:10], similarity="rouge_l", n_resamples=500, rng=0)
        direct = d.dbpa_test_precomputed(similarity_matrix(doctor[:10] + child[:10], "rouge_l"), 10,
                                         n_resamples=500, rng=0)
        assert_equal(res.pvalue, direct.pvalue)
        assert_equal(res.statistic, direct.statistic)


class TestDegenerate:
    def test_identical_outputs_give_p_one_with_warning(self):
        x = np.tile([0.6, 0.8, 0.0], (10, 1))
        for discrepancy in ("jsd", "energy", "ks", "centroid", "mmd"):
            with pytest.warns(d.DegenerateSampleWarning, match="identical"):
                res = d.dbpa_test(x, x.copy(), discrepancy=discrepancy, rng=0)
            assert res.pvalue == 1.0
            assert res.warnings

    def test_identical_texts(self):
        with pytest.warns(d.DegenerateSampleWarning):
            res = d.dbpa_test(["same answer"] * 5, ["same answer"] * 5, similarity="bleu", rng=0)
        assert res.pvalue == 1.0

    def test_empty_texts_are_kept(self):
        res = d.dbpa_test(["", "a b c d", "a b c e"], ["x y z", "", "x y w"], similarity="rouge_l", rng=0)
        assert res.n_original == 3 and res.n_perturbed == 3

    def test_unequal_arms(self):
        rng = np.random.default_rng(1)
        res = d.dbpa_test(rng.normal(size=(5, 3)), rng.normal(size=(9, 3)) + 3, rng=0, discrepancy="energy",
                          similarity="neg_l2")
        assert (res.n_original, res.n_perturbed) == (5, 9)
        assert res.pvalue < 0.01


class TestBadInput:
    def setup_method(self):
        rng = np.random.default_rng(0)
        self.x, self.y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))

    @pytest.mark.parametrize(("kwargs", "match"), [
        ({"x": np.ones((1, 3))}, "`x` needs at least 2"),
        ({"y": np.ones((1, 3))}, "`y` needs at least 2"),
        ({"x": np.ones(5)}, "`x` must be 2-D"),
        ({"y": np.ones((2, 2, 2))}, "`y` must be 2-D"),
        ({"y": np.ones((5, 4))}, "same embedding dimension"),
        ({"x": np.full((5, 3), np.nan)}, "`x` contains NaN"),
        ({"y": np.full((5, 3), np.inf)}, "`y` contains NaN or infinite"),
        ({"n_resamples": 0}, "`n_resamples` must be an integer >= 1"),
        ({"n_resamples": 2.5}, "`n_resamples`"),
        ({"similarity": "dot"}, "`similarity` must be one of"),
        ({"discrepancy": "jsdd"}, "`discrepancy` must be one of"),
        ({"alternative": "bigger"}, "`alternative` must be one of"),
        ({"rng": "seed"}, "`rng` must be"),
        ({"rng": -1}, "`rng` must be"),
        ({"batch": 0}, "`batch`"),
        ({"x": [["a", "b"]] * 3}, "`x` must be a 2-D numeric"),
        ({"similarity": "bleu"}, "`x` must be a list of output texts|`x\\[0\\]` must be a str"),
    ])
    def test_messages_name_the_parameter(self, kwargs, match):
        args = {"x": self.x, "y": self.y, **kwargs}
        with pytest.raises(ValueError, match=match):
            d.dbpa_test(args.pop("x"), args.pop("y"), **args)

    def test_zero_embedding_with_cosine(self):
        x = self.x.copy()
        x[2] = 0
        with pytest.raises(ValueError, match="row 2"):
            d.dbpa_test(x, self.y)

    def test_text_similarity_with_embedding_only_discrepancy(self):
        with pytest.raises(ValueError, match="needs embeddings"):
            d.dbpa_test(["a b", "c d"], ["e f", "g h"], similarity="bleu", discrepancy="mmd")

    def test_precomputed_bad_inputs(self):
        sim = similarity_matrix(np.vstack([self.x, self.y]), "cosine")
        with pytest.raises(ValueError, match="`similarity_matrix` must be square"):
            d.dbpa_test_precomputed(sim[:, :5], 3)
        asym = sim.copy()
        asym[0, 1] += 0.1
        with pytest.raises(ValueError, match="symmetric"):
            d.dbpa_test_precomputed(asym, 5)
        with pytest.raises(ValueError, match="`n_original` must leave"):
            d.dbpa_test_precomputed(sim, 9)
        with pytest.raises(ValueError, match="`n_original`"):
            d.dbpa_test_precomputed(sim, 1)
        with pytest.raises(ValueError, match="needs embeddings"):
            d.dbpa_test_precomputed(sim, 5, discrepancy="centroid")

    def test_result_is_frozen(self):
        res = d.dbpa_test(self.x, self.y, rng=0)
        with pytest.raises(AttributeError):
            res.pvalue = 0.0
