"""`dbpa batch export/import` for a compare SPEC (dbpa_core/requests/many_batch.py): the batch path of
`dbpa compare SPEC.yaml`, end to end through a real OpenAI-compatible HTTP server."""

from __future__ import annotations

import hashlib
import json
import urllib.request

import pytest
import yaml

from dbpa_core.__main__ import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, main
from dbpa_core.samplers.openai_compatible import OpenAISampler
from servers import RecordingServer, chat_completion

LONG = ("the", "axial", "tilt", "of", "earth", "changes", "how", "directly", "sunlight", "arrives", "so", "summer",
        "days", "are", "longer", "and", "warmer", "while", "winter", "brings", "shorter", "colder", "days")
SHORT = ("tilt", "sunlight", "angle", "season")


class ChatServer(RecordingServer):
    """An OpenAI-compatible chat endpoint whose reply is a function of the request (messages, seed): the
    same request always gets the same text, live or in a batch.  A system prompt "Answer in one line."
    gets short replies.  It counts and records every request."""

    def reply(self, body):
        digest = hashlib.sha256(json.dumps([body["messages"], body["seed"]]).encode()).digest()
        one_line = any(m["role"] == "system" and "one line" in m["content"] for m in body["messages"])
        words = SHORT if one_line else LONG
        return " ".join(words[b % len(words)] for b in digest[: 4 if one_line else 14])


def write_spec(tmp_path, base_url, **overrides):
    spec = {"name": "compare-batch", "sampler": {"backend": "openai", "model": "m", "base_url": base_url,
                                                 "temperature": 0.7, "max_tokens": 20},
            "perturbed_system": "Answer in one line.", "arms": ["original", "one-line"],
            "prompts": [{"id": "seasons", "prompt": "What causes the seasons?"},
                        {"id": "tides", "prompt": "Why are there two tides a day?", "k": 4},
                        {"id": "sky", "prompt": "Why is the sky blue?", "system": "You are a physicist."}],
            "k": 3, "n_resamples": 200, "seed": 5, **overrides}
    path = tmp_path / "compare.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True))
    return path


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_like_a_batch_engine(base_url, requests_path, results_path):
    """What OpenAI's Batch API or vLLM's run_batch does: POST each line's body to its url, write one
    request output object per line."""
    root = base_url.removesuffix("/v1")
    with results_path.open("w", encoding="utf-8") as out:
        for n, request in enumerate(read_jsonl(requests_path)):
            call = urllib.request.Request(root + request["url"], data=json.dumps(request["body"]).encode(),
                                          headers={"Content-Type": "application/json"}, method=request["method"])
            with urllib.request.urlopen(call, timeout=30) as response:
                status, body = response.status, json.loads(response.read())
            out.write(json.dumps({"id": f"batch_req_{n}", "custom_id": request["custom_id"],
                                  "response": {"status_code": status, "request_id": f"req_{n}", "body": body},
                                  "error": None}) + "\n")


def test_batch_round_trip_equals_the_live_compare_and_draws_nothing(tmp_path, capsys, monkeypatch):
    """export → every line run against the server → import → `dbpa compare SPEC` with the server stopped
    and no live call allowed: the same statistic and p-value as the live run, from the same requests."""
    live, batch = tmp_path / "live.sqlite", tmp_path / "batch.sqlite"
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    with ChatServer() as server:
        spec = write_spec(tmp_path, server.base_url)
        assert main(["compare", str(spec), "--store", str(live), "--json", str(tmp_path / "live.json")]) == EXIT_OK
        live_bodies, server.bodies = server.bodies, []
        assert len(live_bodies) == 2 * (3 + 4 + 3)  # per-prompt k, both arms

        assert main(["batch", "export", str(spec), "--out", str(requests), "--store", str(batch)]) == EXIT_OK
        lines = read_jsonl(requests)
        # exactly the requests the live run sent: messages, temperature, max_tokens, per-sample seed
        canonical = sorted(json.dumps(body, sort_keys=True) for body in live_bodies)
        assert sorted(json.dumps(line["body"], sort_keys=True) for line in lines) == canonical
        assert len({line["custom_id"] for line in lines}) == len(lines)
        run_like_a_batch_engine(server.base_url, requests, results)
        assert len(server.bodies) == len(lines)
        assert main(["batch", "import", str(results), "--spec", str(spec), "--store", str(batch)]) == EXIT_OK
        server.bodies = []
    captured = capsys.readouterr().out
    assert "0 of 20 samples are already stored; 20 request lines cover the rest." in captured
    assert "imported 20, refused 0." in captured

    def no_call(*args, **kwargs):
        raise AssertionError("compare called the model although every sample is stored")

    monkeypatch.setattr(OpenAISampler, "complete", no_call)
    assert main(["compare", str(spec), "--store", str(batch), "--json", str(tmp_path / "batch.json")]) == EXIT_OK
    assert server.bodies == []
    from_live = json.loads((tmp_path / "live.json").read_text())
    from_batch = json.loads((tmp_path / "batch.json").read_text())
    assert (from_batch["statistic"], from_batch["pvalue"]) == (from_live["statistic"], from_live["pvalue"])
    assert from_batch["per_prompt"] == from_live["per_prompt"]
    assert {row["prompt_id"]: row["k"]["one-line"] for row in from_batch["per_prompt"]}["tides"] == 4

    # nothing left to export, and the next step named is `compare`
    assert main(["batch", "export", str(spec), "--out", str(tmp_path / "again.jsonl"),
                 "--store", str(batch)]) == EXIT_OK
    assert f"Nothing to export: every sample is stored. Run `python -m dbpa_core compare {spec}`." \
        in capsys.readouterr().out


