"""Server faults: every failure that is the server's ends with exit 3 and a one-line reason naming the URL,
never exit 2 (the user's input) and never a traceback; huge replies are capped while they are read.

The servers are real HTTP servers on 127.0.0.1 (tests/servers.py) that misbehave on purpose.
"""

from __future__ import annotations

import gzip
import hashlib
import sqlite3
import time
import tracemalloc
from contextlib import closing

import pytest

from servers import Reply, chat_completion, misbehaving_server

from .conftest import SECRET, assert_clean, cli, simulated_spec, write_spec

MAX_REPLY_BYTES = 64 * 2**20  # the README's cap on a reply

CHAT_FAULTS = {
    "non-JSON 200": Reply(b"this is not json", content_type="application/json"),
    "HTML 200": Reply(b"<!doctype html><title>Sign in</title>", content_type="text/html"),
    "truncated JSON": Reply(b'{"id": "x", "choices": [{"message": {"content": "hi"', content_type="application/json"),
    "body cut short": Reply(chat_completion("hello"), content_length=10_000),
    "choices a mapping": Reply({"choices": {"0": {"message": {"content": "hi"}}}}),
    "choices a string": Reply({"choices": "hi"}),
    "choice null": Reply({"choices": [None]}),
    "message a string": Reply({"choices": [{"message": "hi"}]}),
    "content a number": Reply({"choices": [{"message": {"content": 5}}]}),
    "a JSON list": Reply([1, 2, 3]),
    "JSON null": Reply(None),
    "nested 100 000 deep": Reply(b"[" * 100_000 + b"]" * 100_000),
    "lone surrogate in the text": Reply(b'{"choices": [{"message": {"content": "half \\ud800"}}]}'),
    "a 2 MB answer": Reply(chat_completion("x" * (2 * 2**20))),
    "500 after retries": Reply({"error": {"message": "boom"}}, status=500),
    "503 HTML after retries": Reply(b"<html>Bad gateway</html>", status=503, content_type="text/html"),
    "401 repeating the key": Reply({"error": {"message": f"Incorrect API key provided: {SECRET}"}}, status=401),
    "huge Content-Length": Reply(b"{}", content_length=MAX_REPLY_BYTES + 1),
    "endless body": Reply(b'{"choices": [' * 4096, endless=True),
    "gzip bomb": Reply(gzip.compress(b" " * (MAX_REPLY_BYTES + 2**20)), headers={"Content-Encoding": "gzip"}),
    "unknown encoding": Reply(b"xx", headers={"Content-Encoding": "br"}),
}


def openai_spec(tmp_path, url, **overrides):
    # One call at a time, so that the memory bound below is the cap of one reply.
    return write_spec(tmp_path, simulated_spec(sampler={"backend": "openai", "model": "m", "base_url": url,
                                                        "max_retries": 1, "timeout": 20, "max_concurrency": 1},
                                               **overrides))


def samples_in(path) -> int:
    if not path.exists():
        return 0
    with closing(sqlite3.connect(path)) as connection:
        return connection.execute("SELECT COUNT(*) FROM samples").fetchone()[0]


@pytest.mark.parametrize("case", CHAT_FAULTS, ids=CHAT_FAULTS)
def test_chat_faults_are_exit_3_with_one_line(tmp_path, case):
    reply = CHAT_FAULTS[case]
    tracemalloc.start()
    try:
        with misbehaving_server(lambda n, r: reply) as (url, requests):
            started = time.monotonic()
            outcome = assert_clean(cli("audit", openai_spec(tmp_path, url), "--store", tmp_path / "s.sqlite",
                                       "--out", tmp_path / "o"), 3)
            elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert url in outcome.error and elapsed < 60
    assert samples_in(tmp_path / "s.sqlite") == 0 and not (tmp_path / "o").exists()
    assert peak < 3 * MAX_REPLY_BYTES  # a huge reply is cut while it is read, never held whole


