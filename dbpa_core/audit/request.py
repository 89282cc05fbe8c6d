"""What an audit asks for: one frozen, hashable description shared by the command line and the app.

An :class:`AuditRequest` names everything a result depends on — the
backend and model of each arm (never a credential), the embedder, the
original prompt and each perturbed prompt, k or the sequential plan, B,
the similarity and ω, the correction and α, the seed — and nothing else.
The SPEC of ``python -m dbpa_core audit`` is parsed into one
(:attr:`dbpa_core.audit.spec.AuditSpec.request`), every page of the app
builds one from its widgets, and :func:`dbpa_core.audit.runner.run` turns it
into a result, so the same inputs give the same samples, seeds and p-values
on both sides.  :attr:`AuditRequest.key` is a stable digest of the whole
description: the app's shared caches are keyed by it.

Seeds are derived here and nowhere else (:func:`arm_seed`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .._validation import (MAX_SAMPLES, SAMPLES_WHY, check_audit_size, check_choice, check_n_resamples, check_prompt_text,
                           check_positive_int, check_probability)
from .configs import EmbedderConfig, SamplerConfig
from .identity import REQUEST_VERSION, Identified

# The statistics' name lists are imported where a request is checked, not here: the app's sidebar builds
# sampler configs before the compiled statistics are loaded.

#: Seeds of successive replicates (the TPR/FPR page's replicates, the home page's "Resample") are this far
#: apart, so that a replicate's arms never share a seed with another replicate's perturbed arms (seed + 1).
REPLICATE_STRIDE = 1000


def arm_seed(seed: int, *, perturbed: bool, replicate: int = 0) -> int:
    """The sampler seed of an arm: the one rule for the command line, the batch files and the app.

    The original arm has ``seed`` and every perturbed arm ``seed + 1``, so
    the arms are independent draws even when a perturbation leaves the
    prompt unchanged (a system perturbation, another model on the same
    prompt); replicate r adds r·:data:`REPLICATE_STRIDE`.
    """
    return int(seed) + REPLICATE_STRIDE * int(replicate) + (1 if perturbed else 0)


@dataclass(frozen=True)
class Prompt:
    """A prompt exactly as sent: the user message and the system prompt ("" for none)."""

    prompt: str
    system: str = ""

    def __post_init__(self):
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise ValueError("`prompt` must be a non-empty string: type the prompt to send.")
        object.__setattr__(self, "system", str(self.system or ""))
        check_prompt_text(self.prompt, "prompt")
        check_prompt_text(self.system, "system")


@dataclass(frozen=True)
class PerturbedPrompt:
    """One perturbation: its id, label, kind and the perturbed prompt exactly as sent.

    ``true_effect`` is the simulated model's known effect (paper §4: controls
    0, targets > 0); None for every other model, whose truth is unknown.
    """

    id: str
    label: str
    prompt: Prompt
    kind: str = ""  # "control", "target" or "" (unlabelled)
    true_effect: float | None = None

    def __post_init__(self):
        if self.kind:
            object.__setattr__(self, "kind", check_choice(self.kind, "kind", ("control", "target")))


@dataclass(frozen=True)
class SequentialPlan:
    """How a sequential audit draws (:func:`dbpa_core.sequential_dbpa_test`): batches up to ``k_max``."""

    k_max: int = 200
    batch_size: int = 10
    spending: str = "pocock"
    futility: float | None = None

    def __post_init__(self):
        from ..stats.spending import SPENDING

        batch = check_positive_int(self.batch_size, "sequential.batch_size", minimum=2, maximum=MAX_SAMPLES,
                                   why=SAMPLES_WHY)
        object.__setattr__(self, "batch_size", batch)
        object.__setattr__(self, "k_max", check_positive_int(self.k_max, "sequential.k_max", minimum=batch,
                                                             maximum=MAX_SAMPLES, why=SAMPLES_WHY))
        object.__setattr__(self, "spending", check_choice(self.spending, "sequential.spending", SPENDING))
        if self.futility is not None:
            object.__setattr__(self, "futility", check_probability(self.futility, "sequential.futility"))

    def as_mapping(self) -> dict:
        """The SPEC's ``sequential`` block (and the keyword arguments of the sequential test)."""
        return {"k_max": self.k_max, "batch_size": self.batch_size, "spending": self.spending,
                **({"futility": self.futility} if self.futility is not None else {})}


