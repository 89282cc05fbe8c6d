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
from ..stats.sequential import SequentialResult, sequential_dbpa_test
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
    test: DBPAResult | SequentialResult
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
    return Arm(label, prompt, system or "", tuple(texts), embeddings, getattr(sampler, "model", ""),
               _sample_ids(sampler, prompt, system, temperature, max_tokens, seed, len(texts)))


def _sample_ids(sampler, prompt, system, temperature, max_tokens, seed, n) -> tuple[str, ...]:
    """"<request key>:<index>" names each sample in the store (and in reports)."""
    key = request_key(sampler.describe_request(prompt, system=system or None, temperature=temperature,
                                               max_tokens=max_tokens, seed=seed))[:16]
    return tuple(f"{key}:{i}" for i in range(n))


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


class ArmSource:
    """The outputs of one request, drawn in index order as a sequential test asks for more.

    Sample i is the sampler's i-th draw of the request (its own seed), so
    asking for 10, then 20, then 30 draws indices 0..29 once each: with a
    ``store`` they are written as they arrive and a resumed run reuses them;
    without one they are kept here for the run.  Several tests can read one
    source (the shared original arm of a family), each from its own
    :meth:`reader`, and every drawn sample is embedded once.

    Parameters
    ----------
    sampler, prompt, label, system, temperature, max_tokens, seed, embedder, store, progress
        As in :func:`draw_arm`.
    """

    def __init__(self, sampler, prompt: str, *, label: str, system: str = "", temperature=None, max_tokens=None,
                 seed: int = 0, embedder, store=None, progress: StageProgress | None = None):
        self.sampler, self.prompt, self.label, self.system = sampler, prompt, label, system or ""
        self.settings = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed}
        self.embedder, self.store, self.progress = embedder, store if store is not None else _KeptSamples(), progress
        self.texts: list[str] = []
        self.embeddings = np.empty((0, 0), dtype=np.float32)

    def _extend(self, n: int) -> None:
        if n <= len(self.texts):
            return

        def sampling(done, total):
            return self.progress(f"sampling {self.label}", done, total) if self.progress else None

        texts = self.sampler.sample(self.prompt, n, system=self.system or None, store=self.store,
                                    progress=sampling, **self.settings)
        embedder_store = self.store if not isinstance(self.store, _KeptSamples) else None
        new = self.embedder.embed(texts[len(self.texts):], store=embedder_store)
        self.embeddings = new if not self.texts else np.vstack([self.embeddings, new])
        self.texts = list(texts)

    def reader(self, *, texts: bool = False) -> Callable[[int], np.ndarray | list[str]]:
        """``draw(n)`` for :func:`~dbpa_core.sequential_dbpa_test`: the next n outputs of this reader."""
        cursor = 0

        def draw(n: int):
            nonlocal cursor
            self._extend(cursor + n)
            rows = slice(cursor, cursor + n)
            cursor += n
            return self.texts[rows] if texts else self.embeddings[rows]

        return draw

    def arm(self, n: int) -> Arm:
        """The first ``n`` outputs as an :class:`Arm`."""
        self._extend(n)
        return Arm(self.label, self.prompt, self.system, tuple(self.texts[:n]), self.embeddings[:n],
                   getattr(self.sampler, "model", ""),
                   _sample_ids(self.sampler, self.prompt, self.system, self.settings["temperature"],
                               self.settings["max_tokens"], self.settings["seed"], n))


class _KeptSamples:
    """The two sample-store methods :meth:`Sampler.sample` uses, in memory (when no store is given)."""

    def __init__(self):
        self.samples: dict[tuple[str, int], tuple[str, list | None]] = {}

    def get_samples(self, description, indices):
        key = request_key(description)
        return {i: self.samples[key, i] for i in indices if (key, i) in self.samples}

    def put_sample(self, description, index, text, token_logprobs=None):
        """Keep a sample and return what is kept (the first write wins, as in the SQLite store)."""
        return self.samples.setdefault((request_key(description), int(index)), (text, token_logprobs))


