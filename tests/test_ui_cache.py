"""The app's one shared cache (ui.cache): bounded, one computation per key for a room, one run() per result.

The cache is tested directly (its bound, its per-key lock with real threads, a failed computation kept out),
then through ui.runs.family with the runner's ``run`` counted: a live run (samples and embeddings not yet in
the store, a followed pair drawn first) calls ``run()`` exactly once, a cached result none, and a result the
store holds once more, without a progress bar.  The embedder is a deterministic stand-in (vectors from each
text's hash): the cache is under test, not MiniLM.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading

import numpy as np
import pytest
import streamlit as st


class HashEmbedder:
    """A deterministic stand-in for MiniLM: a unit vector from each text's hash."""

    def __init__(self, config):
        self.key = f"hash:{config}"

    def embed(self, texts, store=None, progress=None):
        rows = [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=16)
                for t in texts]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), 16)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        if store is not None and len(texts):
            store.put_embeddings(self.key, list(texts), vectors)
        return vectors


# ----------------------------------------------------------------- the cache itself
def test_the_cache_is_bounded_and_drops_the_least_recently_used():
    from dbpa_app.ui.cache import MISSING, SharedCache

    cache = SharedCache(3)
    for key in "abc":
        cache.put(key, key.upper())
    assert cache.get("a") == "A"  # now the most recently used
    cache.put("d", "D")
    cache.put("e", "E")
    assert len(cache) == 3
    assert cache.get("b") is MISSING and cache.get("c") is MISSING
    assert [cache.get(k) for k in "ade"] == ["A", "D", "E"]
    assert cache.get("b", None) is None
    with pytest.raises(ValueError, match="max_entries"):
        SharedCache(0)


def test_a_room_asking_for_one_key_computes_it_once_and_other_keys_do_not_wait():
    """Eight threads ask for one key at once: one computes, seven wait and get its value.  Two different keys
    are computed at the same time (each holds its own lock): a barrier inside both computations is passed."""
    from dbpa_app.ui.cache import SharedCache

    cache = SharedCache(16)
    calls, started, release = [], threading.Event(), threading.Event()
    waited = []

    def slow():
        calls.append(1)
        started.set()
        assert release.wait(10)
        return object()

    def waiting():
        waited.append(1)
        release.set()  # the first waiter lets the computation finish: every other asker is already waiting
        return _null()

    results = []
    first = threading.Thread(target=lambda: results.append(cache.get_or_compute("same", slow, waiting=waiting)))
    first.start()
    assert started.wait(10)
    others = [threading.Thread(target=lambda: results.append(cache.get_or_compute("same", slow, waiting=waiting)))
              for _ in range(7)]
    for thread in others:
        thread.start()
    for thread in [first, *others]:
        thread.join(20)
    assert len(calls) == 1 and len(results) == 8 and len({id(r) for r in results}) == 1
    assert waited  # at least one asker found the key being computed and waited for it
    assert not cache._computing  # no lock outlives the askers

    both = threading.Barrier(2, timeout=10)
    values = {}

    def meet(key):
        def compute():
            both.wait()  # would time out (BrokenBarrierError) if the two keys were computed one after the other
            return key
        values[key] = cache.get_or_compute(key, compute)

    pair = [threading.Thread(target=meet, args=(key,)) for key in ("x", "y")]
    for thread in pair:
        thread.start()
    for thread in pair:
        thread.join(20)
    assert values == {"x": "x", "y": "y"}


def test_a_failed_computation_keeps_nothing():
    from dbpa_app.ui.cache import SharedCache

    cache = SharedCache(4)

    def fail():
        raise RuntimeError("endpoint down")

    with pytest.raises(RuntimeError):
        cache.get_or_compute("k", fail)
    assert "k" not in cache and not cache._computing
    assert cache.get_or_compute("k", lambda: 7) == 7


def test_one_key_scheme_a_request_stands_for_its_key():
    from dbpa_app.ui.cache import cache_key

    request = _request(k=6)
    assert cache_key("family", request) == cache_key("family", _request(k=6))
    assert cache_key("family", request) != cache_key("family", _request(k=7))
    assert cache_key("family", request) != cache_key("explanation", request)
    big = np.zeros(600_000)
    moved = big.copy()
    moved[-1] = 1e-9
    assert cache_key("call", big) != cache_key("call", moved)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ----------------------------------------------------------------- one run() per result
