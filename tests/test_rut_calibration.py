"""Calibration of the RUT audit as collected and recorded (dbpa_core.rut.collect, dbpa_core.rut.data).

The model audited against itself must be rejected in α of audits: the
rejection rate over many H₀ re-draws has to lie in the binomial interval
around α.  The collection path is tested with a sampler that seeds its token
draws the way llama.cpp does (the call's seed alone), which is what made the
first recording reject the honest model; the recorded path on the shipped
data; and the live path with the real local model.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dbpa_core.rut import collect
from dbpa_core.rut.collect import live_rut_audits, live_rut_scores, prompt_seed, rut_prompts
from dbpa_core.rut.data import load_recorded_rut, rut_arrays
from dbpa_core.rut.scoring import SCORES
from dbpa_core.rut.uniformity import rank_uniformity_test, substituted_share_bound
from dbpa_core.samplers.base import Completion, Sampler, sample_seed

ALPHA = 0.05


def binomial_interval(trials: int, alpha: float = ALPHA, level: float = 0.999) -> tuple[float, float]:
    """Rejection rates a calibrated test stays within with probability ``level``."""
    low, high = stats.binom.interval(level, trials, alpha)
    return low / trials, high / trials


class SeededTokenSampler(Sampler):
    """Draws tokens by inverse CDF from uniforms seeded by the call's seed alone, as llama.cpp's sampler does.

    Each prompt has its own next-token distribution (a Zipf law whose exponent
    depends on the prompt); token t is the (t + 1)-th most likely one.
    """

    name = "seeded-tokens"

    @staticmethod
    def probabilities(prompt: str) -> np.ndarray:
        exponent = 1.0 + (sum(map(ord, prompt)) % 7) / 7
        weights = 1.0 / np.arange(1, 51) ** exponent
        return weights / weights.sum()

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        uniforms = np.random.default_rng(sample_seed(seed, index)).random(max_tokens)
        tokens = np.minimum(np.searchsorted(np.cumsum(self.probabilities(prompt)), uniforms), 49)
        return Completion(" ".join(f"t{t}" for t in tokens))


class RankScorer:
    """The reference scorer's log_rank for :class:`SeededTokenSampler`'s texts."""

    def score(self, prompt: str, response: str) -> dict[str, float]:
        ranks = 1 + np.array([int(token[1:]) for token in response.split()])
        return {"log_rank": float(np.log(ranks).mean())}

    def score_many(self, prompt: str, responses) -> list[dict[str, float]]:
        return [self.score(prompt, response) for response in responses]


PROMPTS = [f"Question number {i}?" for i in range(12)]


def live_rejection_rate(audits: int, *, m: int = 3) -> float:
    sampler = SeededTokenSampler()
    rejected = 0
    for seed in range(audits):
        scores = live_rut_scores(PROMPTS, reference=sampler, target=sampler, scorer=RankScorer(), score="log_rank",
                                 m=m, seed=seed, max_tokens=6)
        rejected += rank_uniformity_test(scores.target_scores, scores.reference_scores, rng=seed).pvalue <= ALPHA
    return rejected / audits


def test_live_path_rejects_the_model_itself_at_rate_alpha():
    low, high = binomial_interval(600)
    assert low <= live_rejection_rate(600) <= high


def test_live_path_with_one_seed_for_every_prompt_is_miscalibrated(monkeypatch):
    """The first collection: reference seed s and target seed s + 1 for every prompt (common random numbers)."""
    monkeypatch.setattr(collect, "prompt_seed", lambda seed, prompt, role: seed + (role == "target"))
    assert live_rejection_rate(200) > binomial_interval(200)[1] + 0.1


class BatchedSeededTokenSampler(SeededTokenSampler):
    """:class:`SeededTokenSampler` as a batched backend: it records the requests of each complete_seeds call."""

    batched = True

    def __init__(self, empty: frozenset = frozenset()):
        self.calls, self.empty = [], empty

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        if (seed, index) in self.empty:
            return Completion("")
        return super().complete(prompt, system=system, temperature=temperature, max_tokens=max_tokens, seed=seed,
                                index=index)

    def complete_seeds(self, prompt, requests, **settings):
        self.calls.append(list(requests))
        return super().complete_seeds(prompt, requests, **settings)


def test_sample_seeds_draws_what_a_call_per_seed_draws_in_one_batched_call(tmp_path):
    from dbpa_core.data.store import SampleStore
    from dbpa_core.samplers.base import SamplingFailed

    store, sampler = SampleStore(tmp_path / "store.sqlite"), BatchedSeededTokenSampler()
    settings = dict(temperature=0.7, max_tokens=4)
    sampler.sample("Hi?", 1, seed=5, store=store, **settings)  # seed 5's first sample is stored already
    sampler.calls.clear()
    drawn = sampler.sample_seeds("Hi?", 2, [5, 9, 5], store=store, **settings)
    assert sampler.calls == [[(5, 1), (9, 0), (9, 1)]]  # one call, for what the store lacks
    alone = BatchedSeededTokenSampler()
    assert drawn == [alone.sample("Hi?", 2, seed=s, **settings) for s in (5, 9, 5)]
    assert sampler.sample_seeds("Hi?", 2, [9, 5], store=store, **settings) == drawn[1::-1]
    assert sampler.calls == [[(5, 1), (9, 0), (9, 1)], []]  # everything came from the store
    # An empty reply is refused as sample() refuses it, naming what the store kept.
    with pytest.raises(SamplingFailed, match="sample 0 came back empty.*0 of 1 samples"):
        BatchedSeededTokenSampler(frozenset({(3, 0)})).sample_seeds("Hi?", 1, [2, 3], store=store, **settings)
    with pytest.raises(ValueError, match="seeds"):
        sampler.sample_seeds("Hi?", 2, [1, -1], **settings)


def test_prompt_seeds_differ_across_prompts_and_roles():
    seeds = {prompt_seed(0, p, role) for p in rut_prompts() for role in ("reference", "target")}
    assert len(seeds) == 2 * len(rut_prompts())
    assert prompt_seed(3, "Hi", "target") == prompt_seed(3, "Hi", "target") != prompt_seed(4, "Hi", "target")


def test_recorded_path_rejects_the_model_itself_at_rate_alpha():
    data = load_recorded_rut("log_rank")
    audits, rejected = 2000, 0
    rng = np.random.default_rng(0)
    for _ in range(audits):
        scores = rut_arrays(data, "reference", n_prompts=len(data.prompts), m=data.reference_pool.shape[1] - 1,
                            rng=rng)
        rejected += rank_uniformity_test(scores.target_scores, scores.reference_scores, rng=rng).pvalue <= ALPHA
    low, high = binomial_interval(audits)
    assert low <= rejected / audits <= high


def test_the_share_bound_takes_scipys_ks_quantile_bit_for_bit():
    """rank_uniformity_test inverts kstwo once per (level, n) (the recorded path's 2,000 audits spent 40 % of
    their time inverting it): every call, computed or cached, subtracts scipy's own float."""
    for n in (6, 80, 6):
        assert substituted_share_bound(0.9, n) == 0.9 - stats.kstwo.ppf(0.95, n)
        assert substituted_share_bound(0.9, n, confidence_level=0.9) == 0.9 - stats.kstwo.ppf(0.9, n)