def compare_sequential(original: ArmSource, perturbed: ArmSource, *, label: str, kind: str = "",
                       similarity: str = "cosine", discrepancy="jsd", n_resamples: int = 1000, alpha: float = 0.05,
                       k_max: int = 200, batch_size: int = 10, spending: str = "pocock", futility=None, rng=None,
                       true_effect: float | None = None, perturbation_id: str = "") -> PerturbationResult:
    """Run :func:`~dbpa_core.sequential_dbpa_test` on two arm sources; the arms hold what it drew."""
    texts = similarity in ("bleu", "rouge_l")
    result = sequential_dbpa_test(original.reader(texts=texts), perturbed.reader(texts=texts), alpha=alpha,
                                  k_max=k_max, batch_size=batch_size, discrepancy=discrepancy,
                                  similarity=similarity, n_resamples=n_resamples, spending=spending,
                                  futility=futility, rng=rng)
    return PerturbationResult(label, kind, original.arm(result.n_per_arm), perturbed.arm(result.n_per_arm),
                              result, true_effect, perturbation_id)


def compare_family_sequential(original: ArmSource, perturbed_sources: Sequence[ArmSource], perturbations, *,
                              k_max: int = 200, batch_size: int = 10, spending: str = "pocock", futility=None,
                              similarity: str = "cosine", discrepancy="jsd", n_resamples: int = 1000,
                              correction: str = "bonferroni", alpha: float = 0.05, seed: int = 0,
                              true_effects: Sequence[float | None] | None = None) -> FamilyResult:
    """Sequential tests of each perturbation against the shared original, corrected family-wise.

    Each perturbation stops on its own, its test run at level α/m.  With
    Bonferroni (the default) the union bound keeps the family-wise error rate
    ≤ α whatever the stopping times, and the adjusted p-value min(1, m·p) is
    ≤ α exactly when that test stopped with a rejection.  The stage-wise
    p-values are valid at every level, so Holm or BH may be applied too: they
    may then declare a change in a test that ran to k_max without crossing
    its α/m boundary.

    Parameters
    ----------
    original, perturbed_sources : ArmSource
        The original is read by every test from its own cursor.
    perturbations : sequence of scenarios.Perturbation
    k_max, batch_size, spending, futility, similarity, discrepancy, n_resamples
        As in :func:`~dbpa_core.sequential_dbpa_test`.
    correction, alpha
        As in :func:`dbpa_core.adjust_pvalues`; every test runs at α/m.
    seed : int
        Every test draws its re-splits from a fresh ``default_rng(seed)``.
    true_effects : sequence of float or None, optional

    Returns
    -------
    FamilyResult
    """
    if len(perturbed_sources) != len(perturbations):
        raise ValueError(f"`perturbed_sources` has {len(perturbed_sources)} sources for {len(perturbations)} "
                         "perturbations.")
    true_effects = [None] * len(perturbations) if true_effects is None else list(true_effects)
    plan = {"k_max": k_max, "batch_size": batch_size, "spending": spending, "futility": futility}
    results = tuple(
        compare_sequential(original, source, label=perturbation.label, kind=perturbation.kind,
                           similarity=similarity, discrepancy=discrepancy, n_resamples=n_resamples,
                           alpha=alpha / len(perturbations), rng=np.random.default_rng(seed), true_effect=effect,
                           perturbation_id=perturbation.id, **plan)
        for perturbation, source, effect in zip(perturbations, perturbed_sources, true_effects)
    )
    settings = MappingProxyType({"k": k_max, "n_resamples": n_resamples, "similarity": similarity,
                                 "discrepancy": discrepancy, "correction": correction, "alpha": alpha, "seed": seed,
                                 "sequential": plan})
    return FamilyResult(results, adjust_pvalues([r.test.pvalue for r in results], method=correction, alpha=alpha),
                        settings)


@dataclass(frozen=True)
class ArmRequest:
    """What every sample of one arm is drawn with (a request without its sample index)."""

    label: str
    prompt: str
    system: str
    seed: int
    temperature: float | None
    max_tokens: int | None
    perturbed: bool  # False for the shared original arm


def scenario_arm_requests(scenario, perturbations, *, seed: int, temperature=None, max_tokens=None,
                          perturbed_temperature=None, perturbed_max_tokens=None,
                          system_perturbation: bool = False) -> list[ArmRequest]:
    """The original arm, then one arm per perturbation, as :func:`run_scenario_family` draws them.

    The original arm has seed ``seed``; each perturbed arm has seed
    ``seed + 1``, so that the arms are independent draws even when a
    perturbation leaves the prompt's meaning unchanged.  Without a system
    perturbation the perturbed arms share the original's generation settings.
    The batch-file export (:mod:`dbpa_core.audit.batch`) lists the same
    requests, so that its results land where a live run looks for them.
    """
    if not system_perturbation:
        perturbed_temperature, perturbed_max_tokens = temperature, max_tokens
    arms = [ArmRequest("original", scenario.prompt, scenario.system or "", seed, temperature, max_tokens, False)]
    for perturbation in perturbations:
        prompt, system = scenario.apply(perturbation)
        arms.append(ArmRequest(perturbation.label, prompt, system or "", seed + 1, perturbed_temperature,
                               perturbed_max_tokens, True))
    return arms


