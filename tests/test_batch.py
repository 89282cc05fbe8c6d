"""Tests of dbpa_core.audit.batch and `python -m dbpa_core batch`: batch inference files."""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request

import pytest
import yaml

from dbpa_core.__main__ import main
from dbpa_core.audit import run_audit
from dbpa_core.audit.batch import (FAILURE_REASONS, MAX_LINES, export_requests, import_results,
                                   sample_custom_id, write_requests)
from dbpa_core.audit.costs import estimate_cost
from dbpa_core.audit.spec import load_spec
from dbpa_core.data.store import SampleStore
from dbpa_core.present.batch import read_export
from dbpa_core.embedders.openai_compatible import OpenAIEmbedder
from dbpa_core.samplers.openai_compatible import OpenAISampler
from servers import LocalAPI, RecordingServer

# Nothing listens there: a SPEC naming it can be exported and imported, never sampled live.
NOWHERE = "http://127.0.0.1:9/v1"


def write_spec(tmp_path, name="spec.yaml", **overrides):
    spec = {"name": "batch", "sampler": {"backend": "openai", "model": "smollm2", "base_url": NOWHERE,
                                         "temperature": 0.9, "max_tokens": 24},
            "embedder": {"name": "minilm"}, "scenario": "seasons_question", "perturbations": ["paraphrase_1", "mars"],
            "k": 3, "n_resamples": 200, "seed": 0, **overrides}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec, allow_unicode=True))
    return path


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def output_line(custom_id, content="a reply", *, status=200, error=None, n=0, model="smollm2"):
    """One line of the OpenAI batch output format (request output object) answered by ``model``."""
    body = None if status != 200 else {
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}
    return {"id": f"batch_req_{n}", "custom_id": custom_id,
            "response": {"status_code": status, "request_id": f"req_{n}", "body": body}, "error": error}


def run_like_a_batch_engine(base_url, requests_path, results_path):
    """What OpenAI's Batch API or vLLM's run_batch does: POST each line's body to its url and write one
    output line per request (status, body; `error` for failures)."""
    root = base_url.removesuffix("/v1")
    with results_path.open("w", encoding="utf-8") as out:
        for n, request in enumerate(read_jsonl(requests_path)):
            call = urllib.request.Request(root + request["url"], data=json.dumps(request["body"]).encode(),
                                          headers={"Content-Type": "application/json"}, method=request["method"])
            try:
                with urllib.request.urlopen(call, timeout=300) as response:
                    status, body, error = response.status, json.loads(response.read()), None
            except urllib.error.HTTPError as failure:
                status, body, error = failure.code, None, {"code": str(failure.code), "message": failure.reason}
            out.write(json.dumps({"id": f"batch_req_{n}", "custom_id": request["custom_id"],
                                  "response": {"status_code": status, "request_id": f"req_{n}", "body": body},
                                  "error": error}) + "\n")


def forbid_api_calls(monkeypatch):
    def no_call(*args, **kwargs):
        raise AssertionError("the audit called the API although every sample and embedding is stored")

    monkeypatch.setattr(OpenAISampler, "complete", no_call)
    monkeypatch.setattr(OpenAIEmbedder, "embed_batch", no_call)


def comparable(report: dict) -> dict:
    return {key: value for key, value in report.items() if key not in ("created", "versions")}


# ---------------------------------------------------------------- round trip
def test_round_trip_through_a_real_server_equals_the_live_audit(tmp_path, llama_server, monkeypatch):
    """Export → each line executed against llama.cpp's server → import → audit from the store,
    for samples and embeddings, gives the report of the live audit."""
    spec = write_spec(tmp_path, sampler={"backend": "openai", "model": "smollm2", "base_url": llama_server,
                                         "temperature": 0.9, "max_tokens": 24},
                      embedder={"name": "openai", "model": "smollm2-embed", "base_url": llama_server}, k=4)
    live, batch = tmp_path / "live.sqlite", tmp_path / "batch.sqlite"
    assert main(["audit", str(spec), "--out", str(tmp_path / "live"), "--store", str(live)]) == 0

    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    assert main(["batch", "export", str(spec), "--out", str(requests), "--store", str(batch)]) == 0
    assert len(read_jsonl(requests)) == 3 * 4
    run_like_a_batch_engine(llama_server, requests, results)
    assert main(["batch", "import", str(results), "--spec", str(spec), "--store", str(batch)]) == 0
    embed_requests, embed_results = tmp_path / "embed-requests.jsonl", tmp_path / "embed-results.jsonl"
    assert main(["batch", "export", str(spec), "--embeddings", "--out", str(embed_requests),
                 "--store", str(batch)]) == 0
    assert {line["url"] for line in read_jsonl(embed_requests)} == {"/v1/embeddings"}
    run_like_a_batch_engine(llama_server, embed_requests, embed_results)
    assert main(["batch", "import", str(embed_results), "--store", str(batch)]) == 0

    forbid_api_calls(monkeypatch)
    assert main(["audit", str(spec), "--out", str(tmp_path / "batch"), "--store", str(batch)]) == 0
    from_live = json.loads((tmp_path / "live" / "report.json").read_text())
    from_batch = json.loads((tmp_path / "batch" / "report.json").read_text())
    assert comparable(from_batch) == comparable(from_live)
    # same texts in the same slots, not only the same statistics
    parsed = load_spec(spec)
    family_live = run_audit(parsed, store=SampleStore(live))
    family_batch = run_audit(parsed, store=SampleStore(batch))
    for a, b in zip(family_live.results, family_batch.results):
        assert a.perturbed.texts == b.perturbed.texts and a.original.texts == b.original.texts


