"""Tests of dbpa_core.samplers: every backend for real."""

from __future__ import annotations

import json
import threading
import time
import numpy as np
import pytest

from dbpa_core.samplers import (DEFAULT_TEMPERATURE, SAMPLER_SETTINGS, SAMPLERS, Sampler, SamplingCancelled,
                                 SamplingFailed, get_sampler, sample_seed)
from dbpa_core.samplers.base import Completion
from dbpa_core.samplers.simulated import _GENERIC_FACETS
from dbpa_core.data.scenarios import load_scenarios
from servers import Reply, chat_completion, misbehaving_server

SCENARIOS = load_scenarios()
CVD = SCENARIOS["cvd_nice"]


class TestSimulated:
    def test_deterministic_and_extends(self):
        sampler = get_sampler("simulated")
        first = sampler.sample(CVD.prompt, 10, seed=3)
        assert sampler.sample(CVD.prompt, 10, seed=3) == first
        assert sampler.sample(CVD.prompt, 20, seed=3)[:10] == first
        assert sampler.sample(CVD.prompt, 10, seed=4) != first
        assert len(set(first)) > 5  # a distribution, not one answer

    def test_outputs_are_sentences_from_the_scenario(self):
        texts = get_sampler("simulated").sample(CVD.prompt, 30, seed=0)
        phrasings = {p for f in CVD.facets for p in f.phrasings}
        assert all(any(p in t for p in phrasings) for t in texts)
        assert not any("joke" in t.lower() for t in texts)

    def test_target_changes_facet_frequencies_and_control_does_not(self):
        sampler = get_sampler("simulated")
        joke_lines = set(CVD.facets[[f.name for f in CVD.facets].index("joke")].phrasings)

        def joke_rate(perturbation):
            prompt, system = CVD.apply(perturbation)
            texts = sampler.sample(prompt, 300, system=system or None, seed=1)
            return np.mean([any(j in t for j in joke_lines) for t in texts])

        assert joke_rate("persona_comedian") > 0.8
        assert joke_rate("persona_doctor") == 0.0
        original = sampler.facet_model(CVD.prompt)
        control = sampler.facet_model(*CVD.apply("persona_doctor"))
        np.testing.assert_array_equal(original.weights, control.weights)

    def test_arms_with_equal_weights_are_independent_draws(self):
        sampler = get_sampler("simulated")
        a = sampler.sample(CVD.prompt, 20, seed=0)
        b = sampler.sample(CVD.apply("persona_doctor")[0], 20, seed=0)
        assert a != b

    def test_unknown_prompt_works_deterministically(self):
        sampler = get_sampler("simulated")
        assert not sampler.knows("How do I bake sourdough bread?")
        texts = sampler.sample("How do I bake sourdough bread?", 20, seed=0)
        assert texts == sampler.sample("How do I bake sourdough bread?", 20, seed=0)
        # The generic facets speak about the prompt's topic, and only generic facets are used.
        assert sum("sourdough" in t for t in texts) >= 5
        generic = {p.split("{topic}")[0] for f in _GENERIC_FACETS for p in f.phrasings}
        assert all(any(start in t for start in generic) for t in texts)

    def test_temperature_zero_is_deterministic_across_indices(self):
        texts = get_sampler("simulated").sample(CVD.prompt, 5, temperature=0, seed=0)
        assert len(set(texts)) == 1

    @pytest.mark.parametrize(("kwargs", "match"), [
        ({"prompt": ""}, "`prompt`"), ({"n": 0}, "`n`"), ({"seed": -1}, "`seed`"),
        ({"temperature": -1}, "`temperature`"), ({"temperature": "hot"}, "`temperature`"),
        ({"max_tokens": 0}, "`max_tokens`"), ({"system": 3}, "`system`"),
    ])
    def test_bad_inputs(self, kwargs, match):
        args = {"prompt": CVD.prompt, "n": 3, **kwargs}
        with pytest.raises(ValueError, match=match):
            get_sampler("simulated").sample(args.pop("prompt"), args.pop("n"), **args)