def test_recorded_responses_are_exchangeable_within_each_prompt():
    """No response index stands out across prompts (Friedman test, Bonferroni over the scores).

    The first recording drew response j of every prompt with one seed; there
    the index explained the ranks (log_rank: p = 0.0003) and the model tested
    against itself was rejected.
    """
    for score in SCORES:
        pool = load_recorded_rut(score).reference_pool
        pool = pool[np.all(np.isfinite(pool), axis=1)]
        assert stats.friedmanchisquare(*pool.T).pvalue > 0.01 / len(SCORES), score


def test_recorded_path_without_rng_uses_the_first_columns():
    data = load_recorded_rut("log_rank")
    scores = rut_arrays(data, "reference", n_prompts=4, m=5)
    np.testing.assert_array_equal(scores.reference_scores, data.reference_pool[:4, :5])
    np.testing.assert_array_equal(scores.target_scores, data.reference_pool[:4, 5])
    drawn = rut_arrays(data, "reference", n_prompts=4, m=5, rng=1)
    for row, target, reference in zip(data.reference_pool, drawn.target_scores, drawn.reference_scores):
        # the target is one of the prompt's recorded answers and never one of its own reference sample
        assert target in row and sorted([*reference, target]) == sorted(set([*reference, target]))


def test_live_path_with_the_local_model_rejects_itself_at_rate_alpha():
    """The real pipeline at small sizes: SmolLM2 answers (5 tokens) to 6 prompts, scored by SmolLM2.

    30 audits at α = 0.1 (99 % binomial interval: at most 8 rejections): a real pipeline whose scores do not
    match its sampler's draws (rejecting itself in 40 % of audits or more) fails here with probability 0.9.
    The subtler fault this test once found, one seed for every prompt (22 % at this size), is caught by
    the synthetic tests above (test_live_path_with_one_seed_for_every_prompt_is_miscalibrated,
    test_prompt_seeds_differ_across_prompts_and_roles).  The 30 audits are drawn together
    (live_rut_audits: each prompt's draws of every audit in one batched call, 26 CPU seconds where one
    live_rut_scores call per audit took 127, two minutes of CI); they are those audits bit for bit
    (test_live_audits_drawn_together_are_the_audits_drawn_one_by_one), so the test's power is unchanged.
    """
    from dbpa_core.rut.scoring import ReferenceScorer
    from dbpa_core.samplers import get_sampler

    # No sample store: it changes no draw, and writing 540 samples cost more than drawing them; the store
    # rows of this path are checked in test_live_audits_drawn_together_are_the_audits_drawn_one_by_one.
    local, scorer = get_sampler("local"), ReferenceScorer()
    audits, alpha = 30, 0.1
    scores = live_rut_audits(rut_prompts()[:6], seeds=range(audits), reference=local, target=local, scorer=scorer,
                             score="log_rank", m=2, max_tokens=5)
    assert len(scores) == audits and all(len(s.prompts) == 6 for s in scores)
    rejected = sum(rank_uniformity_test(s.target_scores, s.reference_scores, rng=seed).pvalue <= alpha
                   for seed, s in enumerate(scores))
    low, high = binomial_interval(audits, alpha, level=0.99)
    assert low <= rejected / audits <= high