# ------------------------------------------------ exported = what is sent live
def test_exported_lines_are_exactly_the_live_requests_and_the_store_decides_what_is_missing(tmp_path):
    with RecordingServer() as server:
        spec_path = write_spec(tmp_path, sampler={"backend": "openai", "model": "m", "base_url": server.base_url,
                                                  "temperature": 0.4, "max_tokens": 17},
                               perturbed_sampler={"backend": "openai", "model": "m2", "base_url": server.base_url,
                                                  "max_tokens": 9},
                               scenario="customer_support", perturbations=None, k=5)
        spec = load_spec(spec_path)
        store = SampleStore(tmp_path / "export.sqlite")
        export = export_requests(spec, store=store)
        run_audit(spec, store=SampleStore(tmp_path / "live.sqlite"))
    n_arms = 1 + len(spec.perturbation_ids)
    assert len(export.requests) == len(server.bodies) == n_arms * 5
    canonical = sorted(json.dumps(body, sort_keys=True) for body in server.bodies)
    assert sorted(json.dumps(r.body, sort_keys=True) for r in export.requests) == canonical
    systems = {m["content"] for r in export.requests for m in r.body["messages"] if m["role"] == "system"}
    assert systems  # the scenario's system prompts travel in the lines
    assert {r.body["model"] for r in export.requests if r.body["max_tokens"] == 9} == {"m2"}
    # one file per model (OpenAI accepts one model per batch file), each line in the input format
    written = write_requests(export, tmp_path / "requests.jsonl")
    assert len(written) == 2 and all(len({r.body["model"] for r in rs}) == 1 for rs in written.values())
    assert all(set(line) == {"custom_id", "method", "url", "body"} and line["method"] == "POST"
               for path in written for line in read_jsonl(path))
    assert max(len(r.custom_id) for r in export.requests) <= 64

    # the store decides: after importing the original arm's results only those are no longer requested
    original = [r for r in export.requests if r.body["model"] == "m"][:5]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(output_line(r.custom_id, f"text {n}", n=n, model="m")) + "\n"
                               for n, r in enumerate(original)))
    assert import_results(results, store=store).n_stored == 5
    again = export_requests(spec, store=store)
    assert again.n_stored == 5 and len(again.requests) == len(export.requests) - 5
    assert not {r.custom_id for r in original} & {r.custom_id for r in again.requests}


def test_large_exports_split_at_the_line_limit(tmp_path, store):
    export = export_requests(load_spec(write_spec(tmp_path, k=5)), store=store)
    written = write_requests(export, tmp_path / "requests.jsonl", max_lines=4)
    assert [len(requests) for requests in written.values()] == [4, 4, 4, 3]
    assert [path.name for path in written] == [f"requests-00{n}.jsonl" for n in range(1, 5)]
    assert sum(len(read_jsonl(path)) for path in written) == 15
    assert MAX_LINES == 50_000
    with pytest.raises(ValueError, match="`max_lines`"):
        write_requests(export, tmp_path / "r.jsonl", max_lines=0)


def test_batch_prices_are_half_the_list_price():
    args = (["x" * 400] * 3, 10)
    live = estimate_cost(*args, max_tokens=100, sampler_model="gpt-4o-mini", embedder_model="text-embedding-3-small")
    batch = estimate_cost(*args, max_tokens=100, sampler_model="gpt-4o-mini",
                          embedder_model="text-embedding-3-small", batch=True)
    assert batch.total_cost == pytest.approx(live.total_cost / 2)
    assert estimate_cost(*args, max_tokens=100, sampler_model="local", batch=True).total_cost == 0.0
    assert estimate_cost(*args, max_tokens=100, sampler_model="smollm2", batch=True).total_cost is None


