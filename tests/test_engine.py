"""Batched local decoding (dbpa_core.samplers.engine through LocalSampler), with the real SmolLM2."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from dbpa_core.data.store import SampleStore
from dbpa_core.samplers import SamplingCancelled, get_sampler, sample_seed
from dbpa_core.samplers.local import load_llama, smollm2_path

REPO = Path(__file__).resolve().parents[1]
PROMPT = "Give one tip for sleeping well."


def one_call_per_sample(prompt: str, indices, *, seed: int, temperature: float, max_tokens: int,
                        system: str | None = None) -> list[str]:
    """The path LocalSampler took before batching: one ``Llama.create_chat_completion`` per sample."""
    llama = load_llama(str(smollm2_path()), logits_all=False)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return [llama.create_chat_completion(messages=messages, temperature=temperature, max_tokens=max_tokens,
                                         seed=sample_seed(seed, i))["choices"][0]["message"]["content"]
            for i in indices]


@pytest.fixture(scope="module")
def local():
    return get_sampler("local", batch_size=16)


def test_the_engine_and_llama_run_on_the_same_device(local):
    """n_gpu_layers is explicit: llama.cpp's own default (-1: every layer on a GPU, where built with one) would
    put the batched engine on the GPU and the one-call reference on the CPU."""
    from dbpa_core.samplers.local import N_GPU_LAYERS

    llama = load_llama(str(smollm2_path()), logits_all=False)
    assert local.engine.n_gpu_layers == llama.model_params.n_gpu_layers == N_GPU_LAYERS == 0


@pytest.mark.parametrize(("temperature", "system"), [(0.7, None), (1.0, "You are a pirate."), (0.0, None)])
def test_batched_draws_equal_one_call_per_sample(local, temperature, system):
    """Sample i of a batch of 10 is, token for token, the one-call-per-sample draw with seed (seed, i)."""
    texts = local.sample(PROMPT, 10, system=system, temperature=temperature, max_tokens=20, seed=3)
    assert texts[:2] + texts[-2:] == one_call_per_sample(PROMPT, [0, 1, 8, 9], seed=3, system=system,
                                                         temperature=temperature, max_tokens=20)
    if temperature > 0:
        assert len(set(texts)) >= 8  # independent draws, not one stream replayed


def test_outputs_do_not_depend_on_the_batch(local):
    """Drawn alone, in batches of 1, 5 or 16, or as the later part of a request: the same texts."""
    batch = local.sample(PROMPT, 12, max_tokens=16, seed=7)
    assert get_sampler("local", batch_size=5).sample(PROMPT, 12, max_tokens=16, seed=7) == batch
    alone = [local.complete(PROMPT, system=None, temperature=local.default_temperature, max_tokens=16, seed=7,
                            index=i).text for i in (0, 6, 11)]
    assert alone == [batch[0], batch[6], batch[11]]
    assert local.sample(PROMPT, 12, max_tokens=16, seed=8) != batch  # the seed matters


def rows_of(logits, tokens):
    """score_iter's statistics: the logits rows themselves (a completion's come back as its (T, n_vocab) matrix)."""
    return (logits.copy(),)


def test_a_prompt_evaluated_last_is_reused_bit_for_bit(local, monkeypatch):
    """A second call on the same prompt and shape reuses the prompt's cache (no evaluation) and draws what a
    cleared engine draws; another prompt, or scoring in between, evaluates afresh and changes nothing."""
    engine = local.engine
    evaluated = []
    real = type(engine)._eval_prompt
    monkeypatch.setattr(type(engine), "_eval_prompt",
                        lambda self, *args, **kwargs: evaluated.append(len(args[2])) or real(self, *args, **kwargs))
    tokens = engine.chat_prompt(local.messages(PROMPT, None))
    seeds = [sample_seed(4, i) for i in range(3)]

    def draw(prompt_tokens=tokens):  # tokens and their log-probabilities, bit for bit
        return [(g.tokens, g.token_logprobs) for g in engine.generate(prompt_tokens, seeds, temperature=0.9,
                                                                      max_tokens=12, logprobs=True, width=3)]

    engine.close_contexts()
    fresh = draw()
    assert len(evaluated) == 1
    assert draw() == fresh and len(evaluated) == 1  # reused: no second evaluation, the same draws
    draw(engine.chat_prompt(local.messages("Name a colour.", None)))
    assert len(evaluated) == 2
    assert draw() == fresh and len(evaluated) == 3  # back to the first prompt: evaluated again, same draws
    list(engine.score_iter(tokens, [list(t) for t, _ in fresh], rows_of, width=2))  # another shape: its own context
    assert draw() == fresh
    engine.close_contexts()
    assert draw() == fresh

    # Scoring reuses it too: after a draw of the same shape (3 streams + the prompt's, 256 cells), and after
    # scoring; the logits equal a cleared engine's bit for bit.
    completions = [list(t) for t, _ in fresh]

    def scored():
        return {j: logits for j, (logits,) in engine.score_iter(tokens, completions, rows_of, width=3)}

    before = len(evaluated)
    after_a_draw = scored()
    again = scored()
    assert len(evaluated) == before  # the draw's prompt cache served both
    engine.close_contexts()
    cleared = scored()
    assert len(evaluated) == before + 1
    assert all(np.array_equal(after_a_draw[j], cleared[j]) and np.array_equal(again[j], cleared[j]) for j in cleared)


def test_chat_template_no_echo_and_max_tokens(local):
    """The model answers as the assistant: no prompt, no role header, no control token; at most max_tokens."""
    sampler = get_sampler("local", logprobs=True, batch_size=8)
    completions = sampler.sample_completions("Name one planet of the solar system.", 8, max_tokens=12, seed=0)
    for completion in completions:
        text = completion.text
        assert "Name one planet" not in text and "<|im_" not in text
        assert not text.lstrip().startswith(("assistant", "user", "system"))
        assert 1 <= len(completion.token_logprobs) <= 12 and all(lp <= 0 for lp in completion.token_logprobs)
    tokens = sampler.engine.chat_prompt(sampler.messages("Hi", "Be brief."))
    rendered = sampler.engine.detokenize(tokens)
    assert rendered.endswith("assistant\n") and "Be brief." in rendered and "Hi" in rendered
    # A reply that ends before max_tokens stopped at <|im_end|> (SmolLM2 answers "Hi" briefly).
    short = sampler.sample_completions("Say hello.", 4, max_tokens=64, seed=0, temperature=0)
    assert any(len(c.token_logprobs) < 64 for c in short)


def test_prompt_longer_than_the_context_is_refused():
    sampler = get_sampler("local", n_ctx=64)
    with pytest.raises(ValueError, match="`n_ctx`"):
        sampler.sample("word " * 80, 2, max_tokens=8)
    with pytest.raises(ValueError, match="`batch_size`"):
        get_sampler("local", batch_size=0)


def test_cancel_mid_batch_keeps_finished_samples(store):
    sampler = get_sampler("local", batch_size=8)
    with pytest.raises(SamplingCancelled):
        sampler.sample(PROMPT, 8, max_tokens=10, seed=2, store=store, progress=lambda done, total: done < 3)
    description = sampler.describe_request(PROMPT, max_tokens=10, seed=2)
    assert store.count_samples(description) == 3
    resumed = sampler.sample(PROMPT, 8, max_tokens=10, seed=2, store=store)
    assert resumed == sampler.sample(PROMPT, 8, max_tokens=10, seed=2)


SAMPLING_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {repo!r})
    from dbpa_core.data.store import SampleStore
    from dbpa_core.samplers import get_sampler
    get_sampler("local", batch_size=8).sample({prompt!r}, {n}, max_tokens={max_tokens}, seed=5,
                                              store=SampleStore({store!r}))
""")