def test_live_audits_drawn_together_are_the_audits_drawn_one_by_one(tmp_path):
    """live_rut_audits gives each seed's audit, bit for bit, as live_rut_scores does (the target asked with
    its own system prompt and temperature), and stores the same samples."""
    from dbpa_core.data.store import SampleStore
    from dbpa_core.rut.scoring import ReferenceScorer
    from dbpa_core.samplers import get_sampler

    local, scorer = get_sampler("local"), ReferenceScorer()
    alone, together = SampleStore(tmp_path / "alone.sqlite"), SampleStore(tmp_path / "together.sqlite")
    prompts, seeds = rut_prompts()[:2], [4, 0]
    settings = dict(reference=local, target=local, scorer=scorer, score="log_likelihood", m=3,
                    system="Answer briefly.", temperature=1.1, max_tokens=6)
    expected = [live_rut_scores(prompts, seed=s, store=alone, **settings) for s in seeds]
    drawn = live_rut_audits(prompts, seeds=seeds, store=together, **settings)
    for one, many in zip(expected, drawn, strict=True):
        assert one.prompts == many.prompts == tuple(prompts) and one.dropped == many.dropped == ()
        np.testing.assert_array_equal(many.target_scores, one.target_scores)
        np.testing.assert_array_equal(many.reference_scores, one.reference_scores)
    for seed in seeds:
        for prompt in prompts:
            for role, system, temperature, n in (("reference", None, 0.7, 3), ("target", "Answer briefly.", 1.1, 1)):
                request = local.describe_request(prompt, system=system, temperature=temperature, max_tokens=6,
                                                 seed=prompt_seed(seed, prompt, role))
                assert together.get_samples(request, range(n)) == alone.get_samples(request, range(n))
                assert len(alone.get_samples(request, range(n))) == n


def test_live_scores_are_the_scorers_scores_of_each_response(tmp_path):
    """live_rut_scores scores each prompt's responses in one batched call: the same numbers as one score()
    per response, with the target's answer in the target column and the reference's in theirs."""
    from dbpa_core.data.store import SampleStore
    from dbpa_core.rut.scoring import ReferenceScorer
    from dbpa_core.samplers import get_sampler

    local, scorer, store = get_sampler("local"), ReferenceScorer(), SampleStore(tmp_path / "store.sqlite")
    prompts = rut_prompts()[:2]
    scores = live_rut_scores(prompts, reference=local, target=local, scorer=scorer, score="log_likelihood", m=3,
                             seed=1, system="You are a pirate.", temperature=1.2, max_tokens=6, store=store)
    for i, prompt in enumerate(prompts):
        texts = local.sample(prompt, 3, temperature=0.7, max_tokens=6, seed=prompt_seed(1, prompt, "reference"),
                             store=store)
        (answer,) = local.sample(prompt, 1, system="You are a pirate.", temperature=1.2, max_tokens=6,
                                 seed=prompt_seed(1, prompt, "target"), store=store)
        assert list(scores.reference_scores[i]) == [scorer.score(prompt, t)["log_likelihood"] for t in texts]
        assert scores.target_scores[i] == scorer.score(prompt, answer)["log_likelihood"]
        assert scores.target_scores[i] not in list(scores.reference_scores[i])
