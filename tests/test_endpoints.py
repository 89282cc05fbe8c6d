"""Samplers and embedders against a real HTTP server on 127.0.0.1 that misbehaves on purpose.

Each failure must end as one clear exception (:class:`SamplingFailed`, an
:class:`EndpointError`) naming the URL, bounded in time, with every sample
already obtained kept in the store; nothing empty is ever stored; a key in
the URL is never written anywhere.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from dbpa_core.data.store import SampleStore
from dbpa_core.embedders import get_embedder
from dbpa_core.samplers import EndpointError, SamplingFailed, get_sampler, redact_url
from servers import Reply, chat_completion, free_port, misbehaving_server


def ok(number, request):
    return Reply(chat_completion(f"answer {number}"))


def openai_sampler(url, **settings):
    return get_sampler("openai", model="m", base_url=url, **{"max_concurrency": 1, "timeout": 5, **settings})


def test_429_with_retry_after_is_honoured():
    def script(number, request):
        if number == 0:
            return Reply({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "1"})
        return ok(number, request)

    with misbehaving_server(script) as (url, requests):
        start = time.monotonic()
        assert openai_sampler(url, max_retries=2).sample("hi", 1) == ["answer 1"]
        assert len(requests) == 2 and time.monotonic() - start >= 0.95


def test_429_until_retries_run_out(store):
    def script(number, request):
        if number < 2:
            return ok(number, request)
        return Reply({"error": {"message": "quota"}}, status=429, headers={"retry-after-ms": "20"})

    with misbehaving_server(script) as (url, requests):
        with pytest.raises(SamplingFailed, match=r"/v1/chat/completions: HTTP 429: rate limited after 3 attempts"
                           ) as caught:
            openai_sampler(url, max_retries=2).sample("hi", 5, store=store)
        assert len(requests) == 2 + 3
    assert (caught.value.n_kept, caught.value.n_requested) == (2, 5)
    assert "2 of 5 samples of this arm are kept in the store" in str(caught.value)


def test_500_is_retried_then_reported():
    with misbehaving_server(lambda n, r: Reply({"error": {"message": "boom"}}, status=500)) as (url, requests):
        with pytest.raises(SamplingFailed, match=r"HTTP 500: server error after 2 attempts .*boom"):
            openai_sampler(url, max_retries=1).sample("hi", 1)
        assert len(requests) == 2


@pytest.mark.parametrize("misbehaviour", [{"stall": 30}, {"trickle": 0.5}], ids=["stall", "trickle"])
def test_timeout_bounds_the_whole_call(misbehaviour):
    """A stalled server, and one that sends a byte every 0.5 s (the client's own timeout,
    a gap between bytes, would wait ≈ 100 s for this body): both stop at `timeout`."""
    with misbehaving_server(lambda n, r: Reply(chat_completion("x" * 150), **misbehaviour)) as (url, requests):
        start = time.monotonic()
        with pytest.raises(SamplingFailed, match=r"no complete reply within `timeout` = 1.5 s, 2 attempt"):
            openai_sampler(url, timeout=1.5, max_retries=1).sample("hi", 1)
        elapsed = time.monotonic() - start
    assert 3.0 <= elapsed < 6.0 and len(requests) == 2


def test_null_content_is_never_stored(store):
    """All replies null (content filter): refused with a count, nothing stored; once the
    server is fixed the same request draws real samples (no cached empties)."""
    fixed = threading.Event()

    def script(number, request):
        return ok(number, request) if fixed.is_set() else Reply(chat_completion(None))

    with misbehaving_server(script) as (url, requests):
        sampler = openai_sampler(url, max_retries=0)
        with pytest.raises(SamplingFailed, match=r"sample 0 came back empty \(or null\) 3 time\(s\) and was refused"
                           ) as caught:
            sampler.sample("hi", 4, store=store)
        assert len(requests) == 3 and caught.value.n_kept == 0
        assert store.count_samples(sampler.describe_request("hi")) == 0
        fixed.set()
        texts = sampler.sample("hi", 4, store=store)
    assert all(t.startswith("answer") for t in texts) and len(set(texts)) == 4


@pytest.mark.parametrize(("reply", "match"), [
    (Reply({"id": "x", "object": "chat.completion"}), "the reply has no `choices`"),
    (Reply(b"<html><body>Welcome to nginx!</body></html>", content_type="text/html"),
     "the reply is not JSON but text starting '<html><body>Welcome to nginx!"),
], ids=["no-choices", "html"])
def test_replies_that_are_not_completions(reply, match, store):
    with misbehaving_server(lambda n, r: reply) as (url, requests):
        with pytest.raises(SamplingFailed, match=match) as caught:
            openai_sampler(url).sample("hi", 2, store=store)
    assert caught.value.url == f"{url}/chat/completions"
    assert store.count_samples(openai_sampler(url).describe_request("hi")) == 0


def test_server_dies_mid_run_and_the_run_resumes(store):
    with misbehaving_server(lambda n, r: ok(n, r) if n < 3 else Reply(die=True)) as (url, requests):
        sampler = openai_sampler(url, max_retries=3)
        start = time.monotonic()
        with pytest.raises(SamplingFailed, match="connection refused: nothing is listening there") as caught:
            sampler.sample("hi", 6, store=store)
        assert time.monotonic() - start < 5  # refused: no retries with backoff
    assert caught.value.n_kept == 3
    with misbehaving_server(lambda n, r: Reply(chat_completion(f"second server {n}"))) as (url2, requests2):
        # Same request key: the base URL is part of it, so move the stored samples' server to the new port.
        resumed = get_sampler("openai", model="m", base_url=url2, max_concurrency=1)
        resumed.base_url = sampler.base_url
        texts = resumed.sample("hi", 6, store=store)
        assert len(requests2) == 3
    assert texts[:3] == ["answer 0", "answer 1", "answer 2"] and texts[3:] == [f"second server {i}" for i in range(3)]


def test_refused_connection_fails_fast():
    url = f"http://127.0.0.1:{free_port()}/v1"
    start = time.monotonic()
    with pytest.raises(SamplingFailed, match=rf"{url}/chat/completions: connection refused") as caught:
        openai_sampler(url, max_retries=5).sample("hi", 2)
    assert time.monotonic() - start < 2
    assert caught.value.n_kept is None and "No sample store was used" in str(caught.value)


@pytest.mark.parametrize(("url", "match"), [
    ("127.0.0.1:8000/v1", r"`base_url` must start with http:// or https://.*http://127.0.0.1:8000/v1"),
    ("http://:8000/v1", "`base_url` has no host name"),
    ("ftp://host/v1", "`base_url` must start with http://"),
])
def test_malformed_base_urls(url, match):
    with pytest.raises(ValueError, match=match):
        openai_sampler(url)
    with pytest.raises(ValueError, match=match):
        get_embedder("openai", base_url=url)


def test_a_server_that_ignores_seed_shared_by_two_writers(tmp_path):
    """Two processes' worth of writers (own samplers, own store connections) draw the same slots
    from a server that ignores `seed`: one text wins per slot, and both runs return exactly
    what the store replays."""
    path = tmp_path / "store.sqlite"

    def script(number, request):
        time.sleep(0.01 * (number % 3))
        return Reply(chat_completion(f"random {uuid.uuid4()}"))

    with misbehaving_server(script) as (url, requests):
        results = {}

        def run(worker):
            sampler = get_sampler("openai", model="m", base_url=url, max_concurrency=3)
            results[worker] = sampler.sample("hi", 12, store=SampleStore(path))

        threads = [threading.Thread(target=run, args=(w,)) for w in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(requests) > 12  # both drew some slots themselves
    replay = get_sampler("openai", model="m", base_url=url).sample("hi", 12, store=SampleStore(path))
    assert results[0] == results[1] == replay
    assert len(set(replay)) == 12


def test_system_prompt_and_per_index_seeds_reach_the_server():
    with misbehaving_server(ok) as (url, requests):
        openai_sampler(url).sample("hi", 2, system="Be brief.", seed=7)
    assert [r["messages"][0] for r in requests] == [{"role": "system", "content": "Be brief."}] * 2
    assert [r["messages"][1]["content"] for r in requests] == ["hi", "hi"]
    assert requests[0]["seed"] != requests[1]["seed"]


def test_credentials_in_the_url_are_used_but_never_written(tmp_path):
    with misbehaving_server(ok) as (url, requests):
        secret_url = url.replace("http://", "http://alice:SECRET-IN-USERINFO@") + "?api_key=SECRET-IN-QUERY&x=1"
        sampler = openai_sampler(secret_url)
        store = SampleStore(tmp_path / "store.sqlite")
        sampler.sample("hi", 2, store=store)
        embedder = get_embedder("openai", base_url=secret_url)
        assert len(requests) == 2
    for shown in (sampler.base_url, sampler.endpoint, str(sampler.identity()), embedder.key):
        assert "SECRET" not in shown
    assert sampler.base_url == f"{url}?api_key=REDACTED&x=1"
    for file in tmp_path.iterdir():
        assert b"SECRET" not in file.read_bytes()
    # a failure message names the URL without its credentials
    dead = f"http://bob:SECRET@127.0.0.1:{free_port()}/v1"
    with pytest.raises(SamplingFailed) as caught:
        openai_sampler(dead).sample("hi", 1)
    assert "SECRET" not in str(caught.value) and "127.0.0.1" in str(caught.value)


def test_redact_url():
    assert redact_url("https://u:p@host:8000/v1?token=t&model=x") == "https://host:8000/v1?token=REDACTED&model=x"
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_url(None) is None


def test_embedder_endpoint_failures_name_the_url():
    with misbehaving_server(lambda n, r: Reply(b"<html>login</html>", content_type="text/html")) as (url, _):
        with pytest.raises(EndpointError, match=rf"{url}/embeddings: the reply is not JSON"):
            get_embedder("openai", base_url=url).embed(["a", "b"])
    with misbehaving_server(lambda n, r: Reply({"error": {"message": "down"}}, status=503)) as (url, requests):
        with pytest.raises(EndpointError, match=r"HTTP 503: server error after 2 attempts"):
            get_embedder("openai", base_url=url, max_retries=1).embed(["a"])
        assert len(requests) == 2