class TestRecorded:
    def test_replays_packaged_recordings_without_replacement(self):
        sampler = get_sampler("recorded")
        n = sampler.available(CVD.prompt)
        assert n >= 20
        texts = sampler.sample(CVD.prompt, n, seed=0)
        assert len(set(texts)) == len(set(sampler._arms[(CVD.prompt, "")]))
        assert sampler.sample(CVD.prompt, 5, seed=0) == texts[:5]
        assert sampler.sample(CVD.prompt, 5, seed=1) != texts[:5]

    def test_every_scenario_arm_is_recorded(self):
        sampler = get_sampler("recorded")
        for scenario in SCENARIOS.values():
            assert sampler.available(scenario.prompt, scenario.system) >= 20, scenario.id
            for perturbation in scenario.perturbations:
                assert sampler.available(*scenario.apply(perturbation)) >= 20, (scenario.id, perturbation.id)

    def test_non_text_responses_are_refused(self):
        with pytest.raises(ValueError, match=r"responses\['q'\]\[1\]` must be a str"):
            get_sampler("recorded", responses={"q": ["a", 3.0]})

    def test_too_many_and_unknown(self):
        sampler = get_sampler("recorded", responses={"q": ["a", "b", "c"]})
        assert sorted(sampler.sample("q", 3)) == ["a", "b", "c"]
        with pytest.raises(ValueError, match="only 3 responses were recorded"):
            sampler.sample("q", 4)
        with pytest.raises(ValueError, match="no responses were recorded"):
            sampler.sample("other", 1)

    def test_malformed_file_names_the_line(self, tmp_path):
        path = tmp_path / "bad.jsonl"
        path.write_text('{"prompt": "q", "text": "a"}\n{"prompt": "q"}\n')
        with pytest.raises(ValueError, match="bad.jsonl, line 2"):
            get_sampler("recorded", path=path)


class TestLocal:
    """SmolLM2-135M-Instruct through llama-cpp-python, for real."""

    @pytest.fixture(scope="class")
    def local(self):
        return get_sampler("local")

    def test_generates_without_echoing_the_prompt(self, local):
        prompt = "Name one planet of the solar system."
        texts = local.sample(prompt, 3, max_tokens=24, seed=0)
        assert len(texts) == 3 and all(isinstance(t, str) for t in texts)
        assert all(prompt not in t for t in texts)
        assert all("<|im_start|>" not in t and "user" != t[:4] for t in texts)

    def test_seeds_are_honoured(self, local):
        a = local.sample("Say something about the sea.", 2, max_tokens=16, seed=5)
        b = local.sample("Say something about the sea.", 2, max_tokens=16, seed=5)
        c = local.sample("Say something about the sea.", 1, max_tokens=16, seed=6)
        assert a == b
        # every index has its own seed, and another user seed gives other samples: each pair differs
        assert a[0] != a[1]
        assert a[0] != c[0]

    def test_logprobs(self):
        sampler = get_sampler("local", logprobs=True)
        (completion,) = sampler.sample_completions("Count to three.", 1, max_tokens=8, seed=0)
        assert completion.token_logprobs is not None and 1 <= len(completion.token_logprobs) <= 8
        assert all(lp <= 0 for lp in completion.token_logprobs)

    def test_system_prompt_reaches_the_model(self, local):
        messages = local.messages("Hi", "Be brief.")
        assert messages[0] == {"role": "system", "content": "Be brief."}
        # Greedy decoding: the only difference between the calls is the system prompt.
        plain = local.sample("Hi", 1, max_tokens=12, seed=0, temperature=0)[0]
        pirate = local.sample("Hi", 1, system="You are a pirate. Talk like a pirate.", max_tokens=12, seed=0,
                              temperature=0)[0]
        assert plain != pirate
        assert local.sample("Hi", 1, max_tokens=12, seed=0, temperature=0)[0] == plain

    def test_bad_model_path(self, tmp_path):
        with pytest.raises(ValueError, match="`model_path`"):
            get_sampler("local", model_path=tmp_path / "missing.gguf")