def _request(**changes):
    from dbpa_core.audit.request import AuditRequest, EmbedderConfig, PerturbedPrompt, Prompt, SamplerConfig

    perturbations = (PerturbedPrompt("mars", "Earth → Mars", Prompt("What causes the seasons on Mars?"), "target"),
                     PerturbedPrompt("brief", "Briefly", Prompt("Briefly, what causes the seasons?"), "control"))
    settings = dict(sampler=SamplerConfig("simulated", temperature=1.0, max_tokens=64),
                    embedder=EmbedderConfig("minilm"), k=6, n_resamples=50, seed=3, scenario="seasons")
    return AuditRequest(Prompt("What causes the seasons?"), perturbations, **{**settings, **changes})


@pytest.fixture
def app(tmp_path, monkeypatch):
    """ui.runs with a fresh store and cache, the stand-in embedder, and the runner's run() counted."""
    import dbpa_core.audit.runner as runner
    import dbpa_app.ui.runs as runs_module
    from dbpa_app.ui.settings import Settings
    from dbpa_core.audit.request import EmbedderConfig, SamplerConfig

    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setattr(runs_module, "embedder_for", lambda config, key="": HashEmbedder(config))
    runs, bars = [], []
    real_run = runner.run

    def counting_run(request, **kwargs):
        runs.append(request.key)
        return real_run(request, **kwargs)

    monkeypatch.setattr(runner, "run", counting_run)
    real_progress = runs_module.RunProgress

    class CountedProgress(real_progress):
        def __init__(self, *args, **kwargs):
            bars.append(args[0])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(runs_module, "RunProgress", CountedProgress)
    yield Settings(SamplerConfig("simulated"), EmbedderConfig("minilm"), 3), runs, bars
    st.cache_resource.clear()


def test_a_live_run_calls_run_once_even_with_a_followed_pair(app, monkeypatch):
    """Nothing stored yet, and the second perturbation followed live (its pair drawn first, as the home page
    does on a local model): one run() for the result, under one bar; asked again, none; asked again after the
    cache dropped it, one run() from the store, without a bar."""
    import dbpa_app.ui.live as live
    from dbpa_app.ui.cache import the_cache
    from dbpa_app.ui.runs import family
    from dbpa_core.audit.runner import build_sampler, run

    settings, runs, bars = app
    monkeypatch.setattr(live, "is_live", lambda request: True)  # follow the simulated pair as if it were live
    request = _request()
    result = family(settings, request, live="brief")
    assert runs == [request.tests_only().key] and len(bars) == 1
    expected = run(request, embedder=HashEmbedder(request.embedder), sampler_for=build_sampler)
    assert [r.test.pvalue for r in result.results] == [r.test.pvalue for r in expected.results]
    runs.clear()

    family(settings, request, live="brief")
    family(settings, dataclasses.replace(request, alpha=0.01))  # α only re-reads the p-values
    assert runs == []

    the_cache().clear()
    again = family(settings, request)
    assert len(runs) == 1 and len(bars) == 1  # read from the store: no bar, no Cancel button
    assert [r.test.pvalue for r in again.results] == [r.test.pvalue for r in result.results]


def test_a_live_sequential_run_calls_run_once(app, monkeypatch):
    import dbpa_app.ui.live as live
    from dbpa_app.ui.runs import family
    from dbpa_core.audit.request import SequentialPlan

    settings, runs, bars = app
    monkeypatch.setattr(live, "is_live", lambda request: True)
    request = _request(k=12, sequential=SequentialPlan(k_max=12, batch_size=4))
    family(settings, request, live="mars")
    family(settings, request, live="mars")
    assert len(runs) == 1 and len(bars) == 1


# ----------------------------------------------------------------- a kept result the cache dropped
def _keeping_app():
    import streamlit as st

    from dbpa_app.ui.freshness import keep, result_area

    inputs = {"value": st.text_input("value", key="value")}
    if st.button("Run", key="run"):
        keep("thing", inputs, {"result for": inputs["value"]})
    with result_area("thing", inputs) as shown:
        if shown.result is not None:
            st.metric("result for", shown.result["result for"])


