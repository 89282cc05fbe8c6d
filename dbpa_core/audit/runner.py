"""Orchestration: scenario → sampler → embedder → test, used by pages and the CLI.

Data flows one way (samplers → embedders → statistics); this module only
wires the steps together and keeps every intermediate (texts, embeddings) in
its frozen results so that pages can show them without recomputing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ..stats.corrections import AdjustedPValues, adjust_pvalues
from ..stats.permutation import DBPAResult, dbpa_test
from ..stats.similarity import TEXT_SIMILARITIES
from ..data.store import request_key

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
    sample_ids: tuple[str, ...] = ()


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
    """Many perturbations of one original arm, with family-wise correction (paper §3.3).

    Attributes
    ----------
    results : tuple of PerturbationResult
    adjusted : AdjustedPValues
        The family's correction; its ``method`` and ``alpha`` are the ones every
        view of this family (screen, JSON, CSV, HTML) reports.
    settings : mapping
        The test settings the family was run with (k, n_resamples, similarity,
        discrepancy, correction, alpha, seed), so an export never has to be told
        them again by the caller.
    """

    results: tuple[PerturbationResult, ...]
    adjusted: AdjustedPValues
    settings: Mapping[str, Any] = field(default_factory=dict)

    def recorrected(self, correction: str, alpha: float) -> FamilyResult:
        """The same tests under another correction or α (a new object; p-values are not recomputed)."""
        adjusted = adjust_pvalues([r.test.pvalue for r in self.results], method=correction, alpha=alpha)
        return FamilyResult(self.results, adjusted,
                            MappingProxyType({**self.settings, "correction": correction, "alpha": alpha}))


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
    # "<request key>:<index>" names each sample in the store (and in reports).
    key = request_key(sampler.describe_request(prompt, system=system or None, temperature=temperature,
                                               max_tokens=max_tokens, seed=seed))[:16]
    return Arm(label, prompt, system or "", tuple(texts), embeddings, getattr(sampler, "model", ""),
               tuple(f"{key}:{i}" for i in range(len(texts))))


def uploaded_arms(table, original: str, perturbed: str, *, embedder=None, store=None) -> tuple[Arm, Arm]:
    """The two arms of a user's samples file (:func:`dbpa_core.data.uploads.read_samples`).

    Embeddings from the file are used as given (both arms must have the same
    dimension); otherwise the texts are embedded with ``embedder``.
    """
    for name, arm in (("original", original), ("perturbed", perturbed)):
        if arm not in table.texts:
            raise ValueError(f"`{name}` must be one of the file's arms ({', '.join(table.texts)}); got {arm!r}.")
    if table.embeddings is not None:
        vectors = {arm: np.asarray(table.embeddings[arm]) for arm in (original, perturbed)}
        if vectors[original].shape[1] != vectors[perturbed].shape[1]:
            raise ValueError(f"The two arms' embeddings have different lengths ({vectors[original].shape[1]} and "
                             f"{vectors[perturbed].shape[1]}); embed both with the same model.")
    else:
        if embedder is None:
            raise ValueError("The file has no `embedding` column: an `embedder` is needed to embed its texts.")
        vectors = {arm: embedder.embed(table.texts[arm], store=store) for arm in (original, perturbed)}
    return tuple(Arm(arm, "", "", tuple(table.texts[arm]), vectors[arm], "uploaded") for arm in (original, perturbed))


def compare_arms(original: Arm, perturbed: Arm, *, label: str, kind: str = "", similarity: str = "cosine",
              discrepancy="jsd", n_resamples: int = 1000, rng=None, true_effect: float | None = None,
              perturbation_id: str = "") -> PerturbationResult:
    """Run :func:`dbpa_test` on two drawn arms."""
    if similarity in TEXT_SIMILARITIES:
        result = dbpa_test(list(original.texts), list(perturbed.texts), similarity=similarity,
                           discrepancy=discrepancy, n_resamples=n_resamples, rng=rng)
    else:
        result = dbpa_test(original.embeddings, perturbed.embeddings, similarity=similarity,
                           discrepancy=discrepancy, n_resamples=n_resamples, rng=rng)
    return PerturbationResult(label, kind, original, perturbed, result, true_effect, perturbation_id)


def compare_family(original: Arm, perturbed_arms: Sequence[Arm], perturbations, *, similarity: str = "cosine",
                   discrepancy="jsd", n_resamples: int = 1000, correction: str = "bonferroni", alpha: float = 0.05,
                   seed: int = 0, true_effects: Sequence[float | None] | None = None,
                   compare: Callable[..., PerturbationResult] | None = None) -> FamilyResult:
    """Test each perturbed arm against the shared original, then correct family-wise.

    Parameters
    ----------
    original : Arm
        The original arm, shared by every test.
    perturbed_arms : sequence of Arm
        One arm per perturbation, in the order of ``perturbations``.
    perturbations : sequence of scenarios.Perturbation
        Their ``label``, ``kind`` and ``id`` label the results.
    similarity, discrepancy, n_resamples
        As in :func:`dbpa_core.dbpa_test`.
    correction, alpha
        As in :func:`dbpa_core.adjust_pvalues` (paper §4.1: Bonferroni by default).
    seed : int
        Every test draws its splits from a fresh ``default_rng(seed)``, so a
        test's p-value depends only on its own arms and settings: the app can
        memoise tests one by one, and the app and the command line report
        the same p-values for the same samples.
    true_effects : sequence of float or None, optional
        The simulated model's known effect of each perturbation.
    compare : callable, optional
        A wrapper with the signature of :func:`compare_arms` (the app's
        memoising one); default :func:`compare_arms`.

    Returns
    -------
    FamilyResult
    """
    if len(perturbed_arms) != len(perturbations):
        raise ValueError(f"`perturbed_arms` has {len(perturbed_arms)} arms for {len(perturbations)} perturbations.")
    true_effects = [None] * len(perturbations) if true_effects is None else list(true_effects)
    compare = compare or compare_arms
    results = tuple(
        compare(original, perturbed, label=perturbation.label, kind=perturbation.kind, similarity=similarity,
                discrepancy=discrepancy, n_resamples=n_resamples, rng=np.random.default_rng(seed),
                true_effect=effect, perturbation_id=perturbation.id)
        for perturbation, perturbed, effect in zip(perturbations, perturbed_arms, true_effects)
    )
    settings = MappingProxyType({"k": len(original.texts), "n_resamples": n_resamples, "similarity": similarity,
                                 "discrepancy": discrepancy, "correction": correction, "alpha": alpha, "seed": seed})
    return FamilyResult(results, adjust_pvalues([r.test.pvalue for r in results], method=correction, alpha=alpha),
                        settings)


def run_scenario_family(scenario, perturbation_ids: Sequence[str] | None, *, sampler, embedder, k: int,
                        perturbed_sampler=None, n_resamples: int = 1000, similarity: str = "cosine",
                        discrepancy="jsd", correction: str = "bonferroni", alpha: float = 0.05, seed: int = 0,
                        temperature=None, max_tokens=None, perturbed_temperature=None, perturbed_max_tokens=None,
                        store=None, progress: StageProgress | None = None) -> FamilyResult:
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
    shared = {"store": store, "progress": progress, "embedder": embedder}
    original = draw_arm(sampler, scenario.prompt, k, label="original", system=scenario.system, seed=seed,
                        temperature=temperature, max_tokens=max_tokens, **shared)
    if perturbed_sampler is None:
        perturbed_temperature, perturbed_max_tokens = temperature, max_tokens
    # The scenario's ground truth describes the simulated model only; for any
    # other model (or a system perturbation) the true effect is unknown.
    truth_known = getattr(sampler, "name", "") == "simulated" and perturbed_sampler is None
    perturbed_arms = []
    for perturbation in chosen:
        prompt, system = scenario.apply(perturbation)
        perturbed_arms.append(draw_arm(perturbed_sampler or sampler, prompt, k, label=perturbation.label,
                                       system=system, seed=seed + 1, temperature=perturbed_temperature,
                                       max_tokens=perturbed_max_tokens, **shared))
    return compare_family(original, perturbed_arms, chosen, similarity=similarity, discrepancy=discrepancy,
                          n_resamples=n_resamples, correction=correction, alpha=alpha, seed=seed,
                          true_effects=[scenario.true_effect(p) if truth_known else None for p in chosen])


def build_sampler(config: dict):
    """A sampler from a SPEC's ``sampler`` mapping (generation settings left out)."""
    from ..samplers import get_sampler

    settings = {k: v for k, v in config.items() if k not in ("backend", "temperature", "max_tokens")}
    return get_sampler(config["backend"], **settings)


