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


# ------------------------------------------------------------- the model's identity in the store key; the device
def _model_copy(folder, *, changed: bool = False):
    """A sentence-transformers folder with MiniLM's files (linked, not copied); ``changed``: one setting differs."""
    folder.mkdir()
    for item in minilm_path().iterdir():
        (folder / item.name).symlink_to(item)
    if changed:  # another model of the same architecture: its configuration is its own
        (folder / "sentence_bert_config.json").unlink()
        (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 128, "do_lower_case": true}')
    return folder


def test_the_store_key_names_the_model(tmp_path):
    from dbpa_core.embedders.minilm import MINILM_KEY, MiniLMEmbedder

    assert MiniLMEmbedder().key == MINILM_KEY == "minilm:all-MiniLM-L6-v2"  # vectors stored before stay in use
    assert MiniLMEmbedder(model_path=minilm_path()).key == MINILM_KEY
    other = MiniLMEmbedder(model_path=_model_copy(tmp_path / "other", changed=True)).key
    same = MiniLMEmbedder(model_path=_model_copy(tmp_path / "copy")).key
    assert other.startswith("sentence-transformers:other:") and same.startswith("sentence-transformers:copy:")
    assert len({MINILM_KEY, other, same}) == 3
    moved = _model_copy(tmp_path / "moved")
    assert MiniLMEmbedder(model_path=moved).key.split(":")[2] == same.split(":")[2]  # content, not place


def test_a_model_path_that_is_not_a_model_is_refused(tmp_path):
    for path in (tmp_path / "missing", tmp_path):
        with pytest.raises(ValueError, match=r"`model_path`: .* is not a sentence-transformers model folder"):
            get_embedder("minilm", model_path=path)


def test_device_setting(minilm):
    from dbpa_core.embedders.minilm import resolve_device

    texts = ["A statin lowers cholesterol.", "Hello", ""]
    cpu = get_embedder("minilm", device="cpu").embed(texts)
    auto = get_embedder("minilm", device="auto").embed(texts)
    if resolve_device("auto") == "cpu":
        np.testing.assert_array_equal(cpu, auto)  # no GPU here: exactly the CPU's numbers
        np.testing.assert_array_equal(cpu, minilm.embed(texts))
    else:
        np.testing.assert_allclose(cpu, auto, atol=1e-5)
    with pytest.raises(ValueError, match="`device` must be one of auto, cpu, cuda, mps"):
        get_embedder("minilm", device="gpu")
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="`device` = 'cuda': PyTorch sees no such device"):
            get_embedder("minilm", device="cuda").embed(["x"])