class TestOpenAICompatible:
    """Against a real `python -m llama_cpp.server` on 127.0.0.1."""

    def test_sampling_through_the_server(self, llama_server):
        sampler = get_sampler("openai", model="smollm2", base_url=llama_server, max_concurrency=2)
        texts = sampler.sample("Name a colour.", 4, max_tokens=12, seed=0)
        assert len(texts) == 4 and all(isinstance(t, str) for t in texts)
        assert all("Name a colour." not in t for t in texts)
        again = sampler.sample("Name a colour.", 4, max_tokens=12, seed=0)
        assert again == texts  # per-index seeds reach the server

    def test_identity_has_no_key(self, llama_server):
        sampler = get_sampler("openai", model="smollm2", base_url=llama_server, api_key="sk-very-secret")
        assert "sk-very-secret" not in json.dumps(sampler.describe_request("x"))

    def test_missing_key_for_the_openai_api(self, monkeypatch):
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(ValueError, match="`api_key`"):
            get_sampler("openai", model="gpt-4o-mini")

    def test_retries_429_and_5xx_with_backoff(self):
        """A real HTTP server that answers 429, then 503, then a completion."""
        def script(number, body):
            if number == 0:
                return Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after-ms": "50"})
            if number == 1:
                return Reply({"error": {"message": "slow down"}}, status=503)
            return Reply(chat_completion("ok after retries"))

        with misbehaving_server(script) as (base_url, requests):
            sampler = get_sampler("openai", model="m", base_url=base_url, max_retries=3, timeout=10)
            assert sampler.sample("hi", 1) == ["ok after retries"]
        assert len(requests) == 3


class _ChatServer:
    """A real HTTP server on 127.0.0.1 answering chat completions after ``delay`` s; it records when each
    request arrived and how many were in flight at once, and answers 429 (Retry-After) to the requests
    numbered (from 1) in ``refuse``."""

    def __init__(self, delay: float = 0.2, refuse: dict | None = None):
        self.arrivals, self.in_flight, self.most_in_flight = [], 0, 0
        self.refused_at = []
        self._delay, self._refuse, self._lock = delay, refuse or {}, threading.Lock()

    def _script(self, number, body):
        with self._lock:
            self.arrivals.append(time.monotonic())
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if number + 1 in self._refuse:
                self.refused_at.append(time.monotonic())
                return Reply({"error": {"message": "slow down"}}, status=429,
                             headers={"Retry-After": self._refuse[number + 1]})
            time.sleep(self._delay)
            return Reply(chat_completion(f"reply {number + 1}"))
        finally:
            with self._lock:
                self.in_flight -= 1

    def __enter__(self):
        self._server = misbehaving_server(self._script)
        self.url, _ = self._server.__enter__()
        return self

    def __exit__(self, *exc):
        return self._server.__exit__(*exc)


class TestConcurrency:
    """Several calls in flight against a real HTTP server, never more than ``max_concurrency``."""

    @pytest.mark.parametrize("concurrency", [1, 4])
    def test_calls_in_flight(self, concurrency):
        with _ChatServer(delay=0.3) as server:
            sampler = get_sampler("openai", model="m", base_url=server.url, max_concurrency=concurrency)
            started = time.monotonic()
            texts = sampler.sample("hi", 8)
            elapsed = time.monotonic() - started
        assert len(texts) == 8 and len(set(texts)) == 8
        assert server.most_in_flight == concurrency
        if concurrency == 4:
            assert elapsed < 8 * 0.3  # overlapping calls: faster than one after another

    def test_default_concurrency_is_bounded(self):
        assert get_sampler("openai", model="m", base_url="http://127.0.0.1:9/v1").max_concurrency == 4

    def test_retry_after_pauses_every_call(self):
        """A 429 with Retry-After: 1 to the first request: no call, from any thread, reaches the server
        within the next second; then all succeed."""
        with _ChatServer(delay=0.2, refuse={1: "1"}) as server:
            sampler = get_sampler("openai", model="m", base_url=server.url, max_concurrency=4, max_retries=3)
            texts = sampler.sample("hi", 8)
        assert len(texts) == 8 and all(texts)
        (refused,) = server.refused_at
        later = [t - refused for t in server.arrivals if t > refused + 0.05]
        assert later and min(later) >= 0.95, later
        assert len(server.arrivals) == 9  # the refused call was made again once


class _Counting(Sampler):
    """A deterministic backend that counts its calls; ``empty`` maps an index to how many
    of its first calls reply with an empty text (a null content, a content filter)."""

    name = "counting"

    def __init__(self, fail_at=None, concurrency=1, empty=None):
        self.calls = []
        self.fail_at = fail_at
        self.max_concurrency = concurrency
        self.empty = dict(empty or {})
        self._lock = threading.Lock()

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        with self._lock:
            self.calls.append(index)
            blank = self.empty.get(index, 0) > 0
            if blank:
                self.empty[index] -= 1
        if self.fail_at is not None and index == self.fail_at:
            raise ConnectionError("backend crashed")
        return Completion("" if blank else f"{prompt}-{sample_seed(seed, index)}")