def test_export_prints_the_batch_cost(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # exporting needs no key
    spec = write_spec(tmp_path, sampler={"backend": "openai", "model": "gpt-4o-mini", "max_tokens": 100})
    assert main(["batch", "export", str(spec), "--out", str(tmp_path / "r.jsonl"),
                 "--store", str(tmp_path / "s.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "0 of 9 samples are already stored; 9 request lines" in out
    assert "gpt-4o-mini (api.openai.com) at Batch API prices" in out and "$" in out


# ------------------------------------------------------------------ import
def exported(tmp_path, store, **overrides):
    spec_path = write_spec(tmp_path, **overrides)
    export = export_requests(load_spec(spec_path), store=store)
    return spec_path, [r.custom_id for r in export.requests]


def stored_texts(path):
    with sqlite3.connect(path) as connection:
        return sorted(text for (text,) in connection.execute("SELECT text FROM samples"))


def test_import_stores_good_lines_and_reports_every_bad_one(tmp_path, capsys):
    store = SampleStore(tmp_path / "s.sqlite")
    spec_path, ids = exported(tmp_path, store)
    good = [output_line(custom_id, f"good {n}", n=n) for n, custom_id in enumerate(ids[:5])]
    lines = [json.dumps(line) for line in good]
    lines.append(json.dumps(output_line(ids[5], n=5))[:40])                                   # truncated
    lines.append("this is not json")                                                            # malformed
    lines.append(json.dumps(output_line(ids[6], status=429, n=6, error={
        "code": "rate_limit_exceeded", "message": "slow down"})))                              # error object
    lines.append(json.dumps({"id": "vllm-1", "custom_id": ids[7], "error": "Request must not be sent in "
                             "stream mode", "response": {"status_code": 400, "request_id": "r", "body": None}}))
    lines.append(json.dumps(output_line(ids[8], None, n=8)))                                    # null content
    lines.append(json.dumps(output_line("dbpa-s-" + "0" * 40 + "-0", "never asked", n=9)))       # never exported
    lines.append(json.dumps(output_line(ids[0], "a second answer", n=10)))                      # duplicate
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")

    code = main(["batch", "import", str(tmp_path / "results.jsonl"), "--store", str(tmp_path / "s.sqlite")])
    out = capsys.readouterr().out
    assert code == 3  # stored what it could; the rest is still missing
    result = import_results(tmp_path / "results.jsonl", store=store)
    assert result.counts == {"malformed": 2, "error": 2, "null_content": 1, "unknown": 1, "duplicate": 1}
    assert result.n_lines == 12 and result.n_already_stored == 5 and result.n_stored == 0
    assert "12 lines read; 5 results stored, 0 were already stored" in out and "7 lines failed" in out
    assert f"2 × {FAILURE_REASONS['error']}: lines 8, 9; first: rate_limit_exceeded: slow down" in out
    assert f"1 × {FAILURE_REASONS['duplicate']}: line 12;" in out and "lines 6, 7" in out
    assert stored_texts(tmp_path / "s.sqlite") == [f"good {n}" for n in range(5)]  # nothing wrong stored
    again = export_requests(load_spec(spec_path), store=store)
    assert sorted(r.custom_id for r in again.requests) == sorted(ids[5:])


def test_importing_the_same_file_twice_is_harmless(tmp_path, capsys):
    store_path = tmp_path / "s.sqlite"
    _, ids = exported(tmp_path, SampleStore(store_path))
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(output_line(c, f"t{n}", n=n)) + "\n" for n, c in enumerate(ids)))
    assert main(["batch", "import", str(results), "--store", str(store_path)]) == 0
    assert main(["batch", "import", str(results), "--store", str(store_path)]) == 0
    assert "0 results stored, 9 were already stored" in capsys.readouterr().out
    assert stored_texts(store_path) == sorted(f"t{n}" for n in range(9))
    # another text for a filled slot never replaces it, and is counted
    results.write_text(json.dumps(output_line(ids[0], "different", n=0)) + "\n")
    assert import_results(results, store=SampleStore(store_path)).n_differing == 1
    assert "different" not in stored_texts(store_path)


def test_an_empty_reply_is_never_a_sample(tmp_path):
    store = SampleStore(tmp_path / "s.sqlite")
    spec_path, ids = exported(tmp_path, store)
    _, description, index = store.batch_requests([ids[1]])[ids[1]]
    store.put_sample(description, index, "")  # what an older version stored for an empty reply
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps(output_line(ids[0], " \n ", n=0)) + "\n"
                       + json.dumps(output_line(ids[1], "a real answer", n=1)) + "\n")
    result = import_results(results, store=store)
    assert result.counts == {"null_content": 1} and "is empty" in result.failures[0].message
    assert result.n_stored == 1 and stored_texts(tmp_path / "s.sqlite") == ["a real answer"]
    assert ids[0] in {r.custom_id for r in export_requests(load_spec(spec_path), store=store).requests}


def test_a_file_from_another_spec(tmp_path, capsys):
    store_path = tmp_path / "s.sqlite"
    store = SampleStore(store_path)
    spec_a, _ = exported(tmp_path, store)
    spec_b, ids_b = exported(tmp_path, store, name="b.yaml", seed=7)
    results = tmp_path / "results-b.jsonl"
    results.write_text("".join(json.dumps(output_line(c, f"b{n}", n=n)) + "\n" for n, c in enumerate(ids_b)))
    code = main(["batch", "import", str(results), "--spec", str(spec_a), "--store", str(store_path)])
    out = capsys.readouterr().out
    assert code == 2 and f"9 × {FAILURE_REASONS['other_spec']}" in out
    assert stored_texts(store_path) == []
    # in a store that never exported them and without --spec, the lines are unknown
    assert main(["batch", "import", str(results), "--store", str(tmp_path / "other.sqlite")]) == 2
    assert f"9 × {FAILURE_REASONS['unknown']}" in capsys.readouterr().out
    # with their own SPEC they import into any store: the SPEC names the slots
    assert main(["batch", "import", str(results), "--spec", str(spec_b), "--store",
                 str(tmp_path / "other.sqlite")]) == 0
    assert len(stored_texts(tmp_path / "other.sqlite")) == 9


def test_embedding_lines_are_checked_like_samples(tmp_path):
    store = SampleStore(tmp_path / "s.sqlite")
    spec_path = write_spec(tmp_path, embedder={"name": "openai", "model": "text-embedding-3-small",
                                               "base_url": NOWHERE, "batch_size": 4})
    spec = load_spec(spec_path)
    ids = [r.custom_id for r in export_requests(spec, store=store).requests]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(output_line(c, f"text {n % 5}", n=n)) + "\n" for n, c in enumerate(ids)))
    waiting = export_requests(spec, store=store, embeddings=True)
    assert not waiting.requests and waiting.n_waiting == 9 and "import the samples first" in read_export(waiting)
    import_results(results, store=store)
    export = export_requests(spec, store=store, embeddings=True)
    # grouped as the live run calls: arm by arm, only texts not embedded yet, ≤ batch_size per line
    assert export.n_needed == 5 and [r.body["input"] for r in export.requests] == [
        ["text 0", "text 1", "text 2"], ["text 3", "text 4"]]
    lines = []
    for n, request in enumerate(export.requests):
        texts = request.body["input"]
        data = [{"object": "embedding", "index": i, "embedding": [1.0 + i, 2.0, 0.0]} for i in range(len(texts))]
        if n == 1:
            data = []  # no vector for the last text
        lines.append({"id": f"b{n}", "custom_id": request.custom_id, "error": None, "response": {
            "status_code": 200, "request_id": "r", "body": {"object": "list", "data": data}}})
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = import_results(results, store=store, spec=spec)
    assert result.n_stored == 3 and result.counts == {"null_content": 1}
    vectors = store.get_embeddings("openai:" + NOWHERE + ":text-embedding-3-small", export.requests[0].body["input"])
    assert len(vectors) == 3 and all(abs(float((v ** 2).sum()) - 1) < 1e-6 for v in vectors.values())
    assert len(export_requests(spec, store=store, embeddings=True).requests) == 1


