"""THE orchestration path: an audit request → samples → embeddings → tests → correction.

The command line (``python -m dbpa_core audit``) and every page of the app
call :func:`run` with an :class:`~dbpa_core.audit.request.AuditRequest`:
arms, seeds and true effects come from the request, samples and embeddings
go through the sample store, and one progress hook (:class:`~.arms.RunUpdate`)
reports each arm as it is drawn.  Data flows one way (samplers → embedders
→ statistics); this module only wires the steps together.
"""

from __future__ import annotations

import dataclasses

import warnings
from collections.abc import Callable, Sequence

import numpy as np

from .._validation import check_n_resamples, check_test_size
from ..stats.corrections import adjust_pvalues
from ..stats.permutation import ResolutionWarning, check_measures, dbpa_test
from ..stats.sequential import sequential_dbpa_test
from ..stats.similarity import TEXT_SIMILARITIES
from .configs import EmbedderConfig, SamplerConfig
from .arms import ArmSource, Progress
from .request import AuditRequest
from .results import Arm, FamilyResult, PerturbationResult, ReadOnly


def build_sampler(config: SamplerConfig, *, api_key: str | None = None):
    """The sampler a configuration describes (a key, when needed, is passed apart from it)."""
    from ..samplers import get_sampler

    settings = config.constructor_settings()
    if api_key and config.backend == "openai":
        settings["api_key"] = api_key
    return get_sampler(config.backend, **settings)


def build_embedder(config: EmbedderConfig, *, api_key: str | None = None):
    """The embedder a configuration describes (a key, when needed, is passed apart from it)."""
    from ..embedders import get_embedder

    settings = config.constructor_settings()
    if api_key and config.name == "openai":
        settings["api_key"] = api_key
    return get_embedder(config.name, **settings)


def uploaded_arms(table, original: str, perturbed: str, *, embedder=None, store=None, similarity: str | None = None,
                  n_resamples: int | None = None) -> tuple[Arm, Arm]:
    """The two arms of a user's samples file (:func:`dbpa_core.data.uploads.read_samples`).

    Embeddings from the file are used as given (both arms must have the same
    dimension); otherwise the texts are embedded with ``embedder``.  Given the
    test's ``similarity`` and ``n_resamples``, the test is checked before
    anything is embedded: a text similarity needs the texts, and the arms'
    sizes and B must fit :func:`dbpa_core._validation.check_test_size`.
    """
    for name, arm in (("original", original), ("perturbed", perturbed)):
        if arm not in table.texts:
            raise ValueError(f"`{name}` must be one of the file's arms ({', '.join(table.texts)}); got {arm!r}.")
    if similarity is not None and check_measures(similarity, "jsd")[0] in TEXT_SIMILARITIES:
        table.require_texts(f"the text similarity {similarity!r}")
    if n_resamples is not None:
        check_test_size(len(table.texts[original]), len(table.texts[perturbed]), check_n_resamples(n_resamples),
                        names=(original, perturbed))
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
    """Run :func:`dbpa_test` on two drawn arms (texts for a text similarity, else embeddings)."""
    similarity, _ = check_measures(similarity, discrepancy)
    texts = similarity in TEXT_SIMILARITIES
    result = dbpa_test(list(original.texts) if texts else original.embeddings,
                       list(perturbed.texts) if texts else perturbed.embeddings, similarity=similarity,
                       discrepancy=discrepancy, n_resamples=n_resamples, rng=rng)
    return PerturbationResult(label, kind, original, perturbed, result, true_effect, perturbation_id)


def _test_settings(k, n_resamples, similarity, discrepancy, correction, alpha, seed, **more) -> ReadOnly:
    return ReadOnly({"k": k, "n_resamples": n_resamples, "similarity": similarity, "discrepancy": discrepancy,
                     "correction": correction, "alpha": alpha, "seed": seed}, **more)


def compare_family(original: Arm, perturbed_arms: Sequence[Arm], perturbations, *, similarity: str = "cosine",
                   discrepancy="jsd", n_resamples: int = 1000, correction: str = "bonferroni", alpha: float = 0.05,
                   seed: int = 0, true_effects: Sequence[float | None] | None = None) -> FamilyResult:
    """Test each perturbed arm against the shared original, then correct family-wise.

    Parameters
    ----------
    original : Arm
        The original arm, shared by every test.
    perturbed_arms : sequence of Arm
        One arm per perturbation, in the order of ``perturbations``.
    perturbations : sequence
        Their ``label``, ``kind`` and ``id`` label the results.
    similarity, discrepancy, n_resamples
        As in :func:`dbpa_core.dbpa_test`.
    correction, alpha
        As in :func:`dbpa_core.adjust_pvalues` (paper §4.1: Bonferroni by default).
    seed : int
        Every test draws its splits from a fresh ``default_rng(seed)``, so a
        test's p-value depends only on its own arms and settings.
    true_effects : sequence of float or None, optional
        The simulated model's known effect of each perturbation.

    Returns
    -------
    FamilyResult
    """
    if len(perturbed_arms) != len(perturbations):
        raise ValueError(f"`perturbed_arms` has {len(perturbed_arms)} arms for {len(perturbations)} perturbations.")
    true_effects = [None] * len(perturbations) if true_effects is None else list(true_effects)
    results = tuple(
        compare_arms(original, perturbed, label=perturbation.label, kind=perturbation.kind, similarity=similarity,
                     discrepancy=discrepancy, n_resamples=n_resamples, rng=np.random.default_rng(seed),
                     true_effect=effect, perturbation_id=perturbation.id)
        for perturbation, perturbed, effect in zip(perturbations, perturbed_arms, true_effects)
    )
    return FamilyResult(results, adjust_pvalues([r.test.pvalue for r in results], method=correction, alpha=alpha),
                        _test_settings(len(original.texts), n_resamples, similarity, discrepancy, correction, alpha,
                                       seed))


