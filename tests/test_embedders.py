"""Tests of dbpa_core.embedders: the packaged MiniLM and an OpenAI-compatible endpoint, for real."""

from __future__ import annotations

import numpy as np
import pytest

from dbpa_core.embedders import EMBEDDERS, get_embedder, minilm_path


def test_minilm_is_packaged_and_offline():
    path = minilm_path()
    assert (path / "model.safetensors").exists()


def test_minilm_embeddings(minilm):
    texts = ["Stop smoking to lower your heart risk.", "Quitting smoking reduces cardiovascular risk.",
             "The seasons are caused by Earth's axial tilt.", ""]
    vectors = minilm.embed(texts)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > 0.6 > similarity[0, 2]  # meaning, not noise


def test_minilm_matches_sentence_transformers_directly(minilm):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(minilm_path()), device="cpu", local_files_only=True)
    texts = ["A statin lowers cholesterol.", "Hello"]
    np.testing.assert_allclose(minilm.embed(texts), reference.encode(texts, normalize_embeddings=True), atol=1e-5)


def test_arms_keep_their_sizes_with_empty_outputs(minilm):
    assert minilm.embed(["", "", "x"]).shape == (3, 384)


def test_openai_compatible_embeddings(llama_server):
    embedder = get_embedder("openai", model="smollm2-embed", base_url=llama_server, batch_size=2)
    vectors = embedder.embed(["first text", "second text", "third"])
    assert vectors.shape[0] == 3 and vectors.shape[1] > 10
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert "key" not in embedder.key.lower()


@pytest.mark.parametrize(("call", "match"), [
    (lambda e: e.embed("one string"), "`texts` must be a list"),
    (lambda e: e.embed([]), "`texts` must contain"),
    (lambda e: e.embed(["ok", 3]), r"`texts\[1\]` must be a str"),
])
def test_bad_inputs(minilm, call, match):
    with pytest.raises(ValueError, match=match):
        call(minilm)


def test_registry():
    assert EMBEDDERS == ("minilm", "openai")
    with pytest.raises(ValueError, match="`name` must be one of"):
        get_embedder("bert")
