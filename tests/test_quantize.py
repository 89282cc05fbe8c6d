"""Tests of dbpa_core.samplers.quantize: the requantized SmolLM2 variants, for real."""

from __future__ import annotations

import time

import numpy as np
import pytest

from dbpa_core.rut.scoring import ReferenceScorer
from dbpa_core.samplers import get_sampler
from dbpa_core.samplers.local import LocalSampler, smollm2_path
from dbpa_core.samplers.quantize import (LOCAL_MODELS, VARIANTS, QuantizationMismatch, build_all, build_variant,
                                         file_sha256, local_model_path, models_dir)

PROMPTS = ["Name a colour.", "Give one tip for sleeping well.", "What is the capital of France?",
           "Write a haiku about rain."]


@pytest.fixture(scope="session")
def variants():
    """Every variant, built into the model cache on first use (≈ 5 s on two cores) or verified there."""
    started = time.perf_counter()
    paths = build_all()
    print(f"\nvariants built or verified in {time.perf_counter() - started:.1f} s")
    return paths


def test_names_resolve(variants):
    assert local_model_path("smollm2") == smollm2_path()
    assert LOCAL_MODELS[0] == "smollm2" and set(LOCAL_MODELS[1:]) == set(VARIANTS)
    for name, path in variants.items():
        assert local_model_path(name) == path == models_dir() / VARIANTS[name].file_name
        assert file_sha256(path) == VARIANTS[name].sha256


def test_quantization_is_deterministic(variants, tmp_path):
    """A second build, in another folder and with one thread, has the same bytes as the cached one."""
    from dbpa_core.samplers.quantize import quantize_file

    for name in ("smollm2-q2_k", "smollm2-q8_0"):
        again = tmp_path / f"{name}.gguf"
        quantize_file(smollm2_path(), again, VARIANTS[name].ftype, n_threads=1)
        assert file_sha256(again) == file_sha256(variants[name]) == VARIANTS[name].sha256


def test_build_is_atomic_and_verified(tmp_path, monkeypatch):
    built = build_variant("smollm2-q4_0", directory=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [built.name]  # no partial file left behind
    # A file whose bytes differ from the recorded hash is refused, never used.
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / VARIANTS["smollm2-q5_0"].file_name).write_bytes(b"not a model")
    with pytest.raises(QuantizationMismatch, match="delete it"):
        build_variant("smollm2-q5_0", directory=corrupt)
    # A quantizer giving other bytes (another llama.cpp build) fails clearly and leaves nothing.
    import dbpa_core.samplers.quantize as quantize

    monkeypatch.setitem(quantize._RECIPE_NAMES, 3, "Q4_1")
    monkeypatch.setattr(quantize, "VARIANTS", {"smollm2-q4_1": quantize.Variant(3, "0" * 64)})
    monkeypatch.setattr(quantize, "LOCAL_MODELS", ("smollm2", "smollm2-q4_1"))
    other = tmp_path / "other"
    with pytest.raises(QuantizationMismatch, match="llama-cpp-python"):
        quantize.build_variant("smollm2-q4_1", directory=other)
    assert list(other.iterdir()) == []


@pytest.mark.parametrize("bad", ["smollm3", "", "q2_k", 3])
def test_bad_names(bad):
    with pytest.raises(ValueError, match="`model` must be one of"):
        local_model_path(bad)
    with pytest.raises(ValueError, match="`model` must be one of"):
        get_sampler("local", model=bad)
    with pytest.raises(ValueError, match="`model` must be one of"):
        ReferenceScorer(model=bad)


def test_model_and_model_path_are_exclusive():
    with pytest.raises(ValueError, match="not both"):
        LocalSampler(smollm2_path(), model="smollm2")


def test_variants_load_generate_and_differ_from_the_reference(variants):
    """Each variant generates; none keeps every greedy answer of the reference, and each assigns the
    reference's own greedy answers a lower log-likelihood in all (by more for fewer bits; the 8-bit one, the
    closest, scores one of the four 0.14 nats higher, within what a last-bit change moves: bench/probe_numerics.py).

    Each prompt's answer is scored right after the model answered it, so the scoring reuses the prompt's evaluated
    cache (the same numbers bit for bit: tests/test_engine.py), one prompt evaluation instead of two.  The answers
    keep their 24 tokens: at 16, Q3_K_M costs one of the four answers only 0.33 nats, under the 1 nat asked below."""
    reference = get_sampler("local", model="smollm2")
    scorer = ReferenceScorer(model="smollm2")
    answers, base = [], []
    for prompt in PROMPTS:
        answers.append(reference.sample(prompt, 1, temperature=0, max_tokens=24)[0])
        base.append(scorer.score(prompt, answers[-1])["log_likelihood"])
    base = np.array(base)
    loss = {}
    for name in VARIANTS:
        sampler = get_sampler("local", model=name)
        assert sampler.model == VARIANTS[name].file_name  # the store keeps the variants apart
        variant_scorer = ReferenceScorer(model=name)
        greedy, ll = [], []
        for prompt, answer in zip(PROMPTS, answers):
            greedy.append(sampler.sample(prompt, 1, temperature=0, max_tokens=24)[0])
            ll.append(variant_scorer.score(prompt, answer)["log_likelihood"])
        ll = np.array(ll)
        assert all(text.strip() for text in greedy) and greedy != answers, name
        assert ll.sum() < base.sum() - 1 and np.all(ll < base + 0.3), (name, ll - base)
        if name != "smollm2-q8_0":
            assert np.all(ll < base - 1), (name, ll - base)
        loss[name] = float((base - ll).sum())
    assert loss["smollm2-q8_0"] < loss["smollm2-q5_0"] < loss["smollm2-q2_k"], loss