def test_import_checks_each_prompts_own_k(tmp_path, capsys):
    """With --spec, a result for sample k of a prompt whose k is smaller is refused (per-prompt k)."""
    spec = write_spec(tmp_path, "http://127.0.0.1:9/v1")  # nothing listens: exported, never sampled
    assert main(["batch", "export", str(spec), "--out", str(tmp_path / "r.jsonl"),
                 "--store", str(tmp_path / "a.sqlite")]) == EXIT_OK
    lines = read_jsonl(tmp_path / "r.jsonl")
    ids = {line["custom_id"] for line in lines}
    beyond = [i.rpartition("-")[0] + "-3" for i in ids if i.endswith("-2") and i.rpartition("-")[0] + "-3" not in ids]
    within = [i for i in ids if i.endswith("-3")]  # the tides prompt (k = 4)
    assert len(beyond) == 4 and len(within) == 2  # 2 prompts of k = 3 × 2 arms; tides × 2 arms
    reply = chat_completion("ok")
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps({"id": f"b{n}", "custom_id": custom_id, "error": None, "response": {
        "status_code": 200, "request_id": f"r{n}", "body": reply}}) + "\n"
        for n, custom_id in enumerate(beyond + within)))
    assert main(["batch", "import", str(results), "--spec", str(spec),
                 "--store", str(tmp_path / "b.sqlite")]) == EXIT_FAILED
    out = capsys.readouterr().out
    assert "imported 2, refused 4 (4 out_of_range)." in out and "but the SPEC has k = 3 (indices 0 … 2)" in out


def test_a_compare_spec_that_runs_on_this_machine_is_refused(tmp_path, capsys):
    spec = write_spec(tmp_path, "unused", sampler={"backend": "simulated"})
    out = tmp_path / "r.jsonl"
    assert main(["batch", "export", str(spec), "--out", str(out), "--store", str(tmp_path / "s.sqlite")]) \
        == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "`sampler.backend` is 'simulated': batch files are for the `openai` backend" in err
    assert "run `python -m dbpa_core compare SPEC.yaml` instead" in err and not out.exists()
    # a compare SPEC embeds with MiniLM on this machine: no embedding requests
    openai = write_spec(tmp_path, "http://127.0.0.1:9/v1")
    assert main(["batch", "export", str(openai), "--embeddings", "--out", str(out),
                 "--store", str(tmp_path / "s.sqlite")]) == EXIT_BAD_INPUT
    assert "`embedder.name` is 'minilm': it runs on this machine" in capsys.readouterr().err
    # a model change to a local model: only the OpenAI-compatible arm is exported, `compare` draws the other
    mixed = write_spec(tmp_path, "http://127.0.0.1:9/v1", perturbed_sampler={"backend": "simulated"})
    assert main(["batch", "export", str(mixed), "--out", str(out), "--store", str(tmp_path / "s.sqlite")]) == EXIT_OK
    printed = capsys.readouterr().out
    assert "10 samples come from a backend that runs on this machine; `compare` draws them itself." in printed
    assert len(read_jsonl(out)) == 10


@pytest.mark.parametrize(("text", "match"), [
    ({"sampler": {"backend": "openai", "model": "m"}, "prompts": ["a"], "perturbed_system": 3},
     "`perturbed_system` must be a text"),
    ({"sampler": {"backend": "openai", "model": "m"}, "prompts": {"original": {"prompt": "a"}}},
     "prompts"),
])
def test_a_bad_spec_is_refused_with_its_key(tmp_path, capsys, text, match):
    """A compare SPEC's errors (by its fields) and an audit SPEC's stay the loaders' own, exit 2."""
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(text))
    assert main(["batch", "export", str(path), "--out", str(tmp_path / "r.jsonl"),
                 "--store", str(tmp_path / "s.sqlite")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "bad.yaml" in err and match in err and "Traceback" not in err
