"""Step 2 of DBPA (Rauba, Wei & van der Schaar, ICML 2025, §3): the pooled similarity matrix s(y_i, y_j).

Every discrepancy of :mod:`dbpa_core.stats.discrepancy` reads one ``(n, n)`` matrix
computed once on the pooled ``n = k0 + k1`` outputs (original arm first); the
permutation engine only re-indexes it (paper, Algorithm 1).  Embedding
similarities take a ``(n, dim)`` array; text similarities (BLEU, ROUGE-L) take
the raw output texts.

==========  ====================================================  ==========
name        s(a, b)                                                input
==========  ====================================================  ==========
cosine      a·b / (‖a‖ ‖b‖)   (the paper's default)                embeddings
neg_l1      −‖a − b‖₁                                             embeddings
neg_l2      −‖a − b‖₂                                             embeddings
bleu        ½ (BLEU(a|b) + BLEU(b|a)), 4-gram, smoothing method 1  texts
rouge_1     ROUGE-1 F1: shared words (symmetric by construction)   texts
rouge_2     ROUGE-2 F1: shared word pairs                          texts
rouge_l     ROUGE-L F1: longest common subsequence                 texts
==========  ====================================================  ==========

BLEU follows ``nltk.translate.bleu_score.sentence_bleu`` with
``SmoothingFunction().method1`` and ROUGE-1/2/L follow Google's ``rouge-score``
package (lower-cased alphanumeric tokens, no stemming); the tests check them
against those libraries.  The paper's appendix C.4 uses BLEU, ROUGE-1, ROUGE-2
and ROUGE-L in place of the embedding cosine.  BLEU is not symmetric, so the two directions are
averaged: a similarity must not depend on which output is called the reference.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from .._validation import InvalidValue, check_choice, check_embeddings, check_texts

EMBEDDING_SIMILARITIES = ("cosine", "neg_l1", "neg_l2")
TEXT_SIMILARITIES = ("bleu", "rouge_1", "rouge_2", "rouge_l")
SIMILARITIES = EMBEDDING_SIMILARITIES + TEXT_SIMILARITIES

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens (the ``rouge-score`` default tokenizer)."""
    return _TOKEN.findall(text.lower())


def similarity_matrix(outputs, similarity: str = "cosine") -> np.ndarray:
    """Pairwise similarities of pooled outputs.

    Parameters
    ----------
    outputs : array_like of shape (n, dim), or sequence of n str
        Embeddings for ``"cosine"``, ``"neg_l1"``, ``"neg_l2"``; texts for
        ``"bleu"``, ``"rouge_1"``, ``"rouge_2"`` and ``"rouge_l"``.
    similarity : str
        One of ``SIMILARITIES``.

    Returns
    -------
    ndarray of shape (n, n), float64
        Symmetric; larger means more alike.
    """
    similarity = check_choice(similarity, "similarity", SIMILARITIES)
    if similarity in TEXT_SIMILARITIES:
        texts = check_texts(outputs, "outputs", min_rows=1)
        return _text_similarity_matrix(texts, similarity)
    embeddings = check_embeddings(outputs, "outputs", min_rows=1)
    return embedding_similarity_matrix(embeddings, similarity)


def embedding_similarity_matrix(embeddings: np.ndarray, similarity: str) -> np.ndarray:
    """Similarity matrix of validated embeddings (no input checks)."""
    if similarity == "cosine":
        norms = np.linalg.norm(embeddings, axis=1)
        if np.any(norms == 0):
            row = int(np.flatnonzero(norms == 0)[0])
            raise ValueError(
                f"cosine similarity is undefined for the all-zero embedding in row {row}; "
                "use `similarity='neg_l2'` or drop that output."
            )
        unit = embeddings / norms[:, None]
        matrix = unit @ unit.T
        np.clip(matrix, -1.0, 1.0, out=matrix)
        np.fill_diagonal(matrix, 1.0)
        return matrix
    metric = {"neg_l1": "cityblock", "neg_l2": "euclidean"}[similarity]
    # Imported here: scipy.spatial takes ≈1 s to import, and cosine (the home page's first view) never needs it.
    from scipy.spatial.distance import cdist

    return -cdist(embeddings, embeddings, metric=metric)


def distance_from_similarity(matrix: np.ndarray, similarity: str) -> np.ndarray:
    """The distance that a similarity implies (for the energy distance).

    cosine → 1 − s (the cosine distance); −L1 and −L2 → their negation; text
    similarities in [0, 1] → 1 − s.
    """
    if similarity in ("neg_l1", "neg_l2"):
        return -matrix
    distance = 1.0 - matrix
    np.fill_diagonal(distance, 0.0)
    return distance


