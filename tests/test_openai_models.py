"""Today's OpenAI models against a server that answers as the hosted API does (tests/servers.py: hosted_openai).

GPT-5-class and o-series models refuse ``max_tokens`` and every temperature but 1; the sampler sends
``max_completion_tokens`` to them, falls back when a server refuses the parameter it sent, stops with a
clear error naming the temperature (before any call where the model is known), and keeps what each reply
says about itself (served model, fingerprint, usage) beside the sample, up to the report's ``provenance``.
"""

from __future__ import annotations

import json
import sqlite3

import jsonschema
import pytest
import yaml

from dbpa_core.__main__ import main
from dbpa_core.audit import run
from dbpa_core.audit.configs import EmbedderConfig, SamplerConfig
from dbpa_core.audit.request import AuditRequest, PerturbedPrompt, Prompt
from dbpa_core.data.provenance import get_sample_meta
from dbpa_core.data.store import SampleStore
from dbpa_core.present.records import SCHEMA_PATH
from dbpa_core.samplers import get_sampler
from dbpa_core.samplers.openai_models import TemperatureRefused, fixed_temperature, token_parameter
from servers import hosted_openai, misbehaving_server

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def chats(requests):
    return [r for r in requests if "messages" in r]


def spec(tmp_path, url, model, temperature, **sampler):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({
        "name": "t", "scenario": "seasons_question", "perturbations": ["mars"], "k": 6, "n_resamples": 200,
        "seed": 0, "embedder": {"name": "openai", "model": "text-embedding-3-small", "base_url": url},
        "sampler": {"backend": "openai", "model": model, "base_url": url, "temperature": temperature,
                    "max_tokens": 64, "max_retries": 0, "timeout": 5, "max_concurrency": 1, **sampler}}))
    return str(path)


def test_model_rules():
    for model in ("gpt-5", "gpt-5-mini", "gpt-5-nano-2025-08-07", "o1", "o3-mini", "o4-mini", "openai/gpt-5"):
        assert token_parameter(model) == "max_completion_tokens" and fixed_temperature(model) == 1.0, model
    for model in ("gpt-5.1", "gpt-5-chat-latest"):  # the limit's new name, but a temperature of their own
        assert token_parameter(model) == "max_completion_tokens" and fixed_temperature(model) is None, model
    for model in ("gpt-4o-mini", "gpt-4.1", "smollm2", "gpt-50", "omni", "o1x"):
        assert token_parameter(model) == "max_tokens" and fixed_temperature(model) is None, model


def test_reasoning_model_audit_at_temperature_1(tmp_path):
    """gpt-5-mini at temperature 1: every call carries max_completion_tokens, none is refused, and report.json
    says which snapshot served it, under which fingerprint, and what it cost; a second run from the store
    makes no call and reports the same."""
    store = str(tmp_path / "s.sqlite")
    with misbehaving_server(hosted_openai()) as (url, requests):
        assert main(["audit", spec(tmp_path, url, "gpt-5-mini", 1), "--store", store,
                     "--out", str(tmp_path / "o")]) == 0
        drawn = chats(requests)
        assert len(drawn) == 12  # 2 arms × k = 6, no refused call
        assert all(r["max_completion_tokens"] == 64 and "max_tokens" not in r and r["temperature"] == 1
                   for r in drawn)
        assert main(["audit", spec(tmp_path, url, "gpt-5-mini", 1), "--store", store,
                     "--out", str(tmp_path / "again")]) == 0
        assert len(chats(requests)) == 12  # all from the store
    for folder in ("o", "again"):
        record = json.loads((tmp_path / folder / "report.json").read_text())
        jsonschema.validate(record, SCHEMA)
        provenance = record["provenance"]
        assert provenance["n_samples"] == provenance["n_described"] == 12
        assert provenance["served_models"] == {"gpt-5-mini-2025-08-07": 12}
        assert provenance["system_fingerprints"] == {"fp_hosted01": 12}
        assert provenance["usage"] == {"prompt_tokens": 144, "completion_tokens": 84, "total_tokens": 228,
                                       "reasoning_tokens": 36}
        assert "12 of 12 samples say which model answered: gpt-5-mini-2025-08-07 (12)" in provenance["reading"]
        assert "228 tokens" in provenance["reading"]


