"""Tests of dbpa_core.rut.scoring with the real SmolLM2 model, and of the rule-based rewrites."""

from __future__ import annotations

import numpy as np
import pytest

from dbpa_core.stability.grader import is_correct
from dbpa_core.stability.rewrites import REWRITES, rewrite
from dbpa_core.samplers import get_sampler, sample_seed
from dbpa_core.rut.scoring import SCORES, ReferenceScorer, scores_of, token_statistics_from_logits


@pytest.fixture(scope="module")
def scorer():
    return ReferenceScorer()


def test_token_statistics_agree_with_scipy():
    """log p, rank and entropy from a logits matrix = scipy's log_softmax and entropy and a brute-force rank, on
    float32 logits of a vocabulary's size and spread, with ties (a rank counts only strictly larger logits)."""
    from scipy.special import log_softmax
    from scipy.stats import entropy as scipy_entropy

    rng = np.random.default_rng(0)
    logits = (rng.normal(0, 4, size=(7, 49_152)) + 20).astype(np.float32)
    tokens = [0, 5, 49_151, 17, 17, 3, 12]
    logits[1, :100] = logits[1, 5]  # 99 ties with the chosen token: rank unchanged by them
    logits[2, 49_151] = logits[2].max()  # the top choice (tied with another maximum)
    logp, ranks, entropy = token_statistics_from_logits(logits, tokens)
    reference = log_softmax(logits.astype(np.float64), axis=1)
    np.testing.assert_allclose(logp, reference[np.arange(7), tokens], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(entropy, scipy_entropy(np.exp(reference), axis=1), rtol=1e-10)
    assert list(ranks) == [1 + int((row > row[t]).sum()) for row, t in zip(logits, tokens)]
    assert ranks[2] == 1 and ranks[1] == 1 + int((logits[1] > logits[1, 5]).sum())
    # A row's statistics are the same bit for bit scored alone or among others (batched scoring relies on it).
    alone = [token_statistics_from_logits(logits[i:i + 1], tokens[i:i + 1]) for i in range(7)]
    for k, together in enumerate((logp, ranks, entropy)):
        assert np.array_equal(np.concatenate([a[k] for a in alone]), together)
    empty = token_statistics_from_logits(np.zeros((0, 4), np.float32), [])
    assert all(a.shape == (0,) for a in empty)


def test_scores_match_the_samplers_logprobs(scorer):
    """The reference model's own sampled tokens: the scorer's log-probs are the generation's own (the same logits,
    bit for bit: tests/test_engine.py; here up to the float64 arithmetic of two log-softmax formulas)."""
    (greedy,) = get_sampler("local", logprobs=True).sample_completions("Name a colour.", 1, max_tokens=10, seed=0,
                                                                       temperature=0)
    logp, ranks, entropy = scorer.token_statistics("Name a colour.", greedy.text)
    np.testing.assert_allclose(logp, greedy.token_logprobs, rtol=1e-12, atol=1e-12)
    assert ranks[0] == 1 and np.all(entropy >= 0)  # greedy decoding picks the top-ranked token
    # Sampled at T = 1, on the drawn token ids themselves (a text need not tokenize back to the ids drawn).
    engine = scorer.engine
    prompt = engine.chat_prompt(scorer._messages("Name a colour.", None))
    drawn = engine.generate(prompt, [sample_seed(1, i) for i in range(6)], temperature=1.0, max_tokens=16,
                            logprobs=True)
    scored = dict(engine.score_iter(prompt, [list(g.tokens) for g in drawn], token_statistics_from_logits, width=4))
    for j, generation in enumerate(drawn):
        np.testing.assert_allclose(scored[j][0], generation.token_logprobs, rtol=1e-12, atol=1e-12)


def test_own_answers_rank_higher_than_gibberish(scorer):
    own = get_sampler("local").sample("Give one tip for sleeping well.", 1, max_tokens=24, seed=0)[0]
    typical = scorer.score("Give one tip for sleeping well.", own)
    gibberish = scorer.score("Give one tip for sleeping well.", "Zebra quantum paperwork sideways marmalade.")
    assert set(typical) == set(SCORES)
    assert typical["log_rank"] < gibberish["log_rank"]
    assert typical["log_likelihood"] / max(1, len(own.split())) > gibberish["log_likelihood"] / 5
    assert np.isnan(scorer.score("Hi", "")["log_rank"])


def test_rewrites():
    question = "What is the capital of France?"
    for kind in REWRITES:
        changed = rewrite(question, kind)
        assert changed != question
    assert rewrite(question, "typo") == "What is the cpaital of France?"  # longest word, letters 2 and 3 swapped
    assert rewrite(question, "lowercase") == "what is the capital of france"
    with pytest.raises(ValueError, match="`kind` must be one of"):
        rewrite(question, "shout")
    assert is_correct("It is Paris.", ["paris"]) and not is_correct("Comparison", ["paris"])
    assert is_correct("There are 7 days", ["7", "seven"]) and not is_correct("17 days", ["7"])


def per_token_logits(llama, context: list[int], answer: list[int]) -> np.ndarray:
    """The logits before each token of ``answer``, fed one ``eval`` per token through ``llama_cpp.Llama``."""
    llama.reset()
    llama.eval(context)
    rows = []
    for t, token in enumerate(answer):
        rows.append(np.array(llama.scores[llama.n_tokens - 1], dtype=np.float32))
        if t + 1 < len(answer):
            llama.eval([token])
    return np.array(rows)


def test_fast_scores_equal_the_per_token_path():
    """score_responses (one token of up to batch_size responses per forward step) = the per-token path
    (per_token_statistics: one eval and one row of Python per token), on 16 responses: the reference model's own
    samples at three temperatures, other texts, an empty one, with and without a system prompt.  The logits are
    the same bit for bit (against llama_cpp.Llama fed one token per eval); the statistics agree up to their
    float64 formulas, the ranks exactly; and they do not depend on how many responses go through together.

    Sized for the per-token path (one forward step per token: most of the time), every response still checked
    token by token: both configurations have more responses than streams (16 responses; 8 and 5 streams), so
    streams end at different steps and are refilled; the 64-token reply takes its stream past 64 and 96 KV
    cells (llama.cpp pads attention to 32); a wrong row, stream or position changes a log-probability or a rank
    at once."""
    prompt = "Give one tip for sleeping well."
    sampler = get_sampler("local")
    responses = (sampler.sample(prompt, 4, temperature=0.5, max_tokens=16, seed=1)
                 + sampler.sample(prompt, 4, temperature=1.2, max_tokens=16, seed=2)
                 + sampler.sample(prompt, 2, temperature=0, max_tokens=16, seed=3)
                 + ["Zebra quantum paperwork sideways marmalade.", "Sleep.", "Ne buvez pas de café le soir, "
                    "et couchez-vous à heure fixe. " * 3, "🙂 emoji and ünïcödé", "", "Drink warm milk."])
    assert len(responses) == 16
    per_token = {}  # the per-token path's statistics without a system prompt, by response
    for system, scorer in ((None, ReferenceScorer(batch_size=8)), ("Be brief.", ReferenceScorer(batch_size=5))):
        fast = scorer.score_responses(prompt, responses, system=system)
        for i, (response, scored) in enumerate(zip(responses, fast)):
            logp, ranks, entropy = scorer.per_token_statistics(prompt, response, system=system)
            if system is None:
                per_token[i] = ranks
            assert scored.text == response and len(scored.tokens) == len(logp)
            np.testing.assert_allclose(scored.token_logprobs, logp, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(scored.ranks, ranks)
            np.testing.assert_allclose(scored.entropy, entropy, rtol=1e-10, atol=1e-12)
        assert np.isnan(fast[-2].scores["log_rank"]) and fast[-2].tokens == ()
    # Token ids are the reference tokenizer's, and scores do not depend on how many go through together.
    assert list(fast[0].tokens) == scorer.engine.tokenize(responses[0], special=False)
    alone = ReferenceScorer(batch_size=1).score_many(prompt, responses[:3])
    assert alone == ReferenceScorer(batch_size=16).score_many(prompt, responses[:3])
    # The logits themselves, against llama_cpp.Llama fed one token per eval: equal bit for bit (6 responses,
    # 4 at a time: a stream refilled).
    from dbpa_core.rut.scoring import token_statistics_from_logits

    engine, llama = scorer.engine, scorer.llama
    context = engine.chat_prompt(scorer._messages(prompt, None))
    chosen = [0, 1, 4, 5, 10, 11]  # samples at T = 0.5 and 1.2, gibberish, one word
    answers = [engine.tokenize(responses[i], special=False) for i in chosen]
    rows = {j: logits for j, (logits,) in engine.score_iter(context, answers, lambda x, _: (x.copy(),), width=4)}
    for j, answer in enumerate(answers):
        np.testing.assert_array_equal(rows[j], per_token_logits(llama, context, answer))
        assert np.array_equal(token_statistics_from_logits(rows[j], answer)[1], per_token[chosen[j]])


def test_scoring_bad_input(scorer):
    with pytest.raises(ValueError, match="`responses`"):
        scorer.score_many("Hi", ["ok", 3])
    with pytest.raises(ValueError, match="`prompt` fills"):
        ReferenceScorer(n_ctx=32).score("word " * 40, "yes")


def test_the_path_before_batching_differs_in_the_last_bits(scorer):
    """score_responses vs reference_token_statistics (the whole response in one forward step through
    llama_cpp.Llama, the path before batching) on 21 responses.

    Not bit for bit, nor within float rounding: llama.cpp's default attention
    computes a many-token step differently from a one-token step (n_ubatch = 1
    reproduces the per-token numbers exactly, flash attention makes the two
    equal: bench/probe_numerics.py, tests/test_engine.py), which moves a
    log-probability by up to ~0.2 nats.  The first token comes from the same
    prompt row in both paths, so it agrees exactly; the rest agree closely, and
    an off-by-one position or a wrong row would break every bound below.
    """
    prompt = "Name one thing that makes a city pleasant to live in."
    sampler = get_sampler("local")
    responses = (sampler.sample(prompt, 9, temperature=0.7, max_tokens=8, seed=4)
                 + sampler.sample(prompt, 9, temperature=1.3, max_tokens=8, seed=5)
                 + ["Parks.", "Zebra quantum paperwork sideways marmalade.", "Des rues calmes et des arbres."])
    assert len(responses) == 21
    fast = scorer.score_responses(prompt, responses)
    differences, pairs = [], []
    for response, scored in zip(responses, fast):
        logp, ranks, entropy = scorer.reference_token_statistics(prompt, response)
        assert len(logp) == len(scored.tokens) >= 1
        np.testing.assert_allclose(scored.token_logprobs[0], logp[0], rtol=1e-12, atol=1e-12)
        assert scored.ranks[0] == ranks[0]
        np.testing.assert_allclose(scored.token_logprobs, logp, atol=0.5)
        np.testing.assert_allclose(scored.entropy, entropy, atol=0.5)
        differences += list(np.abs(scored.token_logprobs - logp))
        pairs.append((scored.scores["log_likelihood"], scores_of(logp, ranks, entropy)["log_likelihood"]))
    assert 0 < np.max(differences) and np.mean(differences) < 0.1
    assert np.corrcoef(np.array(pairs).T)[0, 1] > 0.99