def test_resume_after_a_kill_mid_batch(tmp_path):
    """Kill a process that samples into a store in the middle of a batch, run again: every slot is
    filled once, nothing is lost or drawn twice, and the texts are those of an uninterrupted run."""
    n, max_tokens = 24, 12
    path = tmp_path / "killed.sqlite"
    SampleStore(path)  # schema created before the child writes
    sampler = get_sampler("local", batch_size=8)
    description = sampler.describe_request(PROMPT, max_tokens=max_tokens, seed=5)
    script = SAMPLING_SCRIPT.format(repo=str(REPO), prompt=PROMPT, n=n, max_tokens=max_tokens, store=str(path))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        while SampleStore(path).count_samples(description) < 2:
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the child stored nothing in 300 s"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    kept = SampleStore(path).count_samples(description)
    assert 2 <= kept < n, kept  # killed mid-run, with samples of the first batch stored
    resumed = sampler.sample(PROMPT, n, max_tokens=max_tokens, seed=5, store=SampleStore(path))
    assert SampleStore(path).count_samples(description) == n
    uninterrupted = sampler.sample(PROMPT, n, max_tokens=max_tokens, seed=5, store=SampleStore(tmp_path / "clean.sqlite"))
    assert resumed == uninterrupted


def test_outputs_do_not_depend_on_the_thread_count():
    """llama.cpp with 1 or 2 threads: the same tokens drawn and the same scoring logits, bit for bit.

    Its CPU kernels split a matrix product by output rows and columns among the
    threads, never a dot product, so every number is computed alike.
    """
    from dbpa_core.samplers.local import get_engine

    path = str(smollm2_path())
    one, two = get_engine(path, 2048, 1), get_engine(path, 2048, 2)
    assert (one.n_threads, two.n_threads) == (1, 2)
    sampler = get_sampler("local")
    prompt = one.chat_prompt(sampler.messages(PROMPT, None))
    seeds = [sample_seed(4, i) for i in range(6)]
    drawn = [engine.generate(prompt, seeds, temperature=0.9, max_tokens=16, logprobs=True, width=6)
             for engine in (one, two)]
    assert drawn[0] == drawn[1]
    assert len({g.tokens for g in drawn[0]}) >= 4  # six seeded draws, not one stream
    completions = [list(g.tokens) for g in drawn[0]]
    logits = [{j: rows for j, (rows,) in engine.score_iter(prompt, completions, rows_of, width=6)}
              for engine in (one, two)]
    for j in range(len(completions)):
        assert np.array_equal(logits[0][j], logits[1][j])