def run_scenario_family(scenario, perturbation_ids: Sequence[str] | None, *, sampler, embedder, k: int,
                        perturbed_sampler=None, n_resamples: int = 1000, similarity: str = "cosine",
                        discrepancy="jsd", correction: str = "bonferroni", alpha: float = 0.05, seed: int = 0,
                        temperature=None, max_tokens=None, perturbed_temperature=None, perturbed_max_tokens=None,
                        store=None, progress: StageProgress | None = None, sequential: dict | None = None
                        ) -> FamilyResult:
    """Test every chosen perturbation of a scenario against its original arm.

    The original arm is drawn once and shared (seeds and settings of each arm:
    :func:`scenario_arm_requests`).  ``perturbed_sampler`` (default
    ``sampler``) expresses a system perturbation: another model or backend
    for the perturbed arms.  ``sequential`` (``k_max``, ``batch_size`` and
    optionally ``spending``, ``futility``) replaces the fixed k by sequential
    tests that each stop on their own (:func:`compare_family_sequential`).
    """
    chosen = scenario.perturbations if perturbation_ids is None else [scenario.perturbation(p) for p in perturbation_ids]
    if not chosen:
        raise ValueError("`perturbation_ids` must name at least one perturbation of the scenario.")
    requests = scenario_arm_requests(scenario, chosen, seed=seed, temperature=temperature, max_tokens=max_tokens,
                                     perturbed_temperature=perturbed_temperature,
                                     perturbed_max_tokens=perturbed_max_tokens,
                                     system_perturbation=perturbed_sampler is not None)
    # The scenario's ground truth describes the simulated model only; for any
    # other model (or a system perturbation) the true effect is unknown.
    truth_known = getattr(sampler, "name", "") == "simulated" and perturbed_sampler is None
    true_effects = [scenario.true_effect(p) if truth_known else None for p in chosen]
    if sequential is not None:
        sources = [ArmSource((perturbed_sampler or sampler) if arm.perturbed else sampler, arm.prompt, label=arm.label,
                             system=arm.system, seed=arm.seed, temperature=arm.temperature,
                             max_tokens=arm.max_tokens, embedder=embedder, store=store, progress=progress)
                   for arm in requests]
        return compare_family_sequential(sources[0], sources[1:], chosen, similarity=similarity,
                                         discrepancy=discrepancy, n_resamples=n_resamples, correction=correction,
                                         alpha=alpha, seed=seed, true_effects=true_effects, **sequential)
    arms = [draw_arm((perturbed_sampler or sampler) if arm.perturbed else sampler, arm.prompt, k, label=arm.label,
                     system=arm.system, seed=arm.seed, temperature=arm.temperature, max_tokens=arm.max_tokens,
                     embedder=embedder, store=store, progress=progress)
            for arm in requests]
    return compare_family(arms[0], arms[1:], chosen, similarity=similarity, discrepancy=discrepancy,
                          n_resamples=n_resamples, correction=correction, alpha=alpha, seed=seed,
                          true_effects=true_effects)


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
        seed=spec.seed, store=store, progress=progress, sequential=spec.sequential, **spec_generation_settings(spec))


def spec_generation_settings(spec) -> dict:
    """A SPEC's generation settings as :func:`run_scenario_family` and :func:`scenario_arm_requests` take them."""
    perturbed = spec.perturbed_sampler or {}
    return {"temperature": spec.sampler.get("temperature"), "max_tokens": spec.sampler.get("max_tokens"),
            "perturbed_temperature": perturbed.get("temperature"), "perturbed_max_tokens": perturbed.get("max_tokens")}


def spec_settings(spec) -> dict:
    """The settings block of a report (never a secret: SPECs cannot hold keys)."""
    return {"sampler": spec.sampler, "perturbed_sampler": spec.perturbed_sampler, "embedder": spec.embedder,
            "scenario": spec.scenario.id, "perturbations": list(spec.perturbation_ids), "k": spec.k,
            "n_resamples": spec.n_resamples, "similarity": spec.similarity, "discrepancy": spec.discrepancy,
            "correction": spec.correction, "alpha": spec.alpha, "seed": spec.seed, "sequential": spec.sequential}
