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
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax

from ..samplers.local import load_llama, model_lock, resolve_model

SCORES = ("log_rank", "log_likelihood", "mean_rank", "entropy", "lrr")


class ReferenceScorer:
    """Scores responses with a local GGUF model (default: the packaged SmolLM2).

    Parameters
    ----------
    model_path : str, optional
        A GGUF file, instead of ``model``.
    model : str, optional
        A local model by name (:data:`~dbpa_core.samplers.quantize.LOCAL_MODELS`), e.g. ``"smollm2-q4_0"``.
    n_ctx : int
        Context window in tokens.
    """

    def __init__(self, model_path: str | None = None, *, model: str | None = None, n_ctx: int = 2048):
        self.model_path = resolve_model(model, model_path)
        self.n_ctx = n_ctx

    @property
    def llama(self):
        return load_llama(self.model_path, self.n_ctx)

    def _prompt_tokens(self, prompt: str, system: str | None) -> list[int]:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        llama = self.llama
        template = llama.metadata.get("tokenizer.chat_template")
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        if template:
            formatter = Jinja2ChatFormatter(template=template, eos_token="<|im_end|>", bos_token="")
            text = formatter(messages=messages).prompt
        else:  # a model without a template: plain concatenation
            text = "\n".join(m["content"] for m in messages) + "\n"
        return llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def token_statistics(self, prompt: str, response: str, *, system: str | None = None):
        """Per-token (log-probability, rank, entropy) of ``response`` after ``prompt``."""
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
            # Reuse the evaluated prompt (scoring many responses to one prompt
            # evaluates it once): keep the cached prefix shared with the
            # context, re-evaluate the rest.  eval() drops the KV cache past
            # n_tokens, and the logits rows of the kept prefix stay valid.
            kept = llama.longest_token_prefix(llama.input_ids[: llama.n_tokens].tolist(), context)
            llama.n_tokens = min(kept, len(context))
            llama.eval(tokens[llama.n_tokens :])
            # logits at position p predict token p + 1
            logits = np.array(llama.scores[len(context) - 1 : len(tokens) - 1], dtype=np.float64)
        logp = log_softmax(logits, axis=1)
        target = np.asarray(answer)
        token_logp = logp[np.arange(len(target)), target]
        ranks = 1 + (logits > logits[np.arange(len(target)), target][:, None]).sum(axis=1)
        entropy = -(np.exp(logp) * logp).sum(axis=1)
        return token_logp, ranks.astype(np.float64), entropy

    def score(self, prompt: str, response: str, *, system: str | None = None) -> dict[str, float]:
        """All :data:`SCORES` of one response (NaN for an empty response)."""
        logp, ranks, entropy = self.token_statistics(prompt, response, system=system)
        if logp.size == 0:
            return dict.fromkeys(SCORES, float("nan"))
        log_rank = np.log(ranks)
        return {
            "log_rank": float(log_rank.mean()),
            "log_likelihood": float(logp.sum()),
            "mean_rank": float(ranks.mean()),
            "entropy": float(entropy.mean()),
            "lrr": float(-logp.sum() / log_rank.sum()) if log_rank.sum() > 0 else float("inf"),
        }