def whole_completion_rows(engine, prompt, tokens) -> np.ndarray:
    """The logits before tokens 1..T-1 of a completion evaluated in one forward step (the path before batching)."""
    api = engine._api
    batch = api.llama_batch_init(512, 0, 1)
    try:
        context = engine._context(1, 512)
        engine._eval_prompt(context, batch, prompt, 512)
        engine._decode(context, batch, [(token, len(prompt) + t, 0, True) for t, token in enumerate(tokens[:-1])])
        return engine._logits(context, len(tokens) - 1)
    finally:
        api.llama_batch_free(batch)


def test_scores_are_the_generations_own_log_probabilities_and_flash_attention_is_another_rounding():
    """Scoring reads a completion one token per step, as generation produced it: its log-probabilities are the
    ones the generation reported, bit for bit.  The whole-completion step (the path before batching) gives other
    logits with llama.cpp's default attention (the engine's) and the same ones with flash attention, which is
    another rounding of the model (its logits differ from the default's): the measured cause of the gap between
    that path and the per-token one (bench/RESULTS.md), and why the engine keeps flash attention off (every
    recording was drawn without it).
    """
    from dbpa_core.samplers.engine import LlamaEngine, _log_softmax_at

    path = str(smollm2_path())
    sampler = get_sampler("local")
    gaps, whole_gaps, first_rows = {}, {}, {}
    for flash in (False, True):
        engine = LlamaEngine(path, n_ctx=512, n_threads=2, flash_attention=flash)
        try:
            prompt = engine.chat_prompt(sampler.messages(PROMPT, None))
            drawn = engine.generate(prompt, [sample_seed(5, i) for i in range(3)], temperature=0.9,
                                    max_tokens=12, logprobs=True, width=3)
            scored = {j: rows for j, (rows,) in engine.score_iter(prompt, [list(g.tokens) for g in drawn], rows_of,
                                                                   width=3)}
            first_rows[flash] = scored[0][0]
            gaps[flash] = max(abs(_log_softmax_at(scored[j][t], token) - g.token_logprobs[t])
                              for j, g in enumerate(drawn) for t, token in enumerate(g.tokens))
            whole_gaps[flash] = max(float(np.abs(whole_completion_rows(engine, prompt, list(g.tokens))
                                                 - scored[j][1:]).max()) for j, g in enumerate(drawn))
        finally:
            engine.close()
    assert gaps == {False: 0.0, True: 0.0}
    assert whole_gaps[True] == 0.0
    assert whole_gaps[False] > 1e-3  # the default attention's one-token steps differ from a many-token step
    difference = np.abs(first_rows[True] - first_rows[False])
    assert 0 < difference.max() < 5  # another rounding of the same model, not another model