EMBEDDING_FAULTS = {
    "data not a list": {"object": "list", "data": {"0": [1, 2]}},
    "too few vectors": {"object": "list", "data": [{"index": 0, "embedding": [1.0, 0.0]}]},
    "NaN": {"object": "list", "data": None},
    "zero vector": {"object": "list", "data": None},
    "mixed dimensions": {"object": "list", "data": None},
    "strings for numbers": {"object": "list", "data": None},
    "index repeated": {"object": "list", "data": None},
    "a chat completion": chat_completion("not an embedding"),
}


def embedding_reply(case, request):
    n = len(request["input"])
    body = EMBEDDING_FAULTS[case]
    if body.get("data", 1) is not None:
        return Reply(body)
    vectors = {"NaN": [[float("nan"), 1.0]] * n, "zero vector": [[0.0, 0.0]] + [[1.0, 0.0]] * (n - 1),
               "mixed dimensions": [[1.0, 0.0]] + [[1.0, 0.0, 0.0]] * (n - 1),
               "strings for numbers": [["1", "0"]] * n, "index repeated": [[1.0, 0.0]] * n}[case]
    data = [{"object": "embedding", "index": 0 if case == "index repeated" else i, "embedding": v}
            for i, v in enumerate(vectors)]
    payload = ('{"object": "list", "data": ' + str(data).replace("'", '"').replace("nan", "NaN") + "}").encode()
    return Reply(payload)


@pytest.mark.parametrize("case", EMBEDDING_FAULTS, ids=EMBEDDING_FAULTS)
def test_embedding_faults_are_exit_3_and_store_no_vector(tmp_path, case):
    with misbehaving_server(lambda n, r: embedding_reply(case, r)) as (url, _):
        spec = write_spec(tmp_path, simulated_spec(embedder={"name": "openai", "model": "e", "base_url": url,
                                                             "max_retries": 0}))
        outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o"), 3)
    assert f"{url}/embeddings" in outcome.error
    with closing(sqlite3.connect(tmp_path / "s.sqlite")) as connection:
        assert connection.execute("SELECT COUNT(*) FROM embeddings").fetchone() == (0,)


@pytest.mark.parametrize(("command", "reply"), [
    (["status", "batch_abc"], Reply({"error": {"message": "Not Found"}}, status=404)),
    (["status", "batch_abc"], Reply(b"<html>hello</html>", content_type="text/html")),
    (["status", "batch_abc"], Reply({"object": "list", "data": []})),
    (["fetch", "batch_abc", "--out", "results.jsonl"], Reply({"error": {"message": "Not Found"}}, status=404)),
    (["submit", "requests.jsonl"], Reply({"detail": "Not Found"}, status=404)),
    (["status", "batch_abc"], Reply(b"not json at all", content_type="application/json")),
], ids=["status 404", "status HTML", "status another object", "fetch 404", "submit 404", "status not JSON"])
def test_a_server_without_a_batch_api(tmp_path, command, reply):
    (tmp_path / "requests.jsonl").write_text('{"custom_id": "x", "method": "POST", "url": "/v1/chat/completions", '
                                             '"body": {"model": "m"}}\n')
    with misbehaving_server(lambda n, r: reply) as (url, _):
        outcome = assert_clean(cli("batch", *command, "--base-url", url), 3)
    assert url in outcome.error
    assert not (tmp_path / "results.jsonl").exists()


def test_a_batch_id_that_is_not_one_is_bad_input(tmp_path):
    outcome = assert_clean(cli("batch", "status", "../../etc/passwd", "--base-url", "http://127.0.0.1:9/v1"), 2)
    assert "`BATCH_ID`" in outcome.error


# --------------------------------------------------------------------------- the command line against a server
# that misbehaves part-way: a clear one-line error, the samples already drawn kept, and the same command resumes
def answer(request, number):
    """A chat completion, or for an embeddings call one vector per text (a digest of it: finite, non-zero)."""
    if "input" in request:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        vectors = [[1.0 + b / 255 for b in hashlib.sha256(text.encode()).digest()[:4]] for text in texts]
        return Reply({"object": "list", "model": "e", "data": [{"object": "embedding", "index": i, "embedding": v}
                                                               for i, v in enumerate(vectors)]})
    return Reply(chat_completion(f"answer {number}"))


