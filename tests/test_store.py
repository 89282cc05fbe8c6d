"""Tests of dbpa_core.data.store: reuse, resume, concurrency, no secrets."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import sys
import types
import uuid

import pytest

from dbpa_core.samplers import get_sampler
from dbpa_core.data.store import SampleStore, request_key
from test_samplers import _Counting


def test_reuse_k20_then_k40(store):
    sampler = _Counting()
    first = sampler.sample("p", 20, store=store)
    assert sorted(sampler.calls) == list(range(20))
    second = sampler.sample("p", 40, store=store)
    assert second[:20] == first
    assert sorted(sampler.calls) == list(range(40))  # only 20 new draws


def test_interrupted_run_resumes_without_redrawing(store):
    crashing = _Counting(fail_at=7)
    with pytest.raises(ConnectionError):
        crashing.sample("p", 12, store=store)
    assert store.count_samples(crashing.describe_request("p")) == 7
    resumed = _Counting()
    texts = resumed.sample("p", 12, store=store)
    assert sorted(resumed.calls) == list(range(7, 12))  # nothing drawn twice
    assert texts == _Counting().sample("p", 12)


def test_key_separates_settings(store):
    sampler = _Counting()
    keys = {request_key(sampler.describe_request("p", temperature=t, seed=s, system=sy))
            for t in (0.5, 1.0) for s in (0, 1) for sy in ("", "be brief")}
    assert len(keys) == 8


class _IgnoresSeed(_Counting):
    """A backend whose outputs do not depend on the seed (OpenAI's seed is best-effort)."""

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        from dbpa_core.samplers import Completion

        return Completion(f"{prompt} {os.getpid()} {uuid.uuid4()}")


def _writer(path, worker, out):
    store = SampleStore(path)
    shared = _IgnoresSeed(concurrency=2).sample("shared prompt", 60, store=store)
    _Counting().sample(f"own prompt {worker}", 30, store=store)
    out.write_text(json.dumps(shared))


def test_concurrent_processes_do_not_corrupt_and_report_what_the_store_replays(tmp_path, monkeypatch):
    # A spawned process re-runs the parent's __main__; an AppTest run earlier in the session leaves a script of its
    # own there (Streamlit's script runner sets sys.modules["__main__"]), so the workers start from a clean one.
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    path = tmp_path / "store.sqlite"
    SampleStore(path)
    context = multiprocessing.get_context("spawn")
    outs = [tmp_path / f"worker{w}.json" for w in range(4)]
    workers = [context.Process(target=_writer, args=(path, w, outs[w])) for w in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    (rows,) = connection.execute("SELECT COUNT(*) FROM samples").fetchone()
    assert rows == 60 + 4 * 30
    replay = _IgnoresSeed().sample("shared prompt", 60, store=SampleStore(path))
    assert all(json.loads(out.read_text()) == replay for out in outs)
    assert len(set(replay)) == 60


def test_put_sample_returns_the_first_write(store):
    description = {"backend": "x", "prompt": "p"}
    assert store.put_sample(description, 0, "first", [-0.5]) == ("first", [-0.5])
    assert store.put_sample(description, 0, "second") == ("first", [-0.5])
    assert store.put_sample(description, 1, "") == ("", None)
    assert store.put_sample(description, 1, "real") == ("real", None)  # an empty sample is not kept


def test_a_folder_or_a_foreign_file_is_not_a_store(tmp_path):
    with pytest.raises(ValueError, match=f"`store`: {tmp_path} is a folder; give a file path such as"):
        SampleStore(tmp_path)
    foreign = tmp_path / "notes.txt"
    foreign.write_text("my notes " * 200)
    with pytest.raises(ValueError, match="is not a sample store .*give a new file path"):
        SampleStore(foreign)
    assert foreign.read_text() == "my notes " * 200


def test_api_key_never_written(tmp_path, llama_server):
    path = tmp_path / "store.sqlite"
    sampler = get_sampler("openai", model="smollm2", base_url=llama_server, api_key="sk-TOPSECRET-42")
    sampler.sample("Say hi.", 2, max_tokens=4, store=SampleStore(path))
    for file in tmp_path.iterdir():
        assert b"sk-TOPSECRET-42" not in file.read_bytes()


def test_secret_named_settings_are_refused():
    with pytest.raises(ValueError, match="looks like a secret"):
        request_key({"backend": "x", "api_key": "sk-1"})
    assert request_key({"max_tokens": 5})  # not a secret


def test_embeddings_cached(store):
    import numpy as np

    from dbpa_core.embedders import Embedder

    class Counting(Embedder):
        name = "counting"
        seen: list = []

        def embed_batch(self, texts):
            self.seen.extend(texts)
            return np.array([[len(t) + 1.0, 1.0] for t in texts])

    embedder = Counting()
    first = embedder.embed(["a", "bb", "a", ""], store=store)
    second = embedder.embed(["bb", "ccc"], store=store)
    assert embedder.seen == ["a", "bb", "", "ccc"]
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1, rtol=1e-6)
    np.testing.assert_array_equal(first[1], second[0])


def test_two_writers_setting_up_one_new_store_at_once(tmp_path):
    """SQLite refuses one of two connections setting up a new store at the same moment ("database is locked",
    without waiting); that writer tries again and never deletes the file the other is writing (it used to, and
    the other then failed with "disk I/O error": one run in seven)."""
    import threading

    for trial in range(30):
        path = tmp_path / f"store{trial}.sqlite"
        errors = []

        def open_store(path=path, errors=errors):
            try:
                SampleStore(path)
            except Exception as error:  # noqa: BLE001 - every failure is what this test counts
                errors.append(error)

        threads = [threading.Thread(target=open_store) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors, (trial, errors)
        assert path.exists()
