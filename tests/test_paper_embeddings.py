"""The shipped MiniLM vectors of the paper's responses (assets/paper/minilm_embeddings.npz).

They must cover every response an experiment embeds, agree with what the
packaged MiniLM computes now (a stale or wrong file fails here), and let an
experiment run on a cold store without MiniLM; texts the file lacks still go
to the embedder.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

from dbpa_core import paper
from dbpa_core import paper as r
from dbpa_core.paper import embeddings
from dbpa_core.data.store import SampleStore, text_hash
from dbpa_core.embedders.minilm import MiniLMEmbedder

KEY = "minilm:all-MiniLM-L6-v2"


def all_texts() -> list[str]:
    texts: dict[str, None] = {}
    for experiment in r.EXPERIMENTS:
        texts.update(dict.fromkeys(r.experiment_texts(experiment)))
    return list(texts)


@pytest.fixture
def no_minilm(monkeypatch):
    """MiniLM cannot embed: any call to it fails the test."""

    def refuse(self, texts):
        raise AssertionError(f"MiniLM was asked to embed {len(texts)} texts")

    monkeypatch.setattr(MiniLMEmbedder, "embed_batch", refuse)


def hide_shipped_file(monkeypatch):
    """From here on the shipped file offers nothing (as for texts it lacks)."""
    empty = paper.ShippedEmbeddings(KEY, MappingProxyType({}), np.zeros((0, 384), np.float16))
    monkeypatch.setattr(embeddings, "shipped_embeddings", lambda: empty)


def test_the_file_covers_every_text_of_every_experiment():
    shipped = paper.shipped_embeddings()
    assert shipped.embedder_key == MiniLMEmbedder().key == KEY
    assert shipped.vectors.dtype == np.float16 and shipped.vectors.shape[1] == 384
    assert paper.EMBEDDINGS_FILE.stat().st_size <= 7_000_000
    for experiment in r.EXPERIMENTS:
        missing = [t for t in r.experiment_texts(experiment) if text_hash(t) not in shipped.rows]
        assert not missing, f"{experiment}: {len(missing)} responses have no shipped vector, e.g. {missing[0][:60]!r}"
    # the empty continuations are embedded like any text (never dropped)
    assert text_hash("") in shipped.rows
    assert len(shipped) == len(all_texts())
    # float16 rounding of unit vectors: norms stay within 1e-3 of 1
    norms = np.linalg.norm(shipped.vectors.astype(np.float32), axis=1)
    assert np.abs(norms - 1).max() < 1e-3


def test_shipped_vectors_agree_with_fresh_minilm(minilm):
    texts = all_texts()
    pick = [texts[i] for i in np.random.default_rng(14).choice(len(texts), 40, replace=False)]
    fresh = minilm.embed(pick)
    served = r.load_shipped_embeddings(pick, embedder_key=minilm.key)
    cosines = np.array([served[text_hash(t)] @ v for t, v in zip(pick, fresh)])
    assert cosines.min() >= 0.999, f"stale shipped vectors: min cosine {cosines.min():.4f}; rerun scripts/embed_paper.py"
    # renormalised to unit norm as float32, as the embedder returns its vectors
    assert all(v.dtype == np.float32 and abs(np.linalg.norm(v) - 1) < 1e-6 for v in served.values())


def test_experiments_run_on_a_cold_store_without_minilm(tmp_path, no_minilm, monkeypatch):
    store = SampleStore(tmp_path / "store.sqlite")
    writes = []
    put = SampleStore.put_embeddings
    monkeypatch.setattr(SampleStore, "put_embeddings", lambda self, *a: (writes.append(len(a[1])), put(self, *a)))
    table = r.persona_table(store=store, n_resamples=200, seed=0)
    assert {"comedian", "robot from the future", "child"} <= set(table.significant(0.05))
    assert writes == [len(set(r.experiment_texts("table2")))]  # one bulk write
    study = r.alignment_study(seeds=(9,), store=store, n_resamples=200, seed=0)
    assert len(study.rows) == len(paper.ALIGNMENT_MODELS)
    # a warm run reads the store and writes nothing more
    r.persona_table(store=store, n_resamples=200, seed=0)
    assert len(writes) == 2
    # without a store the file serves the vectors directly
    assert r.persona_table(n_resamples=200, seed=0).rows[4].pvalue == table.rows[4].pvalue


def test_missing_embeddings_is_zero_after_loading(tmp_path, no_minilm, monkeypatch):
    store = SampleStore(tmp_path / "store.sqlite")
    assert r.missing_embeddings("fig3", embedder_key=KEY, store=store) == 0  # the file holds them all
    r.embed_groups({"fig3": r.experiment_texts("fig3")}, store=store)
    # with the file out of the picture, the store alone now holds every vector
    hide_shipped_file(monkeypatch)
    assert r.missing_embeddings("fig3", embedder_key=KEY, store=store) == 0
    assert r.missing_embeddings("table2", embedder_key=KEY, store=store) == len(set(r.experiment_texts("table2")))
    # another embedder gets nothing from the MiniLM file
    assert r.missing_embeddings("table2", embedder_key="openai:text-embedding-3-small", store=store) > 0


def test_a_text_the_file_lacks_still_goes_to_the_embedder(tmp_path, monkeypatch):
    asked = []

    def spy(self, texts):
        asked.append(list(texts))
        return np.ones((len(texts), 384), np.float32)

    monkeypatch.setattr(MiniLMEmbedder, "embed_batch", spy)
    store = SampleStore(tmp_path / "store.sqlite")
    known = paper.load_personas()["child"][0]
    vectors = r.embed_groups({"a": [known, "a response no paper model wrote"], "b": [known]}, store=store)
    assert asked == [["a response no paper model wrote"]]
    assert vectors["a"].shape == (2, 384) and np.array_equal(vectors["a"][0], vectors["b"][0])
    assert np.allclose(vectors["a"][1], 1 / np.sqrt(384))
    assert len(store.get_embeddings(KEY, [known, "a response no paper model wrote"])) == 2


def test_a_stored_vector_is_never_replaced(tmp_path, no_minilm):
    store = SampleStore(tmp_path / "store.sqlite")
    text = paper.load_personas()["nurse"][3]
    mine = np.zeros(384, np.float32)
    mine[0] = 1.0
    store.put_embeddings(KEY, [text], mine[None])
    assert r.load_shipped_embeddings([text], embedder_key=KEY, store=store) == {}
    assert np.array_equal(r.embed_groups({"x": [text]}, store=store)["x"][0], mine)


def test_another_embedder_gets_nothing_from_the_file():
    texts = list(paper.load_personas()["child"])
    assert r.load_shipped_embeddings(texts, embedder_key="openai:text-embedding-3-small") == {}
    assert len(r.load_shipped_embeddings(texts, embedder_key=KEY)) == len(set(texts))


@pytest.mark.parametrize("content", [None, b"not an npz", "wrong arrays"])
def test_a_missing_or_wrong_file_names_itself_and_the_fix(tmp_path, monkeypatch, content):
    path = tmp_path / "minilm_embeddings.npz"
    if content == "wrong arrays":
        np.savez(path, vectors=np.zeros((2, 384), np.float16))
    elif content is not None:
        path.write_bytes(content)
    monkeypatch.setattr(embeddings, "EMBEDDINGS_FILE", path)
    embeddings.read_vectors.cache_clear()
    try:
        with pytest.raises(paper.PaperDataError, match="minilm_embeddings.npz.*(restore|scripts/embed_paper.py)"):
            paper.shipped_embeddings()
    finally:
        embeddings.read_vectors.cache_clear()


def test_float16_changes_no_table2_pvalue(minilm, monkeypatch):
    """README: float16 rounding leaves Table 2's p-values (seed 0, B = 1000) as fresh MiniLM vectors give them.

    Cosine similarities move by < 1e-4; ω moves only where a similarity
    crosses one of the 30 histogram bin edges (medical practitioner: 0.447 →
    0.445), far less than the gaps between the personas.
    """
    shipped = r.persona_table(embedder=minilm, n_resamples=1000, seed=0)
    hide_shipped_file(monkeypatch)
    fresh = r.persona_table(embedder=minilm, n_resamples=1000, seed=0)
    for a, b in zip(fresh.rows, shipped.rows):
        assert f"{a.pvalue:.3f}" == f"{b.pvalue:.3f}", a.persona
        assert abs(a.statistic - b.statistic) < 0.002, a.persona