@dataclass(frozen=True)
class ArmRequest:
    """What every sample of one arm is drawn with (a request without its sample index)."""

    label: str
    prompt: str
    system: str
    seed: int
    sampler: SamplerConfig
    perturbed: bool  # False for the shared original arm

    @property
    def temperature(self) -> float | None:
        return self.sampler.temperature

    @property
    def max_tokens(self) -> int | None:
        return self.sampler.max_tokens


@dataclass(frozen=True)
class AuditRequest(Identified):
    """Everything an audit's result depends on; frozen, hashable, free of credentials.

    Attributes
    ----------
    original : Prompt
        The original prompt x, shared by every test.
    perturbations : tuple of PerturbedPrompt
        One test per perturbation, in order.
    sampler : SamplerConfig
        Draws the original arm (and the perturbed arms unless ``perturbed_sampler`` is set).
    perturbed_sampler : SamplerConfig or None
        A system perturbation: the perturbed arms come from another model or setting.
    embedder : EmbedderConfig
    k : int
        Outputs per arm (with ``sequential``: the most drawn per arm, its ``k_max``).
    sequential : SequentialPlan or None
        Draw in batches and stop each test as soon as its answer is clear.
    n_resamples, similarity, discrepancy
        B, s and ω of every test (names normalised: ``"BLEU"`` is ``"bleu"``).
    correction, alpha
        The family-wise correction and its level (paper §3.2).
    seed : int
        The user seed: arms' seeds come from :func:`arm_seed`, every test's
        re-splits from ``numpy.random.default_rng(seed)``.
    replicate : int
        An independent repetition of the same audit (new samples, same tests).
    scenario : str
        The scenario the prompts come from ("" for typed prompts): a name, not an input.
    explain_fdr : float or None
        "What changed" for every perturbation at this false-discovery rate (a SPEC's ``explain``), computed
        by :func:`~dbpa_core.audit.runner.run` into :attr:`FamilyResult.explanations
        <dbpa_core.audit.results.FamilyResult>`; None: none.
    """

    original: Prompt
    perturbations: tuple[PerturbedPrompt, ...]
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    perturbed_sampler: SamplerConfig | None = None
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    k: int = 20
    sequential: SequentialPlan | None = None
    n_resamples: int = 1000
    similarity: str = "cosine"
    discrepancy: str = "jsd"
    correction: str = "bonferroni"
    alpha: float = 0.05
    seed: int = 0
    replicate: int = 0
    scenario: str = ""
    explain_fdr: float | None = None

    def __post_init__(self):
        from ..stats.corrections import METHODS
        from ..stats.discrepancy import DISCREPANCY_NAMES
        from ..stats.similarity import SIMILARITIES

        normalise = {
            "perturbations": tuple(self.perturbations),
            "similarity": check_choice(self.similarity, "similarity", SIMILARITIES),
            "discrepancy": check_choice(self.discrepancy, "discrepancy", DISCREPANCY_NAMES),
            "correction": check_choice(self.correction, "correction", tuple(METHODS)),
            "alpha": check_probability(self.alpha, "alpha"),
            "n_resamples": check_n_resamples(self.n_resamples),
            "seed": check_positive_int(self.seed, "seed", minimum=0),
            "replicate": check_positive_int(self.replicate, "replicate", minimum=0),
            "explain_fdr": None if self.explain_fdr is None else check_probability(self.explain_fdr, "explain.fdr"),
            "k": (self.sequential.k_max if self.sequential is not None
                  else check_positive_int(self.k, "k", minimum=2, maximum=MAX_SAMPLES, why=SAMPLES_WHY)),
        }
        if not normalise["perturbations"]:
            raise ValueError("`perturbations` must hold at least one perturbed prompt.")
        # Every size is checked here, before anything is drawn (the app and the command line alike).
        check_audit_size(len(normalise["perturbations"]), normalise["k"], normalise["n_resamples"],
                         batch_size=self.sequential.batch_size if self.sequential is not None else None)
        ids = [p.id for p in normalise["perturbations"]]
        if len(set(ids)) != len(ids):
            raise ValueError(f"`perturbations` repeat an id ({', '.join(ids)}); ids must be unique.")
        for name, value in normalise.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_scenario(cls, scenario, perturbation_ids=None, *, sampler: SamplerConfig,
                      perturbed_sampler: SamplerConfig | None = None, **settings) -> AuditRequest:
        """The request of a scenario's perturbations (all of them when ``perturbation_ids`` is None).

        The true effects are the scenario's for the simulated model without a
        system perturbation, and unknown (None) for any other model.
        """
        chosen = (scenario.perturbations if perturbation_ids is None
                  else [scenario.perturbation(p) for p in perturbation_ids])
        if not chosen:
            raise ValueError("`perturbation_ids` must name at least one perturbation of the scenario.")
        # The scenario's ground truth describes the simulated model only.
        truth_known = sampler.backend == "simulated" and perturbed_sampler is None
        perturbations = tuple(
            PerturbedPrompt(p.id, p.label, Prompt(*scenario.apply(p)), p.kind,
                            scenario.true_effect(p) if truth_known else None)
            for p in chosen)
        return cls(original=Prompt(scenario.prompt, scenario.system or ""), perturbations=perturbations,
                   sampler=sampler, perturbed_sampler=perturbed_sampler, scenario=scenario.id, **settings)

    # ------------------------------------------------------------ identity
    def describe(self) -> dict:
        """The whole request as plain JSON-ready data (what :attr:`key` digests; nested dataclasses as
        mappings, as they always were: the key of a request is unchanged by :class:`~.identity.Identified`)."""
        described = {"request": type(self).__name__, "version": REQUEST_VERSION, **dataclasses.asdict(self)}
        if described["explain_fdr"] is None:  # a request without "What changed" keeps the key it always had
            del described["explain_fdr"]
        return described

    def tests_only(self) -> AuditRequest:
        """The request without what only re-reads a fixed-k result (the correction and α).

        A fixed-k family is re-corrected in microseconds
        (:meth:`~dbpa_core.audit.results.FamilyResult.recorrected`), so a cache
        of results keys on this; a sequential test's boundaries depend on α/m,
        so it keeps both.
        """
        if self.sequential is not None:
            return self
        return dataclasses.replace(self, correction="bonferroni", alpha=0.05)

    # ----------------------------------------------------------- the arms
    def sampler_of(self, perturbed: bool) -> SamplerConfig:
        return self.perturbed_sampler if perturbed and self.perturbed_sampler is not None else self.sampler

    def arm_requests(self) -> list[ArmRequest]:
        """The original arm, then one arm per perturbation: prompts, seeds and generation settings.

        The batch-file export lists the same requests, so that its results land
        where a run looks for them.
        """
        arms = [ArmRequest("original", self.original.prompt, self.original.system,
                           arm_seed(self.seed, perturbed=False, replicate=self.replicate), self.sampler, False)]
        for perturbation in self.perturbations:
            arms.append(ArmRequest(perturbation.label, perturbation.prompt.prompt, perturbation.prompt.system,
                                   arm_seed(self.seed, perturbed=True, replicate=self.replicate),
                                   self.sampler_of(True), True))
        return arms

    @property
    def true_effects(self) -> tuple[float | None, ...]:
        return tuple(p.true_effect for p in self.perturbations)

    def settings(self) -> dict:
        """The test settings a report records (JSON-ready; never a secret)."""
        return {"sampler": self.sampler.as_mapping(),
                "perturbed_sampler": self.perturbed_sampler.as_mapping() if self.perturbed_sampler else None,
                "embedder": self.embedder.as_mapping(), "k": self.k, "n_resamples": self.n_resamples,
                "similarity": self.similarity, "discrepancy": self.discrepancy, "correction": self.correction,
                "alpha": self.alpha, "seed": self.seed, "replicate": self.replicate,
                "sequential": self.sequential.as_mapping() if self.sequential else None,
                **({"explain": {"fdr": self.explain_fdr}} if self.explain_fdr is not None else {})}
