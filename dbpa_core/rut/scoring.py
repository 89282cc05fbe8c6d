"""Scalar scores of a response under a *reference* model (for the RUT audit).

Whatever produced a response, it is scored by the reference model: the
response's tokens are fed after the chat-templated prompt and, at every
position, the reference model's full-vocabulary distribution gives the
token's log-probability and its rank (1 = the model's top choice).

=================  ==========================================================
score              definition (over the response's T tokens)
=================  ==========================================================
log_rank           mean of log(rank)  — the paper's choice
log_likelihood     sum of log p(token)
mean_rank          mean rank
entropy            mean entropy (nats) of the predictive distributions
lrr                log-likelihood / log-rank ratio: −Σ log p / Σ log rank
=================  ==========================================================

Speed and numbers: :meth:`ReferenceScorer.score_many` scores many responses
to one prompt together (:meth:`~dbpa_core.samplers.engine.LlamaEngine.score_iter`:
the prompt evaluated once, then one token of each of up to 32 responses per
forward step, ranks and entropies vectorised in numpy over the step's rows).
Each response is read as the model would have generated it, one token per
step, so its scores equal, bit for bit, those of the per-token path
(:meth:`ReferenceScorer.per_token_statistics`: one ``eval`` and one row of
Python per token) and the log-probabilities the sampler reported when it drew
the response.  The path before batching,
:meth:`ReferenceScorer.reference_token_statistics` (one response per call
through ``llama_cpp.Llama``, the whole response in one forward step), gives
other numbers in the last bits of its logits: llama.cpp's default attention
computes a many-token step differently from a one-token step, which moves a
log-probability by up to ~0.2 nats (bench/probe_numerics.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..samplers.local import get_engine, load_llama, model_lock, resolve_model

SCORES = ("log_rank", "log_likelihood", "mean_rank", "entropy", "lrr")
#: What a person reads for each score (the paper's §4.2 names; its "log-likelihood log-rank ratio" shortened to fit
#: a table column and a chart axis at 1024 px; the ids stay in exports and code).
SCORE_NAMES = {"log_rank": "log-rank", "log_likelihood": "log-likelihood", "mean_rank": "mean token rank",
               "entropy": "entropy", "lrr": "log-rank ratio (LRR)"}


def scores_of(token_logprobs: np.ndarray, ranks: np.ndarray, entropy: np.ndarray) -> dict[str, float]:
    """All :data:`SCORES` from per-token statistics (NaN for an empty response)."""
    if token_logprobs.size == 0:
        return dict.fromkeys(SCORES, float("nan"))
    log_rank = np.log(ranks)
    return {
        "log_rank": float(log_rank.mean()),
        "log_likelihood": float(token_logprobs.sum()),
        "mean_rank": float(ranks.mean()),
        "entropy": float(entropy.mean()),
        "lrr": float(-token_logprobs.sum() / log_rank.sum()) if log_rank.sum() > 0 else float("inf"),
    }


def token_statistics_from_logits(logits: np.ndarray, tokens) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-token (log-probability, rank, entropy) of ``tokens`` given the rows of ``logits`` that predict them.

    ``logits``: (T, vocabulary); rank 1 is the model's top choice (ties
    counted in the token's favour).  Vectorised over all T positions; a row's
    statistics do not depend on the other rows, bit for bit.
    """
    target = np.asarray(tokens, dtype=np.int64)
    if target.size == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    logits = np.asarray(logits)
    rows = np.arange(target.size)
    # Ranks compare the model's own numbers (no shift, no rounding that could make two logits tie).
    ranks = 1 + np.count_nonzero(logits > logits[rows, target][:, None], axis=1)
    # One float64 copy, shifted in place by each row's maximum (no overflow in exp).
    shifted = np.array(logits, dtype=np.float64)
    shifted -= shifted.max(axis=1, keepdims=True)
    chosen = shifted[rows, target]
    weights = np.exp(shifted)
    total = weights.sum(axis=1)
    log_total = np.log(total)
    # log p = x − log Z and H = log Z − Σ p·x (x: the shifted logits, Z = Σ exp x): one exp over the vocabulary.
    # Each row's sums are numpy's pairwise sums along it, whatever the other rows (einsum's are not: it gave
    # other last bits for a row scored alone than among 16).
    entropy = log_total - (weights * shifted).sum(axis=1) / total
    return chosen - log_total, ranks.astype(np.float64), entropy