# ----------------------------------------------------------------- text metrics
def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def sentence_bleu(hypothesis: list[str], reference: list[str], max_order: int = 4) -> float:
    """Sentence BLEU of token lists, as nltk's ``sentence_bleu`` with method1 smoothing.

    Method 1 (Chen & Cherry 2014) replaces a zero n-gram match count by
    ε = 0.1 so that one missing 4-gram does not zero the score.
    """
    hyp_len = len(hypothesis)
    if hyp_len == 0:
        return 0.0
    log_precision = 0.0
    for order in range(1, max_order + 1):
        hyp_counts = _ngrams(hypothesis, order)
        ref_counts = _ngrams(reference, order)
        matches = sum(min(count, ref_counts[gram]) for gram, count in hyp_counts.items())
        total = max(1, sum(hyp_counts.values()))
        if order == 1 and matches == 0:
            return 0.0  # nltk: no unigram in common means BLEU = 0 regardless of smoothing
        log_precision += math.log((matches if matches else 0.1) / total) / max_order
    ref_len = len(reference)
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return brevity * math.exp(log_precision)


def rouge_n(a: list[str], b: list[str], n: int) -> float:
    """ROUGE-N F1 of two token lists: clipped n-gram overlap (rouge-score's ``_score_ngrams``)."""
    return _rouge_n_counts(_ngrams(a, n), _ngrams(b, n))


def _rouge_n_counts(a: Counter, b: Counter) -> float:
    overlap = sum(min(count, b[gram]) for gram, count in a.items())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / sum(b.values()), overlap / sum(a.values())
    return 2 * precision * recall / (precision + recall)


def rouge_l(a: list[str], b: list[str]) -> float:
    """ROUGE-L F1 of two token lists (longest common subsequence)."""
    if not a or not b:
        return 0.0
    lcs = _lcs_length(a, b)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(a), lcs / len(b)
    return 2 * precision * recall / (precision + recall)


def _lcs_length(a: list[str], b: list[str]) -> int:
    # One row of the dynamic programme at a time, vectorised over b with
    # numpy: row[j] = max(prev[j], row[j-1], prev[j-1] + match) needs a running
    # maximum, which np.maximum.accumulate provides in one pass.
    vocabulary = {token: index for index, token in enumerate(set(a) | set(b))}
    b_ids = np.fromiter((vocabulary[t] for t in b), dtype=np.int64, count=len(b))
    previous = np.zeros(len(b) + 1, dtype=np.int64)
    for token in a:
        match = b_ids == vocabulary[token]
        candidate = np.maximum(previous[1:], previous[:-1] + match)
        current = np.empty_like(previous)
        current[0] = 0
        current[1:] = np.maximum.accumulate(candidate)
        previous = current
    return int(previous[-1])


#: Most word-by-word comparisons ROUGE-L may make for one matrix (≈ 3 ns each: well under a minute), and
#: most words BLEU and ROUGE-1/2 may count over all pairs: a few long texts would otherwise hold a CPU for hours.
MAX_LCS_CELLS = 10_000_000_000
MAX_NGRAM_WORDS = 500_000_000


def check_text_work(lengths: list[int], similarity: str) -> None:
    """Refuse, before any pair is compared, texts whose pairwise comparisons exceed the work budget, naming
    the length per text that fits.  ROUGE-L's longest common subsequence takes len(a)·len(b) steps per pair,
    BLEU and ROUGE-N take len(a) + len(b)."""
    n, total = len(lengths), sum(lengths)
    pairs = n * (n - 1) // 2
    if not pairs:
        return
    if similarity == "rouge_l":
        work, budget = (total * total - sum(x * x for x in lengths)) // 2, MAX_LCS_CELLS
        fits = int(math.sqrt(budget / pairs))
    else:
        work, budget = (n - 1) * total, MAX_NGRAM_WORDS
        fits = budget // max(2 * pairs, 1)
    if work > budget:
        raise InvalidValue("similarity", f"{similarity} would compare these {n:,} texts ({total:,} words) in "
                           f"{work:,.3g} steps, over the budget of {budget:,.3g}; texts of at most ≈{fits:,} words "
                           "each fit (shorten them), or use an embedding similarity such as cosine")


def _text_similarity_matrix(texts: list[str], similarity: str) -> np.ndarray:
    tokens = [tokenize(text) for text in texts]
    check_text_work([len(t) for t in tokens], similarity)
    n = len(tokens)
    matrix = np.eye(n)
    if similarity in ("rouge_1", "rouge_2"):
        # n-gram counts once per text, not once per pair
        grams = [_ngrams(t, int(similarity[-1])) for t in tokens]
    for i in range(n):
        for j in range(i + 1, n):
            if similarity == "bleu":
                value = 0.5 * (sentence_bleu(tokens[i], tokens[j]) + sentence_bleu(tokens[j], tokens[i]))
            elif similarity == "rouge_l":
                value = rouge_l(tokens[i], tokens[j])
            else:
                value = _rouge_n_counts(grams[i], grams[j])
            matrix[i, j] = matrix[j, i] = value
    return matrix
