"""Tests of dbpa_core.stats.similarity against reference libraries."""

from __future__ import annotations

import numpy as np
import pytest
from nltk.translate.bleu_score import SmoothingFunction
from nltk.translate.bleu_score import sentence_bleu as nltk_sentence_bleu
from numpy.testing import assert_allclose
from rouge_score import rouge_scorer
from scipy.spatial.distance import cdist

from dbpa_core.stats.similarity import rouge_l, rouge_n, sentence_bleu, similarity_matrix, tokenize


def test_embedding_similarities_match_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 5))
    assert_allclose(similarity_matrix(x, "cosine"), 1 - cdist(x, x, "cosine"), atol=1e-12)
    assert_allclose(similarity_matrix(x, "neg_l1"), -cdist(x, x, "cityblock"), rtol=1e-14)
    assert_allclose(similarity_matrix(x, "neg_l2"), -cdist(x, x, "euclidean"), rtol=1e-14)
    assert np.all(np.diag(similarity_matrix(x, "cosine")) == 1.0)


def test_bleu_matches_nltk(persona_arms):
    texts = persona_arms["nurse"][:6] + persona_arms["comedian"][:6] + ["", "short", "a b", "a b c d e"]
    smoothing = SmoothingFunction().method1
    for hyp in texts:
        for ref in texts:
            h, r = tokenize(hyp), tokenize(ref)
            if not h:
                assert sentence_bleu(h, r) == 0.0
                continue
            expected = nltk_sentence_bleu([r], h, smoothing_function=smoothing)
            assert_allclose(sentence_bleu(h, r), expected, rtol=1e-12, atol=1e-15)


def test_rouge_l_matches_rouge_score(persona_arms):
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    texts = persona_arms["child"][:5] + persona_arms["doctor"][:5] + ["", "one two three"]
    for a in texts:
        for b in texts:
            expected = scorer.score(b, a)["rougeL"].fmeasure
            assert_allclose(rouge_l(tokenize(a), tokenize(b)), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n", [1, 2])
def test_rouge_n_matches_rouge_score(persona_arms, n):
    """Appendix C.4's ROUGE-1 and ROUGE-2, as Google's rouge-score computes them (no stemming)."""
    scorer = rouge_scorer.RougeScorer([f"rouge{n}"])
    texts = persona_arms["child"][:5] + persona_arms["doctor"][:5] + ["", "one two three", "one one two", "x"]
    for a in texts:
        for b in texts:
            expected = scorer.score(b, a)[f"rouge{n}"].fmeasure
            assert_allclose(rouge_n(tokenize(a), tokenize(b), n), expected, rtol=1e-12, atol=1e-15)
    # the matrix holds the same values (n-gram counts computed once per text)
    matrix = similarity_matrix(texts, f"rouge_{n}")
    assert_allclose(matrix[0, 7], scorer.score(texts[7], texts[0])[f"rouge{n}"].fmeasure, rtol=1e-12)
    # clipped counts: a repeated word counts once per occurrence in the other text
    assert rouge_n(["one", "one", "two"], ["one", "two", "three"], 1) == pytest.approx(2 / 3)


def test_text_matrices_symmetric_and_bounded():
    texts = ["the cat sat on the mat", "the cat sat", "a dog barked loudly at night", ""]
    for name in ("bleu", "rouge_1", "rouge_2", "rouge_l"):
        sim = similarity_matrix(texts, name)
        assert_allclose(sim, sim.T)
        assert np.all((sim >= 0) & (sim <= 1))
        assert sim[0, 1] > sim[0, 2]


@pytest.mark.parametrize(("outputs", "similarity", "match"), [
    (np.ones((3, 2)), "bleu", r"`outputs\[0\]` must be a str"),
    ("one long text", "bleu", "`outputs` must be a list of output texts"),
    (["a", 3], "rouge_l", r"`outputs\[1\]` must be a str"),
    (np.ones(4), "cosine", "`outputs` must be 2-D"),
    (np.ones((3, 2)), "jaccard", "`similarity` must be one of"),
    (np.zeros((3, 2)), "cosine", "row 0"),
])
def test_bad_inputs(outputs, similarity, match):
    with pytest.raises(ValueError, match=match):
        similarity_matrix(outputs, similarity)