@dataclass(frozen=True)
class ScoredResponse:
    """A response scored by the reference model.

    Attributes
    ----------
    text : str
    tokens : tuple of int
        The response's token ids under the reference tokenizer (cut where
        the context ends), e.g. for a Hamming kernel between responses.
    token_logprobs, ranks, entropy : ndarray
        Per token: log p, rank (1 = top choice), entropy (nats) of the
        predictive distribution.
    """

    text: str
    tokens: tuple[int, ...]
    token_logprobs: np.ndarray
    ranks: np.ndarray
    entropy: np.ndarray

    @property
    def scores(self) -> dict[str, float]:
        """All :data:`SCORES`."""
        return scores_of(self.token_logprobs, self.ranks, self.entropy)


class ReferenceScorer:
    """Scores responses with a local GGUF model (default: the packaged SmolLM2).

    Parameters
    ----------
    model_path : str, optional
        A GGUF file, instead of ``model``.
    model : str, optional
        A local model by name (:data:`~dbpa_core.samplers.quantize.LOCAL_MODELS`), e.g. ``"smollm2-q4_0"``.
    n_ctx : int
        Context window in tokens; a longer prompt + response is cut at it.
    batch_size : int
        Responses scored together (one token of each per forward step); scores do not depend on it.
    n_threads : int, optional
        llama.cpp threads (default: the number of CPU cores); scores do not depend on it.
    """

    def __init__(self, model_path: str | None = None, *, model: str | None = None, n_ctx: int = 2048,
                 batch_size: int = 32, n_threads: int | None = None):
        self.model_path = resolve_model(model, model_path)
        self.n_ctx = n_ctx
        self.batch_size = batch_size
        self.n_threads = n_threads

    @property
    def engine(self):
        return get_engine(self.model_path, self.n_ctx, self.n_threads)

    def _messages(self, prompt: str, system: str | None) -> list[dict]:
        return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]

    def score_responses(self, prompt: str, responses, *, system: str | None = None) -> list[ScoredResponse]:
        """Score many responses to one ``prompt`` (the fast path: up to ``batch_size`` of them per forward step).

        Parameters
        ----------
        prompt : str
        responses : sequence of str
        system : str, optional
            The system prompt the responses were asked with.

        Returns
        -------
        list of ScoredResponse
            In the order of ``responses``; an empty response has no tokens and NaN scores.
        """
        responses = list(responses)
        if not all(isinstance(r, str) for r in responses):
            raise ValueError("`responses` must be strings.")
        engine = self.engine
        with model_lock(self.model_path):
            context = engine.chat_prompt(self._messages(prompt, system))
            room = self.n_ctx - len(context)
            if room <= 0:
                raise ValueError(f"`prompt` fills the {self.n_ctx}-token context; no room to score the response.")
            tokens = [engine.tokenize(r, special=False)[:room] for r in responses]
            scored: list[ScoredResponse | None] = [None] * len(responses)
            for j, statistics in engine.score_iter(context, tokens, token_statistics_from_logits,
                                                   width=self.batch_size):
                scored[j] = ScoredResponse(responses[j], tuple(tokens[j]), *statistics)
        return scored  # type: ignore[return-value]

    def score_many(self, prompt: str, responses, *, system: str | None = None) -> list[dict[str, float]]:
        """All :data:`SCORES` of each response to ``prompt`` (NaN for an empty response)."""
        return [r.scores for r in self.score_responses(prompt, responses, system=system)]

    def token_statistics(self, prompt: str, response: str, *, system: str | None = None):
        """Per-token (log-probability, rank, entropy) of ``response`` after ``prompt``."""
        (scored,) = self.score_responses(prompt, [response], system=system)
        return scored.token_logprobs, scored.ranks, scored.entropy

    def score(self, prompt: str, response: str, *, system: str | None = None) -> dict[str, float]:
        """All :data:`SCORES` of one response (NaN for an empty response)."""
        return self.score_many(prompt, [response], system=system)[0]

    # -- the earlier path, kept as the reference of the tests and the benchmark -----------------------

    @property
    def llama(self):
        return load_llama(self.model_path, self.n_ctx, self.n_threads)

    def _prompt_tokens(self, prompt: str, system: str | None) -> list[int]:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        llama = self.llama
        template = llama.metadata.get("tokenizer.chat_template")
        messages = self._messages(prompt, system)
        if template:
            formatter = Jinja2ChatFormatter(template=template, eos_token="<|im_end|>", bos_token="")
            text = formatter(messages=messages).prompt
        else:  # a model without a template: plain concatenation
            text = "\n".join(m["content"] for m in messages) + "\n"
        return llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def reference_token_statistics(self, prompt: str, response: str, *, system: str | None = None):
        """:meth:`token_statistics` one response at a time through ``llama_cpp.Llama`` (``logits_all``).

        The path before batching: the whole response in one forward step.  Its
        numbers differ from the per-token path's in the last bits of the
        logits (up to ~0.2 nats in a log-probability; module docstring).
        """
        llama = self.llama
        context = self._prompt_tokens(prompt, system)
        answer = llama.tokenize(response.encode("utf-8"), add_bos=False, special=False)
        if not answer:
            return np.zeros(0), np.zeros(0), np.zeros(0)
        tokens = (context + answer)[: self.n_ctx]
        answer = tokens[len(context):]
        if not answer:
            raise ValueError(f"`prompt` fills the {self.n_ctx}-token context; no room to score the response.")
        with model_lock(self.model_path):
            # Reuse the evaluated prompt: keep the cached prefix shared with the
            # context, re-evaluate the rest (eval() drops the KV cache past n_tokens).
            kept = llama.longest_token_prefix(llama.input_ids[: llama.n_tokens].tolist(), context)
            llama.n_tokens = min(kept, len(context))
            llama.eval(tokens[llama.n_tokens :])
            # logits at position p predict token p + 1
            logits = np.array(llama.scores[len(context) - 1 : len(tokens) - 1], dtype=np.float64)
        return token_statistics_from_logits(logits, answer)

    def per_token_statistics(self, prompt: str, response: str, *, system: str | None = None):
        """:meth:`token_statistics` token by token: one forward step and one row of Python per token.

        The path the fast one replaces in the benchmark (bench/bench_local.py)
        and the tests: the prompt's cache is reused as in
        :meth:`reference_token_statistics`, but the response is fed one token
        per ``eval`` (as a generation loop feeds it) and each position's
        statistics come from its own row.  :meth:`score_responses` gives the
        same numbers bit for bit (``tests/test_scoring.py``).
        """
        llama = self.llama
        context = self._prompt_tokens(prompt, system)
        answer = llama.tokenize(response.encode("utf-8"), add_bos=False, special=False)
        answer = (context + answer)[: self.n_ctx][len(context):]
        logp, ranks, entropy = [], [], []
        with model_lock(self.model_path):
            kept = llama.longest_token_prefix(llama.input_ids[: llama.n_tokens].tolist(), context)
            llama.n_tokens = min(kept, len(context))
            llama.eval(context[llama.n_tokens:])
            for t, token in enumerate(answer):
                row = np.array(llama.scores[llama.n_tokens - 1], dtype=np.float64)
                peak = row.max()
                log_z = peak + math.log(np.exp(row - peak).sum())
                logp.append(float(row[token] - log_z))
                ranks.append(1.0 + float((row > row[token]).sum()))
                p = np.exp(row - log_z)
                entropy.append(float(-(p * (row - log_z)).sum()))
                if t + 1 < len(answer):
                    llama.eval([token])
        return np.array(logp), np.array(ranks), np.array(entropy)
