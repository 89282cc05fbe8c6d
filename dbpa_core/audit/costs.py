"""Cost and call estimate shown before a run (Rauba, Wei & van der Schaar, ICML 2025, appendix C.3).

calls = k × arms generation calls; tokens from the prompt length (≈ 4
characters per token, the usual rule for English with BPE tokenizers) and
``max_tokens`` as the upper bound of each output; embedding tokens = the
output tokens.  Prices per million tokens come from ``assets/pricing.yaml``;
unknown models are reported with an unknown price rather than a made-up one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .._validation import check_positive_int
from ..data.assets import ASSETS, read_yaml
from ..data.scenarios import CHARS_PER_TOKEN



@lru_cache(maxsize=1)
def prices() -> dict:
    return read_yaml(ASSETS / "pricing.yaml")


def estimate_tokens(text: str) -> int:
    """≈ tokens of a text (4 characters per token, at least 1 for non-empty text)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


@dataclass(frozen=True)
class CostEstimate:
    """What a run will cost at most, before it starts.

    Attributes
    ----------
    calls : int
        Generation calls (k × arms); with ``replayed``, the recorded answers replayed instead.
    input_tokens, output_tokens, embedding_tokens : int
        Token counts (output and embedding are upper bounds from ``max_tokens``).
    generation_cost, embedding_cost : float or None
        US dollars; None when the model's price is unknown.
    replayed : bool
        The backend replays recorded answers: no generation call is made (the reading must not say
        it "makes calls").
    synthetic : bool
        The simulated backend writes the answers: no language model is called (the reading said "270
        generation calls (≈11,010 prompt tokens …)" for it, as for a paid API).
    """

    calls: int
    input_tokens: int
    output_tokens: int
    embedding_tokens: int
    generation_cost: float | None
    embedding_cost: float | None
    replayed: bool = False
    synthetic: bool = False

    @property
    def total_cost(self) -> float | None:
        if self.generation_cost is None or self.embedding_cost is None:
            return None
        return self.generation_cost + self.embedding_cost

    def reading(self) -> str:
        """One plain sentence for the page."""
        if self.total_cost is None:
            cost = "an unknown price (model not in assets/pricing.yaml)"
        elif self.total_cost == 0:
            cost = "free, everything runs on this machine"
        else:
            cost = f"at most ${self.total_cost:,.4f}"
        if self.synthetic:
            return (f"This run writes {self.calls:,} synthetic answers with the simulated backend (no language model "
                    f"is called) and embeds ≤{self.embedding_tokens:,} tokens: {cost}.")
        if self.replayed:
            return (f"This run replays {self.calls:,} recorded answers (no generation calls: nothing is generated) "
                    f"and embeds ≤{self.embedding_tokens:,} tokens: {cost}.")
        return (f"This run makes {self.calls:,} generation calls (≈{self.input_tokens:,} prompt tokens, "
                f"≤{self.output_tokens:,} output tokens) and embeds ≤{self.embedding_tokens:,} tokens: {cost}.")


def estimate_cost(prompts: list[str], k: int, *, max_tokens: int, sampler_model: str = "simulated",
                  embedder_model: str = "minilm", batch: bool = False) -> CostEstimate:
    """Estimate calls, tokens and dollars for k samples of each prompt (one prompt per arm).

    Parameters
    ----------
    prompts : list of str
        The prompt of every arm (original and perturbed), exactly as sent.
    k : int
        Samples per arm.
    max_tokens : int
        Output cap per call.
    sampler_model, embedder_model : str
        Keys of ``assets/pricing.yaml`` (backend name or API model name).
    batch : bool
        Price at OpenAI Batch API rates (the file's ``batch`` table); a
        model without a batch price there costs an unknown amount, except
        the ones that run on this machine, which stay free.
    """
    if not prompts:
        raise ValueError("`prompts` must list the prompt of at least one arm.")
    k = check_positive_int(k, "k")
    max_tokens = check_positive_int(max_tokens, "max_tokens")
    calls = k * len(prompts)
    input_tokens = k * sum(estimate_tokens(p) for p in prompts)
    output_tokens = calls * max_tokens
    table = prices()
    generation = table["generation"].get(sampler_model)
    embedding = table["embedding"].get(embedder_model)
    if batch:
        # Free (local) backends stay free; paid ones need their batch price.
        generation = generation if generation == {"input": 0.0, "output": 0.0} else \
            table["batch"]["generation"].get(sampler_model)
        embedding = embedding if embedding == 0.0 else table["batch"]["embedding"].get(embedder_model)
    generation_cost = None if generation is None else (
        input_tokens * generation["input"] + output_tokens * generation["output"]) / 1e6
    embedding_cost = None if embedding is None else output_tokens * embedding / 1e6
    # The recorded backend replays answers generated once (scripts/record_samples.py): no call is made.
    return CostEstimate(calls, input_tokens, output_tokens, output_tokens, generation_cost, embedding_cost,
                        replayed=sampler_model == "recorded", synthetic=sampler_model == "simulated")
