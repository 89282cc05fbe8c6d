"""A stochastic text model with a known ground truth.

Each answer is an opener followed by a few sentences, one per *facet* drawn
without replacement with probability ∝ weight^(1/T) (temperature T), each in
one of the facet's phrasings.  A scenario gives every arm its facet weights,
so a control perturbation yields exactly the original distribution and a
target changes it by a known total-variation amount
(:meth:`dbpa_core.data.scenarios.Scenario.true_effect`).  A prompt no scenario
knows gets weights over a generic facet bank derived from a hash of its text:
any prompt works, deterministically.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..data.scenarios import Facet, Scenario, load_scenarios
from .base import Completion, DEFAULT_TEMPERATURE, Sampler, sample_seed

_OPENERS = ("", "Here is my answer. ", "Sure. ", "Good question. ", "Thanks for asking. ")

_GENERIC_FACETS = (
    Facet("overview", 1.0, ("Here is a short overview of {topic}.", "In brief, {topic} comes down to a few points.")),
    Facet("definition", 1.0, ("First, it helps to define the key terms in {topic}.",
                              "The question about {topic} depends on what exactly is meant.")),
    Facet("example", 1.0, ("For example, consider a typical case of {topic}.", "A concrete example makes {topic} clearer.")),
    Facet("caveat", 1.0, ("The answer may differ depending on the context.", "There are some exceptions to keep in mind.")),
    Facet("steps", 1.0, ("You can approach this in three steps.", "Start with the simplest option and build from there.")),
    Facet("evidence", 1.0, ("Most sources agree on the main points.", "The evidence on this is fairly consistent.")),
    Facet("recommendation", 1.0, ("My recommendation is to start small and review the results.",
                                  "I would suggest checking the details with an expert.")),
    Facet("summary", 1.0, ("To sum up, the key idea is simple.", "In short, that covers the essentials.")),
)


class FacetModel:
    """Facet weights plus the rendering of one answer."""

    def __init__(self, facets: tuple[Facet, ...], weights: dict[str, float], topic: str = ""):
        self.facets = [f for f in facets if weights.get(f.name, 0.0) > 0]
        self.weights = np.array([weights[f.name] for f in self.facets], dtype=float)
        self.topic = topic

    def render(self, rng: np.random.Generator, temperature: float, max_tokens: int) -> str:
        # Greedy decoding (T = 0) is deterministic: always three sentences.
        n_sentences = int(rng.integers(2, 5)) if temperature > 1e-6 else 3
        n_sentences = max(1, min(n_sentences, len(self.facets), max_tokens // 12 or 1))
        if temperature <= 1e-6:
            chosen = np.argsort(-self.weights, kind="stable")[:n_sentences]
            opener, phrasings = _OPENERS[0], [self.facets[i].phrasings[0] for i in chosen]
        else:
            logits = np.log(self.weights) / temperature
            probabilities = np.exp(logits - logits.max())
            probabilities /= probabilities.sum()
            chosen = rng.choice(len(self.facets), size=n_sentences, replace=False, p=probabilities)
            opener = _OPENERS[int(rng.integers(len(_OPENERS)))]
            phrasings = [self.facets[i].phrasings[int(rng.integers(len(self.facets[i].phrasings)))] for i in chosen]
        text = opener + " ".join(p.format(topic=self.topic) if "{topic}" in p else p for p in phrasings)
        words = text.split(" ")
        limit = int(max_tokens * 0.75)  # ≈ 0.75 words per token
        return " ".join(words[:limit]) if len(words) > limit else text


class SimulatedSampler(Sampler):
    """Simulated LLM whose output distribution per prompt is known.

    Parameters
    ----------
    scenarios : dict or iterable of Scenario, optional
        Scenarios whose arms define facet weights; default: the packaged ones.
    model : str
        A name for the simulated model (part of the store key).
    """

    name = "simulated"
    default_temperature = DEFAULT_TEMPERATURE["simulated"]
    empty_retries = 0  # deterministic per seed: asking again returns the same reply

    def __init__(self, scenarios=None, model: str = "simulated-v1"):
        if scenarios is None:
            scenarios = load_scenarios()
        if isinstance(scenarios, dict):
            scenarios = scenarios.values()
        self._model = str(model)
        self._arms: dict[tuple[str, str], FacetModel] = {}
        for scenario in scenarios:
            self._register(scenario)

    @property
    def model(self) -> str:
        return self._model

    def _register(self, scenario: Scenario) -> None:
        self._arms[(scenario.prompt, scenario.system)] = FacetModel(scenario.facets, scenario.facet_weights())
        for perturbation in scenario.perturbations:
            prompt, system = scenario.apply(perturbation)
            self._arms[(prompt, system)] = FacetModel(scenario.facets, scenario.facet_weights(perturbation))

    def knows(self, prompt: str, system: str | None = None) -> bool:
        """Whether the prompt is a scenario arm (so its true effect is known)."""
        return (prompt, system or "") in self._arms

    def facet_model(self, prompt: str, system: str | None = None) -> FacetModel:
        known = self._arms.get((prompt, system or ""))
        if known is not None:
            return known
        digest = hashlib.sha256(f"{system or ''}\x00{prompt}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        weights = rng.dirichlet(np.full(len(_GENERIC_FACETS), 0.7))
        topic = " ".join(prompt.split()[:6]).rstrip("?.!,:;")
        return FacetModel(_GENERIC_FACETS, {f.name: float(w) + 1e-3 for f, w in zip(_GENERIC_FACETS, weights)},
                          topic=f"“{topic}”")

    def complete(self, prompt, *, system, temperature, max_tokens, seed, index):
        # The prompt enters the stream too: two arms with one seed must be
        # independent draws even when their facet weights are equal (controls),
        # as two prompts to a real model would be.
        digest = hashlib.sha256(f"{system or ''}\x00{prompt}".encode()).digest()
        rng = np.random.default_rng([sample_seed(seed, index), int.from_bytes(digest[:8], "little")])
        return Completion(self.facet_model(prompt, system).render(rng, temperature, max_tokens))
