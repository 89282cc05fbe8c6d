"""The time a run announces before it starts (dbpa_core.audit.timing, issue 45)."""

import json

import pytest

from dbpa_core.audit.request import AuditRequest, EmbedderConfig, SamplerConfig
from dbpa_core.audit.timing import (ANNOUNCE_AFTER, RATIO_BOUNDS, SECONDS_PER_EMBEDDING, SECONDS_PER_OUTPUT,
                                    Throughput, TimeEstimate, calls_estimate, load_factor, model_seconds,
                                    request_estimate)
from dbpa_core.data.scenarios import load_scenarios


def home_request(backend="simulated", k=200, **more):
    scenario = load_scenarios()["seasons_question"]
    return AuditRequest.from_scenario(scenario, None, sampler=SamplerConfig(backend), embedder=EmbedderConfig(),
                                      k=k, correction="bonferroni", **more)


def test_reading_says_the_time_only_when_worth_saying():
    assert TimeEstimate(2.0).reading() == ""
    assert not TimeEstimate(ANNOUNCE_AFTER - 0.1).announced
    assert TimeEstimate(7.2).reading() == "about 7 s on this machine"
    assert TimeEstimate(71.0).reading() == "about 70 s on this machine"
    assert TimeEstimate(192.0).reading() == "about 3 min on this machine"


def test_the_model_adds_its_parts():
    only_embedding = model_seconds(backend="simulated", new_embeddings=1000)
    assert only_embedding == pytest.approx(1000 * SECONDS_PER_EMBEDDING["minilm"])
    local = model_seconds(backend="local", new_outputs=20, new_embeddings=20)
    assert local == pytest.approx(20 * (SECONDS_PER_OUTPUT["local"] + SECONDS_PER_EMBEDDING["minilm"]))
    # Parallel calls divide the time of an OpenAI-compatible backend only.
    assert (model_seconds(backend="openai", new_outputs=40, parallel_calls=4)
            == pytest.approx(model_seconds(backend="openai", new_outputs=40) / 4))
    assert model_seconds(backend="simulated", loads=("minilm",)) > 0


@pytest.mark.parametrize(("field", "value"), [("backend", "gpt"), ("embedder", "bert"), ("new_outputs", -1), ("k", 0)])
def test_bad_counts_name_their_parameter(field, value):
    settings = {"backend": "simulated", field: value}
    with pytest.raises(ValueError, match=f"`{field}`"):
        model_seconds(**settings)


def test_a_home_resample_at_k_200_is_announced_and_a_stored_one_is_not():
    throughput = Throughput()
    fresh = request_estimate(home_request(), throughput)
    arms = len(home_request().arm_requests())
    # Every arm's 200 outputs embedded: the largest part of a Resample (72 s measured in the issue).
    assert fresh.seconds >= arms * 200 * SECONDS_PER_EMBEDDING["minilm"]
    assert fresh.announced and fresh.key == "simulated/minilm"
    stored = request_estimate(home_request(), throughput, stored_embeddings=arms * 200)
    assert stored.seconds < 1 and not stored.announced  # nothing to embed: MiniLM is not even loaded


def test_local_draws_are_timed_by_the_model_not_the_embedder():
    estimate = request_estimate(home_request("local", k=20), Throughput())
    assert estimate.key == "local/minilm"
    arms = len(home_request().arm_requests())
    assert estimate.seconds >= arms * 20 * SECONDS_PER_OUTPUT["local"]


def test_throughput_learns_the_machine_and_keeps_it(tmp_path):
    path = tmp_path / "throughput.json"
    throughput = Throughput(path)
    first = throughput.estimate(40.0, "local/minilm")
    throughput.observe(first, 80.0)  # this machine is twice as slow as the constants
    second = throughput.estimate(40.0, "local/minilm")
    assert second.seconds == pytest.approx(80.0) and second.ratio == pytest.approx(2.0)
    # Learnt per key, and kept for the next process.
    assert throughput.estimate(40.0, "simulated/minilm").seconds == pytest.approx(40.0)
    assert Throughput(path).estimate(40.0, "local/minilm").seconds == pytest.approx(80.0)
    # A moving average: one fast run moves it half-way.
    throughput.observe(second, 40.0)
    assert throughput.ratio("local/minilm") == pytest.approx(1.5)


def test_throughput_is_bounded_and_ignores_what_it_cannot_learn_from(tmp_path):
    throughput = Throughput()
    throughput.observe(throughput.estimate(10.0, "a"), 10_000.0)
    assert throughput.ratio("a") == RATIO_BOUNDS[1]
    throughput.observe(throughput.estimate(0.5, "b"), 30.0)  # under a second modelled: overhead, not throughput
    assert throughput.ratio("b") == 1.0
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert Throughput(broken).ratio("a") == 1.0
    broken.write_text(json.dumps({"a": "fast", "b": -1, "c": 0.01}))
    assert Throughput(broken).ratio("a") == 1.0 and Throughput(broken).ratio("c") == RATIO_BOUNDS[0]


def test_sibling_audit_calls_are_timed_by_their_backend():
    # The RUT's live audit: 4 prompts × (4 reference answers + the target's) with SmolLM2.
    estimate = calls_estimate("local", 20, Throughput())
    assert estimate.key == "local/minilm" and estimate.seconds >= 20 * SECONDS_PER_OUTPUT["local"]
    assert estimate.reading().endswith("on this machine")
    assert calls_estimate("local", 20, Throughput(), loaded=("local",)).seconds < estimate.seconds


def test_a_busy_machine_lengthens_the_estimate_and_says_so():
    assert load_factor(1.0, cores=2) == 1.0 and load_factor(16.0, cores=2) == 4.0
    throughput = Throughput()
    quiet, busy = throughput.estimate(40.0, "k"), throughput.estimate(40.0, "k", load=4.0)
    assert busy.seconds == pytest.approx(4 * quiet.seconds)
    assert "(busy now)" in busy.reading() and "(busy now)" not in quiet.reading()
    # What is learnt is the machine's ratio, the moment's load divided out: a run 4× longer at load factor 4
    # teaches nothing new.
    throughput.observe(busy, 160.0)
    assert throughput.ratio("k") == pytest.approx(1.0)