def build_embedder(config: dict):
    from ..embedders import get_embedder

    return get_embedder(config.get("name", "minilm"), **{k: v for k, v in config.items() if k != "name"})


def run_audit(spec, *, store=None, progress: StageProgress | None = None) -> FamilyResult:
    """Run a validated :class:`dbpa_core.audit.spec.AuditSpec` (the command line's ``audit``)."""
    sampler = build_sampler(spec.sampler)
    perturbed = build_sampler(spec.perturbed_sampler) if spec.perturbed_sampler else None
    return run_scenario_family(
        spec.scenario, list(spec.perturbation_ids), sampler=sampler, perturbed_sampler=perturbed,
        embedder=build_embedder(spec.embedder), k=spec.k, n_resamples=spec.n_resamples,
        similarity=spec.similarity, discrepancy=spec.discrepancy, correction=spec.correction, alpha=spec.alpha,
        seed=spec.seed, temperature=spec.sampler.get("temperature"), max_tokens=spec.sampler.get("max_tokens"),
        perturbed_temperature=(spec.perturbed_sampler or {}).get("temperature"),
        perturbed_max_tokens=(spec.perturbed_sampler or {}).get("max_tokens"), store=store, progress=progress)


def spec_settings(spec) -> dict:
    """The settings block of a report (never a secret: SPECs cannot hold keys)."""
    return {"sampler": spec.sampler, "perturbed_sampler": spec.perturbed_sampler, "embedder": spec.embedder,
            "scenario": spec.scenario.id, "perturbations": list(spec.perturbation_ids), "k": spec.k,
            "n_resamples": spec.n_resamples, "similarity": spec.similarity, "discrepancy": spec.discrepancy,
            "correction": spec.correction, "alpha": spec.alpha, "seed": spec.seed}
