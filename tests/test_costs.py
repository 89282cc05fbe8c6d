"""Tests of dbpa_core.audit.costs"""

import pytest

from dbpa_core.audit.costs import estimate_cost, estimate_tokens


def test_exact_estimate():
    est = estimate_cost(["x" * 40, "y" * 80], 10, max_tokens=100, sampler_model="gpt-4o-mini",
                        embedder_model="text-embedding-3-small")
    assert est.calls == 20
    assert est.input_tokens == 10 * (10 + 20)
    assert est.output_tokens == 2000 and est.embedding_tokens == 2000
    assert est.generation_cost == pytest.approx((300 * 0.15 + 2000 * 0.60) / 1e6)
    assert est.embedding_cost == pytest.approx(2000 * 0.02 / 1e6)
    assert "20 generation calls" in est.reading()


def test_local_runs_are_free_and_unknown_prices_say_so():
    local = estimate_cost(["p"], 5, max_tokens=10, sampler_model="local")
    assert local.total_cost == 0.0 and "free" in local.reading()
    unknown = estimate_cost(["p"], 5, max_tokens=10, sampler_model="my-private-model")
    assert unknown.total_cost is None and "unknown price" in unknown.reading()


def test_recorded_backend_replays_and_makes_no_calls():
    """The recorded backend replays answers generated once: its reading must not say it makes calls (trial 5)."""
    recorded = estimate_cost(["p", "q"], 20, max_tokens=10, sampler_model="recorded")
    assert recorded.replayed and recorded.total_cost == 0.0
    assert recorded.reading() == ("This run replays 40 recorded answers (no generation calls: nothing is generated) "
                                  "and embeds ≤400 tokens: free, everything runs on this machine.")
    assert not estimate_cost(["p"], 5, max_tokens=10, sampler_model="local").replayed


def test_simulated_backend_writes_synthetic_answers_and_calls_no_model():
    """The simulated backend is not a language model: its reading does not speak of generation calls and prompt
    tokens as a paid API's does (trial 7: "270 generation calls (≈11,010 prompt tokens …)")."""
    simulated = estimate_cost(["p", "q"], 20, max_tokens=10, sampler_model="simulated")
    assert simulated.synthetic and not simulated.replayed and simulated.total_cost == 0.0
    assert simulated.reading() == ("This run writes 40 synthetic answers with the simulated backend (no language "
                                   "model is called) and embeds ≤400 tokens: free, everything runs on this machine.")
    assert not estimate_cost(["p"], 5, max_tokens=10, sampler_model="local").synthetic


def test_token_rule():
    assert estimate_tokens("") == 0 and estimate_tokens("abcde") == 2


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"prompts": []}, "`prompts`"), ({"k": 0}, "`k`"), ({"max_tokens": 0}, "`max_tokens`"),
])
def test_bad_inputs(kwargs, match):
    args = {"prompts": ["p"], "k": 3, "max_tokens": 5, **kwargs}
    with pytest.raises(ValueError, match=match):
        estimate_cost(args.pop("prompts"), args.pop("k"), **args)