class TestSamplerMachinery:
    def test_registry(self):
        assert SAMPLERS == ("simulated", "recorded", "local", "openai")
        with pytest.raises(ValueError, match="`name` must be one of"):
            get_sampler("gpt5")

    def test_name_lists_match_the_backends(self):
        """Every setting a SPEC may give a backend is a parameter of its constructor, and the
        backends' default temperatures are the listed ones."""
        import inspect

        from dbpa_core.samplers.local import LocalSampler
        from dbpa_core.samplers.openai_compatible import OpenAISampler
        from dbpa_core.samplers.recorded import RecordedSampler
        from dbpa_core.samplers.simulated import SimulatedSampler

        classes = {"simulated": SimulatedSampler, "recorded": RecordedSampler, "local": LocalSampler,
                   "openai": OpenAISampler}
        assert set(classes) == set(SAMPLERS) == set(SAMPLER_SETTINGS) == set(DEFAULT_TEMPERATURE)
        for name, cls in classes.items():
            assert set(SAMPLER_SETTINGS[name]) <= set(inspect.signature(cls.__init__).parameters), name
            assert cls.default_temperature == DEFAULT_TEMPERATURE[name]

    def test_an_empty_reply_is_asked_for_again(self, store):
        sampler = _Counting(empty={3: 2})
        texts = sampler.sample("p", 6, store=store)
        assert sampler.calls.count(3) == 3 and all(texts)
        assert texts == _Counting().sample("p", 6)

    def test_persistently_empty_replies_are_refused_not_stored(self, store):
        sampler = _Counting(empty={4: 99})
        with pytest.raises(SamplingFailed, match=r"sample 4 came back empty .* 3 time\(s\) and was refused") as caught:
            sampler.sample("p", 6, store=store)
        assert caught.value.n_kept == 4 and caught.value.n_requested == 6  # indices 0-3 kept
        stored = store.get_samples(sampler.describe_request("p"), range(6))
        assert sorted(stored) == [0, 1, 2, 3] and all(text for text, _ in stored.values())

    def test_an_empty_sample_stored_by_an_older_version_is_drawn_again(self, store):
        description = _Counting().describe_request("p")
        store.put_sample(description, 1, "")
        sampler = _Counting()
        texts = sampler.sample("p", 3, store=store)
        assert sampler.calls == [0, 1, 2] and all(texts)
        assert store.get_samples(description, [1])[1][0] == texts[1]

    @pytest.mark.parametrize("concurrency", [1, 4])
    def test_order_and_progress(self, concurrency):
        seen = []
        sampler = _Counting(concurrency=concurrency)
        texts = sampler.sample("p", 12, progress=lambda done, total: seen.append((done, total)))
        assert texts == _Counting().sample("p", 12)
        assert seen[-1] == (12, 12) and len(seen) == 12

    @pytest.mark.parametrize(("concurrency", "batched"), [(1, False), (4, False), (1, True)])
    def test_each_new_sample_is_reported_once_it_is_stored(self, store, concurrency, batched):
        """on_sample (what a live view follows): each new sample once, on the calling thread, already in the
        store, just before its progress call; samples reused from the store are not reported."""
        sampler = _Counting(concurrency=concurrency)
        sampler.batched = batched
        description = sampler.describe_request("p")
        sampler.sample("p", 3, store=store)
        events = []

        def on_sample(index, completion):
            assert threading.current_thread() is threading.main_thread()
            assert store.get_samples(description, [index])[index][0] == completion.text
            events.append(("sample", index))

        texts = sampler.sample("p", 10, store=store, on_sample=on_sample,
                               progress=lambda done, total: events.append(("progress", done)))
        assert sorted(index for kind, index in events if kind == "sample") == list(range(3, 10))
        assert [kind for kind, _ in events] == ["progress"] + ["sample", "progress"] * 7  # 3 stored, then each
        assert texts == _Counting().sample("p", 10)

    def test_cancel_keeps_drawn_samples(self, store):
        sampler = _Counting()
        with pytest.raises(SamplingCancelled):
            sampler.sample("p", 10, store=store, progress=lambda done, total: done < 4)
        assert store.count_samples(sampler.describe_request("p")) == 4