PART_WAY_FAULTS = {  # fault → what the one error line says
    "slow (stalls past the timeout)": (Reply({}, stall=30), "no complete reply within `timeout` = 1 s, 2 attempt(s)"),
    "500s": (Reply({"error": {"message": "boom"}}, status=500), "HTTP 500: server error after 2 attempts"),
    "malformed JSON": (Reply(b'{"choices": [{"message": ', content_type="application/json"), "is not valid JSON"),
    "429 with Retry-After": (Reply({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "1"}),
                             "HTTP 429: rate limited after 2 attempts"),
    "cut connection": (Reply(hangup=True), "the connection failed 2 times"),
}
KEPT = 4  # requests answered before the server starts to misbehave


@pytest.mark.parametrize("case", PART_WAY_FAULTS, ids=PART_WAY_FAULTS)
def test_a_server_failing_part_way_loses_no_sample_and_the_run_resumes(tmp_path, case):
    fault, reason = PART_WAY_FAULTS[case]
    state = {"healed": False, "chat": 0}

    def script(number, request):
        if "input" in request or state["healed"] or state["chat"] < KEPT:
            state["chat"] += "input" not in request
            return answer(request, state["chat"] - 1)
        return fault

    store = tmp_path / "s.sqlite"
    with misbehaving_server(script) as (url, requests):
        spec = write_spec(tmp_path, simulated_spec(
            sampler={"backend": "openai", "model": "m", "base_url": url, "max_retries": 1, "timeout": 1,
                     "max_concurrency": 1},
            embedder={"name": "openai", "model": "e", "base_url": url, "max_retries": 0}))
        started = time.monotonic()
        failed = assert_clean(cli("audit", spec, "--store", store, "--out", tmp_path / "o"), 3)
        assert time.monotonic() - started < 30  # retries are bounded: the run never hangs
        assert f"{url}/chat/completions" in failed.error and reason in failed.error, failed.error
        assert f"{KEPT} of 6 samples of this arm are kept in the store" in failed.err
        assert samples_in(store) == KEPT and not (tmp_path / "o").exists()

        state["healed"] = True
        before = len(requests)
        resumed = assert_clean(cli("audit", spec, "--store", store, "--out", tmp_path / "o"), 0)
        chat_calls = [r for r in requests[before:] if "messages" in r]
    # 3 arms of k = 6: the second run asks only for the 14 samples the first did not get
    assert len(chat_calls) == 3 * 6 - KEPT, resumed.text[-2000:]
    assert samples_in(store) == 3 * 6 and (tmp_path / "o" / "results.csv").exists()
    with closing(sqlite3.connect(store)) as connection:
        texts = {row[0] for row in connection.execute("SELECT text FROM samples")}
    assert {f"answer {i}" for i in range(KEPT)} <= texts  # the first run's samples are the ones used


def test_a_429_with_retry_after_is_waited_for_and_the_run_finishes(tmp_path):
    """Within the retries, Retry-After is honoured: the audit waits and finishes (exit 0), nothing drawn twice."""
    def script(number, request):
        if number == 1:
            return Reply({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "2"})
        return answer(request, number)

    with misbehaving_server(script) as (url, requests):
        spec = write_spec(tmp_path, simulated_spec(
            sampler={"backend": "openai", "model": "m", "base_url": url, "max_retries": 2, "max_concurrency": 1},
            embedder={"name": "openai", "model": "e", "base_url": url, "max_retries": 0}))
        started = time.monotonic()
        assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o"), 0)
        elapsed = time.monotonic() - started
    assert elapsed >= 2  # the server's Retry-After, not the default backoff of 0.5 s
    assert len([r for r in requests if "messages" in r]) == 3 * 6 + 1 and samples_in(tmp_path / "s.sqlite") == 18