def test_a_temperature_a_known_reasoning_model_refuses_stops_before_any_call(tmp_path, capsys):
    with misbehaving_server(hosted_openai()) as (url, requests):
        assert main(["audit", spec(tmp_path, url, "gpt-5-mini", 0.7), "--store", str(tmp_path / "s.sqlite"),
                     "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert "`sampler.temperature` = 0.7 is refused by gpt-5-mini" in err
        assert "Set temperature: 1 for gpt-5-mini" in err and "Traceback" not in err
        # The Python API: the request, and a sampler asked directly, refuse it the same way.
        with pytest.raises(ValueError, match=r"= 0\.7 is refused by o3-mini.*Set temperature: 1 for o3-mini"):
            SamplerConfig("openai", model="o3-mini", base_url=url, temperature=0.7)
        sampler = get_sampler("openai", model="gpt-5-nano", base_url=url)
        with pytest.raises(ValueError, match=r"`temperature` = 0\.7 is refused by gpt-5-nano"):
            sampler.sample("hi", 2, temperature=0.7)
        assert sampler.describe_request("hi")["temperature"] == 1.0  # its default: the one it accepts
        assert requests == []  # nothing was sent, nothing paid for
    assert not (tmp_path / "o").exists()


def test_a_temperature_an_unknown_model_refuses_stops_at_the_first_refusal(tmp_path, capsys):
    """A model this program does not know as a reasoning model: the server's refusal becomes the same error
    (exit 2; a ValueError from the Python API), never a result, and the sampler remembers it."""
    reasoning = hosted_openai(reasoning=("house-reasoner",))
    with misbehaving_server(reasoning) as (url, requests):
        assert main(["audit", spec(tmp_path, url, "house-reasoner", 0.7), "--store", str(tmp_path / "s.sqlite"),
                     "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert "`temperature` = 0.7 is refused by house-reasoner" in err and "Only the default (1)" in err
        assert "Set temperature: 1 for house-reasoner" in err
        assert len(chats(requests)) == 2  # max_tokens refused, then the temperature: no more
        request = AuditRequest(Prompt("What causes the seasons?"),
                               (PerturbedPrompt("p", "p", Prompt("Why are there seasons?")),),
                               sampler=SamplerConfig("openai", model="house-reasoner", base_url=url,
                                                     temperature=0.7, options={"max_concurrency": 2}),
                               embedder=EmbedderConfig("openai", model="e", base_url=url), k=4, n_resamples=100)
        sampler = get_sampler("openai", model="house-reasoner", base_url=url, max_concurrency=2)
        with pytest.raises(TemperatureRefused, match=r"0\.7 is refused by house-reasoner"):
            run(request, sampler_for=lambda config: sampler)
        sent = len(requests)
        with pytest.raises(ValueError, match="Set temperature: 1 for house-reasoner"):
            sampler.sample("again", 3, temperature=0.7)
        assert len(requests) == sent  # remembered: refused before any call
    with sqlite3.connect(tmp_path / "s.sqlite") as connection:
        assert connection.execute("SELECT COUNT(*) FROM samples").fetchone() == (0,)


def test_gpt_4o_mini_still_gets_max_tokens(tmp_path):
    with misbehaving_server(hosted_openai()) as (url, requests):
        sampler = get_sampler("openai", model="gpt-4o-mini", base_url=url, max_concurrency=1)
        texts = sampler.sample("What causes the seasons?", 3, temperature=0.7, max_tokens=50)
    assert len(texts) == 3 and len(set(texts)) > 1
    assert [("max_tokens" in r, "max_completion_tokens" in r, r["temperature"]) for r in requests] == \
        [(True, False, 0.7)] * 3
    assert sampler.token_parameter == "max_tokens"


def test_a_refused_max_tokens_falls_back_and_is_remembered(tmp_path):
    """An unknown model name the server treats as a reasoning model: one refusal, then max_completion_tokens
    for this and every later call; the store keeps each reply's meta."""
    store = SampleStore(tmp_path / "s.sqlite")
    with misbehaving_server(hosted_openai(reasoning=("house-reasoner",))) as (url, requests):
        sampler = get_sampler("openai", model="house-reasoner", base_url=url, max_concurrency=1)
        assert sampler.token_parameter == "max_tokens"
        texts = sampler.sample("hi", 4, temperature=1, max_tokens=40, store=store)
    assert len(texts) == 4 and sampler.token_parameter == "max_completion_tokens"
    assert ["max_tokens" in r for r in requests] == [True, False, False, False, False]
    assert all(r.get("max_completion_tokens") == 40 for r in requests[1:])
    description = sampler.describe_request("hi", temperature=1, max_tokens=40)
    meta = get_sample_meta(store, description, range(5))
    assert sorted(meta) == [0, 1, 2, 3]
    assert meta[0] == {"model": "house-reasoner-2025-08-07", "system_fingerprint": "fp_hosted01",
                       "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19,
                                 "reasoning_tokens": 3}}
    # A batch file asks for what the live call sends.
    body = sampler.chat_request("hi", system=None, temperature=1, max_tokens=40, seed=0, index=0)
    assert body["max_completion_tokens"] == 40 and "max_tokens" not in body


def test_stores_without_the_side_table_stay_readable(tmp_path):
    """A store written before the meta table existed opens, replays its samples and describes none of them;
    keeping meta adds the table without changing the store's schema version."""
    path = tmp_path / "old.sqlite"
    store = SampleStore(path)
    description = {"backend": "openai", "model": "m", "prompt": "p"}
    store.put_sample(description, 0, "an old sample")
    with sqlite3.connect(path) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "sample_meta" not in tables
    reopened = SampleStore(path)
    assert reopened.get_samples(description, [0]) == {0: ("an old sample", None)}
    assert get_sample_meta(reopened, description, [0]) == {}
    from dbpa_core.data.provenance import put_sample_meta

    put_sample_meta(reopened, description, 1, {"model": "m-1"})
    put_sample_meta(reopened, description, 1, {"model": "a later writer"})  # the first write wins
    assert get_sample_meta(SampleStore(path), description, [0, 1]) == {1: {"model": "m-1"}}
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone() == (1,)