def test_a_kept_result_dropped_from_the_shared_cache_is_said_so():
    from streamlit.testing.v1 import AppTest

    from dbpa_app.ui.cache import the_cache

    st.cache_resource.clear()
    at = AppTest.from_function(_keeping_app)
    at.run()
    at.text_input(key="value").set_value("A").run()
    at.button(key="run").click().run()
    assert [m.value for m in at.metric] == ["A"]
    the_cache().clear()
    at.run()
    assert not at.metric
    assert any("dropped from the server's memory" in c.value for c in at.caption)
    st.cache_resource.clear()


# ----------------------------------------------------------------- one cache, one key scheme
def test_a_shared_function_computes_once_per_arguments_in_the_one_cache():
    from dbpa_app.ui.cache import cache_key, shared_function, the_cache

    st.cache_resource.clear()
    calls = []

    @shared_function(spinner="Working…")
    def study(name, n_resamples, *, seed=0):
        calls.append((name, n_resamples, seed))
        return {"name": name, "n": n_resamples, "seed": seed}

    first = study("a", 10, seed=1)
    assert study("a", 10, seed=1) is first  # kept: shared, not recomputed
    assert study("a", 11, seed=1) == {"name": "a", "n": 11, "seed": 1}  # another argument: another value
    assert calls == [("a", 10, 1), ("a", 11, 1)]
    parts = (study.__wrapped__.__module__, study.__wrapped__.__qualname__, 2, "a", 10, ("seed", 1))
    assert cache_key("call", *parts) in the_cache()  # under the one key scheme
    st.cache_resource.clear()  # a fresh process: computed again
    study("a", 10, seed=1)
    assert len(calls) == 3


def test_the_app_has_one_cache_of_results():
    """No second cache with keys of its own: every result, study and view goes through ui.cache (issue 41)."""
    from pathlib import Path

    app = Path(__file__).resolve().parents[1] / "dbpa_app"
    users = [p.relative_to(app).as_posix() for p in app.rglob("*.py") if "@st.cache_data" in p.read_text()]
    assert users == [], f"st.cache_data is used in {users}: use ui.cache.shared_function or shared_call"


def test_a_timed_shared_function_says_its_time_before_it_computes(tmp_path, monkeypatch):
    """``timed``: the spinner says the estimate (issue 45: TPR / FPR opened after 10.7 s behind a spinner with no
    time), only when it computes and only when the estimate is worth saying."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))

    def script():
        import streamlit as st

        from dbpa_app.ui.cache import shared_function
        from dbpa_core.audit.timing import TimeEstimate

        said, real = [], st.spinner

        def spinner(text, **options):
            said.append(text)
            return real(text, **options)

        st.spinner = spinner
        try:
            @shared_function(spinner="Running the permutation tests", timed=lambda n: TimeEstimate(30.0 * n))
            def study(n):
                return n * 2

            st.session_state["values"] = [study(1), study(1), study(0.01)]
        finally:
            st.spinner = real
        st.session_state["said"] = said

    st.cache_resource.clear()
    at = AppTest.from_function(script).run()
    assert not at.exception, at.exception
    assert at.session_state["values"] == [2, 2, 0.02]
    # Once for the first computation (the second is kept, no spinner); 0.3 s is not announced.
    assert at.session_state["said"] == ["Running the permutation tests — about 30 s on this machine",
                                        "Running the permutation tests"]
    st.cache_resource.clear()


def test_tpr_fprs_opening_view_and_the_rut_papers_experiments_are_timed(tmp_path, monkeypatch):
    """The two paper views that compute on opening for more than 5 s say so (the recorded cvd_nice setup, under
    a second, does not); the RUT paper's bar, its 500 trials but not its 100."""
    import os

    from dbpa_app.ui.paper import _roc_setup_time
    from dbpa_app.ui.timing import paper_view_time

    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    st.cache_resource.clear()
    paraphrases = _roc_setup_time("shipped_paraphrases", 1000, 0)
    assert paraphrases.announced and paraphrases.key == "paper/fig1_paraphrases"
    assert not _roc_setup_time("recorded_cvd", 1000, 0).announced
    assert paper_view_time("rut_study", 500).announced and not paper_view_time("rut_study", 100).announced
    st.cache_resource.clear()