def compare_sequential(original: ArmSource, perturbed: ArmSource, *, label: str, kind: str = "",
                       similarity: str = "cosine", discrepancy="jsd", n_resamples: int = 1000, alpha: float = 0.05,
                       k_max: int = 200, batch_size: int = 10, spending: str = "pocock", futility=None, rng=None,
                       true_effect: float | None = None, perturbation_id: str = "") -> PerturbationResult:
    """Run :func:`~dbpa_core.sequential_dbpa_test` on two arm sources; the arms hold what it drew."""
    similarity, _ = check_measures(similarity, discrepancy)
    texts = similarity in TEXT_SIMILARITIES
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
    its α/m boundary.  Every test draws its re-splits from a fresh
    ``default_rng(seed)``; the original source is read by every test from its
    own cursor.
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
    return FamilyResult(results, adjust_pvalues([r.test.pvalue for r in results], method=correction, alpha=alpha),
                        _test_settings(k_max, n_resamples, similarity, discrepancy, correction, alpha, seed,
                                       sequential=plan))


def request_warnings(request: AuditRequest) -> list[str]:
    """What makes a request unable to find a change, said before anything is drawn: B too small for α
    (the p-value floor 1/(B + 1), at α/m under Bonferroni or Holm), or, for a sequential audit, an α/m
    that no look's budget can spend (:func:`~dbpa_core.stats.spending.budget_warning`)."""
    from ..stats.permutation import resolution_warning
    from ..stats.spending import budget_warning

    m = len(request.perturbations)
    if request.sequential is not None:  # each sequential test runs at α/m (Bonferroni)
        plan = request.sequential
        message = budget_warning(request.alpha / m, k_max=plan.k_max, batch_size=plan.batch_size,
                                 n_resamples=request.n_resamples, spending=plan.spending)
    else:
        message = resolution_warning(request.alpha, n_original=request.k, n_perturbed=request.k,
                                     n_resamples=request.n_resamples, m=m, correction=request.correction)
    return [message] if message else []


def run(request: AuditRequest, *, store=None, progress: Progress | None = None,
        sampler_for: Callable[[SamplerConfig], object] = build_sampler, embedder=None,
        offline: bool = False) -> FamilyResult:
    """Run an audit request: draw and embed every arm, test each perturbation, correct family-wise.

    Parameters
    ----------
    request : AuditRequest
        What to run (arms and seeds: :meth:`AuditRequest.arm_requests`).
    store : SampleStore, optional
        Samples and embeddings are reused from it and written to it as they
        arrive, so an interrupted run resumes.
    progress : callable(RunUpdate), optional
        Told of every sample and embedding, and of each arm as drawn; returning
        False cancels sampling (:class:`~dbpa_core.samplers.SamplingCancelled`).
    sampler_for : callable(SamplerConfig) -> Sampler
        Builds (or looks up) the sampler of a configuration; default
        :func:`build_sampler` (keys from the environment).
    embedder : Embedder, optional
        Default ``build_embedder(request.embedder)``.
    offline : bool
        Draw nothing that costs a model call: raise :class:`NotStored` when a
        sample of a live backend or an embedding is not in ``store``.

    Returns
    -------
    FamilyResult
        The original arm is drawn once and shared; each test draws its splits
        from ``default_rng(request.seed)``.
    """
    for message in request_warnings(request):
        warnings.warn(message, ResolutionWarning, stacklevel=2)
    embedder = embedder if embedder is not None else build_embedder(request.embedder)
    samplers = {}

    def sampler(config):
        if config.instance not in samplers:
            samplers[config.instance] = sampler_for(config.instance)
        return samplers[config.instance]

    sources = [ArmSource(sampler(arm.sampler), arm.prompt, label=arm.label, system=arm.system, seed=arm.seed,
                         temperature=arm.temperature, max_tokens=arm.max_tokens, embedder=embedder, store=store,
                         progress=progress, offline=offline)
               for arm in request.arm_requests()]
    common = dict(similarity=request.similarity, discrepancy=request.discrepancy, n_resamples=request.n_resamples,
                  correction=request.correction, alpha=request.alpha, seed=request.seed,
                  true_effects=request.true_effects)
    if request.sequential is not None:
        family = compare_family_sequential(sources[0], sources[1:], request.perturbations,
                                           **request.sequential.as_mapping(), **common)
    else:
        arms = [source.arm(request.k) for source in sources]
        family = compare_family(arms[0], arms[1:], request.perturbations, **common)
    return family if request.explain_fdr is None else explained(family, request)


def explained(family: FamilyResult, request: AuditRequest) -> FamilyResult:
    """``family`` with its "What changed" accounts (:attr:`FamilyResult.explanations`): one per perturbation,
    at the request's FDR, B and seed — what a SPEC's ``explain: true`` asks for, the same from the command
    line and the app."""
    from ..stats.explain import explain_change

    explanations = tuple(explain_change(r.original.texts, r.perturbed.texts, r.original.embeddings,
                                        r.perturbed.embeddings, fdr=request.explain_fdr,
                                        n_resamples=request.n_resamples, rng=request.seed) for r in family.results)
    return dataclasses.replace(family, explanations=explanations)


def run_audit(spec, *, store=None, progress: Progress | None = None) -> FamilyResult:
    """Run a validated :class:`dbpa_core.audit.spec.AuditSpec` (the command line's ``audit``)."""
    return run(spec.request, store=store, progress=progress)
