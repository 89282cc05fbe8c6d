"""Orchestration: scenario → sampler → embedder → test, used by pages and the CLI.

Data flows one way (samplers → embedders → statistics); this module only
wires the steps together and keeps every intermediate (texts, embeddings) in
its frozen results so that pages can show them without recomputing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .corrections import AdjustedPValues, adjust_pvalues
from .permutation import DBPAResult, dbpa_test

#: progress(stage, done, total) -> None or False (False cancels sampling).
StageProgress = Callable[[str, int, int], "bool | None"]


@dataclass(frozen=True, eq=False)
class Arm:
    """One arm of a test: what was sent and what came back."""

    label: str
    prompt: str
    system: str
    texts: tuple[str, ...]
    embeddings: np.ndarray = field(repr=False)
    model: str = ""


@dataclass(frozen=True, eq=False)
class PerturbationResult:
    """The test of one perturbation, with both arms."""

    label: str
    kind: str  # "control", "target" or "" (unlabelled)
    original: Arm
    perturbed: Arm
    test: DBPAResult
    true_effect: float | None = None
    perturbation_id: str = ""


@dataclass(frozen=True, eq=False)
class FamilyResult:
    """Many perturbations of one original arm, with family-wise correction."""

    results: tuple[PerturbationResult, ...]
    adjusted: AdjustedPValues


def draw_arm(sampler, prompt: str, k: int, *, label: str, system: str = "", temperature=None, max_tokens=None,
             seed: int = 0, embedder, store=None, progress: StageProgress | None = None) -> Arm:
    """Sample k outputs for one prompt and embed them (both cached in ``store``)."""

    def sampling(done, total):
        return progress(f"sampling {label}", done, total) if progress else None

    def embedding(done, total):
        return progress(f"embedding {label}", done, total) if progress else None

    texts = sampler.sample(prompt, k, system=system or None, temperature=temperature, max_tokens=max_tokens,
                           seed=seed, store=store, progress=sampling)
    embeddings = embedder.embed(texts, store=store, progress=embedding)
    return Arm(label, prompt, system or "", tuple(texts), embeddings, getattr(sampler, "model", ""))


def compare_arms(original: Arm, perturbed: Arm, *, label: str, kind: str = "", similarity: str = "cosine",
              discrepancy="jsd", n_resamples: int = 1000, rng=None, true_effect: float | None = None,
              perturbation_id: str = "") -> PerturbationResult:
    """Run :func:`dbpa_test` on two drawn arms."""
    if similarity in ("bleu", "rouge_l"):
        result = dbpa_test(list(original.texts), list(perturbed.texts), similarity=similarity,
                           discrepancy=discrepancy, n_resamples=n_resamples, rng=rng)
    else:
        result = dbpa_test(original.embeddings, perturbed.embeddings, similarity=similarity,
                           discrepancy=discrepancy, n_resamples=n_resamples, rng=rng)
    return PerturbationResult(label, kind, original, perturbed, result, true_effect, perturbation_id)


def run_scenario_family(scenario, perturbation_ids: Sequence[str] | None, *, sampler, embedder, k: int,
                        perturbed_sampler=None, n_resamples: int = 1000, similarity: str = "cosine",
                        discrepancy="jsd", correction: str = "bonferroni", alpha: float = 0.05, seed: int = 0,
                        temperature=None, max_tokens=None, store=None,
                        progress: StageProgress | None = None) -> FamilyResult:
    """Test every chosen perturbation of a scenario against its original arm.

    The original arm is drawn once (seed ``seed``) and shared; each perturbed
    arm is drawn with seed ``seed + 1`` so that the arms are independent
    draws even when a perturbation leaves the prompt's meaning unchanged.
    ``perturbed_sampler`` (default ``sampler``) expresses a system
    perturbation: another model or backend for the perturbed arms.
    """
    chosen = scenario.perturbations if perturbation_ids is None else [scenario.perturbation(p) for p in perturbation_ids]
    if not chosen:
        raise ValueError("`perturbation_ids` must name at least one perturbation of the scenario.")
    generation = {"temperature": temperature, "max_tokens": max_tokens, "store": store, "progress": progress,
                  "embedder": embedder}
    original = draw_arm(sampler, scenario.prompt, k, label="original", system=scenario.system, seed=seed,
                        **generation)
    rng = np.random.default_rng(seed)
    results = []
    for perturbation in chosen:
        prompt, system = scenario.apply(perturbation)
        perturbed = draw_arm(perturbed_sampler or sampler, prompt, k, label=perturbation.label, system=system,
                             seed=seed + 1, **generation)
        results.append(compare_arms(original, perturbed, label=perturbation.label, kind=perturbation.kind,
                                 similarity=similarity, discrepancy=discrepancy, n_resamples=n_resamples, rng=rng,
                                 true_effect=scenario.true_effect(perturbation), perturbation_id=perturbation.id))
    adjusted = adjust_pvalues([r.test.pvalue for r in results], method=correction, alpha=alpha)
    return FamilyResult(tuple(results), adjusted)