@pytest.mark.parametrize(("content", "match"), [
    (None, "file not found"),
    ("", "the file is empty"),
    ('{"custom_id": "x", "method": "POST", "url": "/v1/chat/completions", "body": {}}\n', "a request line"),
])
def test_unusable_files(tmp_path, capsys, content, match):
    path = tmp_path / "results.jsonl"
    if content is not None:
        path.write_text(content)
    assert main(["batch", "import", str(path), "--store", str(tmp_path / "s.sqlite")]) == 2
    captured = capsys.readouterr()
    assert match in captured.err + captured.out


def test_export_refuses_what_runs_on_this_machine(tmp_path, capsys, store):
    spec = write_spec(tmp_path, sampler={"backend": "simulated"})
    assert main(["batch", "export", str(spec), "--out", str(tmp_path / "r.jsonl"),
                 "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "`sampler.backend` is 'simulated'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="`embedder.name` is 'minilm'"):
        export_requests(load_spec(write_spec(tmp_path)), store=store, embeddings=True)
    # a system perturbation to a local model: only the OpenAI-compatible arms are exported
    mixed = load_spec(write_spec(tmp_path, perturbed_sampler={"backend": "simulated"}))
    export = export_requests(mixed, store=store)
    assert len(export.requests) == 3 and export.n_local == 6 and "`audit` draws them" in read_export(export)


def test_custom_ids_name_the_slot(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    sampler = OpenAISampler("smollm2", base_url=NOWHERE)
    description = sampler.describe_request(spec.scenario.prompt, temperature=0.9, max_tokens=24, seed=0)
    export = export_requests(spec, store=SampleStore(tmp_path / "s.sqlite"))
    assert export.requests[2].custom_id == sample_custom_id(description, 2)


# ------------------------------------------ OpenAI's Batch endpoints (optional)
class FakeBatchAPI(LocalAPI):
    """OpenAI's Files and Batches endpoints, as the `openai` client calls them: the uploaded
    requests are 'run' by answering each one, except the last, which lands in the error file."""

    def __init__(self):
        super().__init__()
        self.requests, self.done, self.created = [], False, []

    def answer(self, method, path, headers, raw):
        if method == "POST" and path == "/v1/files":
            boundary = headers["Content-Type"].split("boundary=")[1].encode()
            part = next(p for p in raw.split(b"--" + boundary) if b'name="file"' in p)
            content = part.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n", 1)[0].decode()
            self.requests = [json.loads(line) for line in content.splitlines() if line.strip()]
            return {"id": "file-in", "object": "file", "bytes": len(content), "created_at": 0,
                    "filename": "requests.jsonl", "purpose": "batch", "status": "processed"}, "application/json"
        if method == "POST":
            self.created.append(json.loads(raw))
        if path.startswith("/v1/batches"):
            return self.batch(), "application/json"
        answered, failed = self.requests[:-1], self.requests[-1:]
        lines = ([output_line(r["custom_id"], f"answer {n}", n=n) for n, r in enumerate(answered)]
                 if "file-out" in path else
                 [{"id": "batch_req_x", "custom_id": r["custom_id"], "response": None,
                   "error": {"code": "server_error", "message": "try again"}} for r in failed])
        return "".join(json.dumps(line) + "\n" for line in lines), "application/octet-stream"

    def batch(self):
        n = len(self.requests)
        return {"id": "batch_1", "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": "file-in",
                "completion_window": "24h", "created_at": 0, "status": "completed" if self.done else "in_progress",
                "output_file_id": "file-out" if self.done else None, "error_file_id": "file-err" if self.done else None,
                "request_counts": {"total": n, "completed": n - 1 if self.done else 0, "failed": 1 if self.done else 0}}


def test_submit_status_fetch_through_the_batch_endpoints(tmp_path, capsys):
    spec, store = write_spec(tmp_path), str(tmp_path / "s.sqlite")
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    assert main(["batch", "export", str(spec), "--out", str(requests), "--store", store]) == 0
    with FakeBatchAPI() as api:
        assert main(["batch", "submit", str(requests), "--base-url", api.base_url]) == 0
        assert api.requests == read_jsonl(requests)  # the file went up as written
        assert api.created == [{"input_file_id": "file-in", "endpoint": "/v1/chat/completions",
                                "completion_window": "24h"}]
        assert main(["batch", "fetch", "batch_1", "--out", str(results), "--base-url", api.base_url]) == 3
        assert "is in_progress" in capsys.readouterr().out and not results.exists()
        api.done = True
        assert main(["batch", "status", "batch_1", "--base-url", api.base_url]) == 0
        assert "batch_1 is completed: 8 of 9 requests done, 1 failed" in capsys.readouterr().out
        assert main(["batch", "fetch", "batch_1", "--out", str(results), "--base-url", api.base_url]) == 0
    assert len(read_jsonl(results)) == 9  # output and error lines in one file
    assert main(["batch", "import", str(results), "--spec", str(spec), "--store", store]) == 3
    out = capsys.readouterr().out
    assert "8 results stored" in out and "server_error: try again" in out
    assert len(stored_texts(tmp_path / "s.sqlite")) == 8


def test_submit_refuses_a_file_that_is_not_a_requests_file(tmp_path, capsys):
    (tmp_path / "x.jsonl").write_text("not json\n")
    assert main(["batch", "submit", str(tmp_path / "x.jsonl"), "--base-url", NOWHERE]) == 2
    assert "not a batch request line" in capsys.readouterr().err
