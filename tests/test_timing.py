"""The time a run announces before it starts (dbpa_core.audit.timing, issue 45)."""

import json

import pytest

from dbpa_core.audit.request import AuditRequest, EmbedderConfig, SamplerConfig
from dbpa_core.audit.timing import (ANNOUNCE_AFTER, LOAD_SECONDS, RATIO_BOUNDS, SECONDS_PER_EMBEDDING,
                                    SECONDS_PER_OUTPUT, SECONDS_PER_RUT_PROMPT, SECONDS_PER_RUT_REFERENCE_ANSWER,
                                    Throughput, TimeEstimate, calls_estimate, load_factor, model_seconds,
                                    paper_view_estimate, request_estimate, rut_estimate)
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
    # The stability search's rewrites: one call each on the sidebar's backend.
    estimate = calls_estimate("local", 20, Throughput())
    assert estimate.key == "local/minilm" and estimate.seconds >= 20 * SECONDS_PER_OUTPUT["local"]
    assert estimate.reading().endswith("on this machine")
    assert calls_estimate("local", 20, Throughput(), loaded=("local",)).seconds < estimate.seconds


def test_a_live_rut_audit_is_timed_per_prompt_and_reference_answer():
    """The RUT page's default live audit (n = 4, m = 4): announced as 35 s by the calls model, it took 12.4 s
    (issue 45's second timed walk): its reference answers are drawn in one batched call per prompt."""
    fresh = rut_estimate(4, 4, Throughput())
    assert fresh.seconds == pytest.approx(4 * (SECONDS_PER_RUT_PROMPT + 4 * SECONDS_PER_RUT_REFERENCE_ANSWER)
                                          + LOAD_SECONDS["local"])
    assert fresh.key == "local/rut" and 11.5 <= fresh.seconds <= 14.0  # 12.35 s on the page, 11.5 s in bench_timing
    assert rut_estimate(4, 4, Throughput(), loaded=("local",)).seconds == pytest.approx(fresh.seconds - 0.5)
    # Linear in n; in m at the batched answer's share (the CLI, process start included: (8, 4) 27.9 s, (4, 8) 18.9 s).
    assert rut_estimate(8, 4, Throughput(), loaded=("local",)).seconds == pytest.approx(24.8)
    assert rut_estimate(4, 8, Throughput(), loaded=("local",)).seconds == pytest.approx(12.4 + 5.2)
    with pytest.raises(ValueError, match="`m`"):
        rut_estimate(4, 0, Throughput())


def test_the_paper_views_that_compute_on_opening_say_their_time():
    """TPR / FPR's shipped paraphrases (B = 1,000: 6.56 s measured) and the RUT paper's 500 trials per q (6.68 s)
    are announced; 100 trials (1.58 s) and a small B are not."""
    roc = paper_view_estimate("fig1_paraphrases", 1000, Throughput())
    assert roc.key == "paper/fig1_paraphrases" and 6.0 <= roc.seconds <= 7.0 and roc.announced
    assert not paper_view_estimate("fig1_paraphrases", 100, Throughput()).announced
    rut = paper_view_estimate("rut_study", 500, Throughput())
    assert 6.0 <= rut.seconds <= 7.0 and rut.announced
    assert not paper_view_estimate("rut_study", 100, Throughput()).announced
    with pytest.raises(ValueError, match="`view`"):
        paper_view_estimate("table2", 10, Throughput())


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