KERNEL_SCRIPT = textwrap.dedent("""
    import hashlib, sys
    sys.path.insert(0, {repo!r})
    import numpy as np
    from dbpa_core.samplers import get_sampler, sample_seed
    from dbpa_core.samplers.llama_build import gemm_kernel
    from dbpa_core.samplers.llama_build import default_threads
    from dbpa_core.samplers.local import get_engine, resolve_model
    digest = hashlib.sha256()
    def rows(logits, tokens):
        digest.update(logits.tobytes())
        return (logits[:, 0],)
    for model in ("smollm2", "smollm2-q8_0"):  # Q4_1 weights and a Q8_0 output matrix; Q8_0 everywhere
        engine = get_engine(resolve_model(model, None), 2048, default_threads())  # its share of the cores
        prompt = engine.chat_prompt(get_sampler("local").messages({prompt!r}, None))
        drawn = engine.generate(prompt, [sample_seed(9, i) for i in range({sequences})], temperature=1.0,
                                max_tokens={tokens}, logprobs=True, width={sequences})
        for g in drawn:
            digest.update(np.array(g.tokens, np.int64).tobytes() + np.array(g.token_logprobs, np.float64).tobytes())
        for _ in engine.score_iter(prompt, [list(g.tokens) for g in drawn], rows, width=7):
            pass
        # A prompt-shaped step (many tokens of one sequence: a prompt's evaluation, the Llama path's scoring).
        context = engine._context(1, 512)
        batch = engine._api.llama_batch_init(512, 0, 1)
        engine._decode(context, batch, [(t, i, 0, True) for i, t in enumerate(prompt + list(drawn[0].tokens))])
        digest.update(engine._logits(context, len(prompt) + len(drawn[0].tokens)).tobytes())
    print(gemm_kernel())
    print(digest.hexdigest())
""")


def test_the_tiled_kernels_run_and_change_no_number():
    """The local extra builds llama.cpp with tiled kernels and 32-cell attention padding on x86-64
    (scripts/llama_cpp): they are the ones running, and every logit equals, bit for bit, llama.cpp's own kernels'
    (DBPA_GEMM=0), the AVX2 level's, and a fully stock run's (DBPA_GEMM=0 with DBPA_KV_PAD=256, the stock
    padding): on the packaged model (Q4_1 weights, a Q8_0 output matrix) and its 8-bit requantization (Q8_0
    everywhere), 11 sequences of 8 tokens drawn together with their log-probabilities, the same tokens scored 7
    at a time, and a prompt-shaped step of up to 45 tokens with logits for every row.

    Sized to take every tile at the least cost (each mode is a process of its own: llama.cpp reads the kernel
    level and the padding once per process).  Every weight matrix has a multiple of 4 rows (192 to 49,152), so a
    tile is 4 rows by as many of the step's tokens as fit: a step of 11 tokens takes two 4-column tiles, a
    2-column tile and a single column in the AVX-512 kernels (five 2-column tiles and a single column in the AVX2
    one), scoring takes 7 (4 + 2 + 1) then 4, and the prompt (37 tokens) and the prompt-shaped step nine to eleven
    4-column tiles in a row.  (A step of one token is llama.cpp's vector dot in every mode, not a tile.)  Each
    stream holds at most 45 cells, so attention reads 64 cells with the 32-cell padding and 256 with the stock
    one.  A tile that computed one number differently changes the digest."""
    import platform

    from dbpa_core.samplers.llama_build import GEMM_KERNELS, gemm_kernel

    if gemm_kernel() == GEMM_KERNELS[0]:
        reason = (f"llama-cpp-python here is a stock build ({platform.machine()}): the tiled kernels are built on "
                  "x86-64 only (scripts/llama_cpp/build_wheel.py), unless DBPA_LLAMA_PATCH=0")
        if os.environ.get("CI") and platform.machine().lower() in {"x86_64", "amd64"}:
            pytest.fail(reason)
        pytest.skip(reason)
    script = KERNEL_SCRIPT.format(repo=str(REPO), prompt=PROMPT, sequences=11, tokens=8)
    runs = {}
    for mode, settings in (("default", {}), ("avx2", {"DBPA_GEMM": "avx2"}), ("0", {"DBPA_GEMM": "0"}),
                           ("stock", {"DBPA_GEMM": "0", "DBPA_KV_PAD": "256"})):
        environment = {key: value for key, value in os.environ.items() if key not in ("DBPA_GEMM", "DBPA_KV_PAD")}
        environment.update(settings)
        done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True,
                              timeout=1800)
        assert done.returncode == 0, done.stderr[-2000:]
        runs[mode] = done.stdout.split("\n")[:2]
    assert runs["default"][0] in (GEMM_KERNELS[1], GEMM_KERNELS[2]), (
        f"llama-cpp-python runs {runs['default'][0]!r}: scripts/llama_cpp/build_wheel.py builds the tiled kernels")
    assert runs["avx2"][0] == GEMM_KERNELS[1] and runs["0"][0] == runs["stock"][0] == GEMM_KERNELS[0]
    assert runs["default"][1] == runs["avx2"][1] == runs["0"][1] == runs["stock"][1]
