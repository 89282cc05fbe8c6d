"""The audit SPEC: what ``python -m dbpa_core audit SPEC.yaml`` runs.

Example::

    sampler: {backend: simulated, temperature: 1.0, max_tokens: 128}
    embedder: {name: minilm}
    scenario: cvd_nice                 # or `prompts:` (below)
    perturbations: [persona_doctor, persona_comedian]   # default: all of the scenario's
    k: 20
    n_resamples: 1000
    similarity: cosine
    discrepancy: jsd
    correction: bonferroni
    alpha: 0.05
    seed: 0

``prompts`` instead of ``scenario``::

    prompts:
      original: {prompt: "What causes the seasons?", system: ""}
      perturbations:
        - {id: eli5, label: Explain like I'm five, kind: target, prompt: "Explain like I'm five: ..."}

``perturbed_sampler`` (same keys as ``sampler``) expresses a system
perturbation: the perturbed arms come from another model or setting.
Unknown keys, and settings the chosen backend does not take, are rejected;
``name`` is a file name (it names the output folder), never a path; a
``base_url`` must not hold credentials.  Every value goes through the shared
validators of :mod:`dbpa_core._validation`, and every error names the dotted
key (``sampler.temperature``) and what is allowed.

``sequential`` replaces the fixed ``k`` by sequential tests that draw in
batches and stop as soon as a change is clear, each at α/m::

    sequential: {batch_size: 10, k_max: 200}   # optional: spending: pocock, futility: 0.9

``explain: true`` (or ``explain: {fdr: 0.1}``) adds to each perturbation of
the report what changed: the themes whose share differs between the arms at
that false discovery rate, and representative outputs
(:func:`dbpa_core.explain_change`, with the SPEC's ``n_resamples`` and ``seed``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .._validation import (MAX_PERTURBATIONS, MAX_SAMPLES, PERTURBATIONS_WHY, RESAMPLES_WHY, SAMPLES_WHY, InvalidValue,
                           check_audit_size, check_choice, check_positive_int,
                           check_probability, check_prompt_text, redact)
from ..data.assets import key_lines, read_yaml
from ..data.scenarios import KINDS, Perturbation, Scenario, load_scenarios
from ..stats.corrections import METHODS
from ..stats.discrepancy import DISCREPANCY_NAMES
from ..stats.permutation import MAX_RESAMPLES
from .configs import EmbedderConfig, SamplerConfig
from .request import AuditRequest, SequentialPlan
from ..stats.spending import SPENDING
from ..stats.similarity import SIMILARITIES
from .spec_fields import SpecError, checked, embedder_block, fail, mapping, sampler_block

_TOP = {"name", "sampler", "perturbed_sampler", "embedder", "scenario", "prompts", "perturbations", "k",
        "n_resamples", "similarity", "discrepancy", "correction", "alpha", "seed", "sequential", "explain"}
_PROMPT = {"prompt", "system"}
_PERTURBATION = {"id", "label", "kind", "prompt", "system"}
# A name becomes part of a folder name (audit-<name>): a file name, never a path.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_SEQUENTIAL = {"batch_size", "k_max", "spending", "futility"}


@dataclass(frozen=True)
class AuditSpec:
    """A validated SPEC."""

    name: str
    sampler: dict
    perturbed_sampler: dict | None
    embedder: dict
    scenario: Scenario
    perturbation_ids: tuple[str, ...]
    k: int
    n_resamples: int
    similarity: str
    discrepancy: str
    correction: str
    alpha: float
    seed: int
    source: dict = field(repr=False, default_factory=dict)
    # Keyword arguments of sequential_dbpa_test (k_max, batch_size, ...); then k = k_max.
    sequential: dict | None = None
    # {"fdr": ...} of explain_change for each perturbation, or None (no explanation).
    explain: dict | None = None

    @property
    def request(self) -> AuditRequest:
        """What the SPEC asks for, as the one request the runner takes (the app builds the same)."""
        sequential = SequentialPlan(**self.sequential) if self.sequential is not None else None
        return AuditRequest.from_scenario(
            self.scenario, list(self.perturbation_ids), sampler=SamplerConfig.from_mapping(self.sampler),
            perturbed_sampler=SamplerConfig.from_mapping(self.perturbed_sampler) if self.perturbed_sampler else None,
            embedder=EmbedderConfig.from_mapping(self.embedder), k=self.k, sequential=sequential,
            n_resamples=self.n_resamples, similarity=self.similarity, discrepancy=self.discrepancy,
            correction=self.correction, alpha=self.alpha, seed=self.seed,
            explain_fdr=self.explain["fdr"] if self.explain is not None else None)

    def settings(self) -> dict:
        """The settings block of a report (never a secret: SPECs cannot hold keys)."""
        return {"sampler": self.sampler, "perturbed_sampler": self.perturbed_sampler, "embedder": self.embedder,
                "scenario": self.scenario.id, "perturbations": list(self.perturbation_ids), "k": self.k,
                "n_resamples": self.n_resamples, "similarity": self.similarity, "discrepancy": self.discrepancy,
                "correction": self.correction, "alpha": self.alpha, "seed": self.seed, "sequential": self.sequential,
                "explain": self.explain}


def _prompt_field(value, key: str) -> str | None:
    """A prompt or system prompt: a string (or absent), within the bounds of a prompt, holding no credential."""
    if value is None:
        return None
    if not isinstance(value, str):
        fail(key, f"must be a text (quote it if needed), not a {type(value).__name__}.")
    return checked(check_prompt_text, value, key)


def _name_field(value, key: str, default: str) -> str:
    """A perturbation's id or label: a text (a number is taken as its text) holding no credential —
    it is printed on the terminal and written to every report."""
    if value is None or value == "":
        return default
    if isinstance(value, bool) or not isinstance(value, str | int):
        fail(key, f"must be a text, not a {type(value).__name__}.")
    value = str(value)  # control characters are kept (a report shows them neutralised; the terminal escaped)
    if redact(value) != value:
        fail(key, "looks like a credential (an API key or a password); it would be printed and written to every "
                   "report: remove it.")
    return value


def _name(value, default: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        fail("name", "must be a file name (letters, digits, '.', '_', '-'; at most 100, no path).")
    if redact(value) != value:
        fail("name", "looks like a credential (an API key); it would name the report folder. Give another name.")
    return value


def _sequential(spec: dict) -> dict | None:
    """The ``sequential`` block as keyword arguments of :func:`dbpa_core.sequential_dbpa_test`."""
    if spec.get("sequential") is None:
        return None
    if "k" in spec:
        fail("k", "fixes the sample size; with `sequential` give its maximum as `sequential.k_max` instead.")
    sequential = mapping(spec["sequential"], "sequential", _SEQUENTIAL)
    batch_size = checked(check_positive_int, sequential.get("batch_size", 10), "sequential.batch_size", minimum=2,
                          maximum=MAX_SAMPLES, why=SAMPLES_WHY)
    settings = {"batch_size": batch_size,
                "k_max": checked(check_positive_int, sequential.get("k_max", 200), "sequential.k_max",
                                  minimum=batch_size, maximum=MAX_SAMPLES, why=SAMPLES_WHY),
                "spending": checked(check_choice, sequential.get("spending", "pocock"), "sequential.spending",
                                     SPENDING)}
    if sequential.get("futility") is not None:
        settings["futility"] = checked(check_probability, sequential["futility"], "sequential.futility")
    return settings


def _explain(value) -> dict | None:
    """The ``explain`` option: ``true``/``false`` or ``{fdr: 0.1}``."""
    if value is None or value is False:
        return None
    if value is True:
        return {"fdr": 0.1}
    if not isinstance(value, dict):
        fail("explain", "must be true, false or a mapping such as {fdr: 0.1}.")
    explain = mapping(value, "explain", {"fdr"})
    return {"fdr": checked(check_probability, explain.get("fdr", 0.1), "explain.fdr")}


def _prompts_scenario(value) -> Scenario:
    """A scenario built from literal prompts (no template, no simulated facets)."""
    prompts = mapping(value, "prompts", {"original", "perturbations"})
    original = mapping(prompts.get("original"), "prompts.original", _PROMPT)
    for name in ("prompt", "system"):
        _prompt_field(original.get(name), f"prompts.original.{name}")
    if not isinstance(original.get("prompt"), str) or not original["prompt"].strip():
        fail("prompts.original.prompt", "is required: the original prompt x.")
    items = prompts.get("perturbations")
    if not isinstance(items, list) or not items:
        fail("prompts.perturbations", "must be a non-empty list of perturbed prompts.")
    if len(items) > MAX_PERTURBATIONS:
        fail("prompts.perturbations", f"holds at most {MAX_PERTURBATIONS:,} perturbations ({PERTURBATIONS_WHY}).")
    perturbations, seen = [], set()
    for position, item in enumerate(items):
        key = f"prompts.perturbations[{position}]"
        item = mapping(item, key, _PERTURBATION)
        pid = _name_field(item.get("id"), f"{key}.id", f"p{position + 1}")
        if pid in seen:
            fail(f"{key}.id", "repeats an earlier perturbation's id; ids must be unique.")
        seen.add(pid)
        label = _name_field(item.get("label"), f"{key}.label", pid)
        for name in ("prompt", "system"):
            _prompt_field(item.get(name), f"{key}.{name}")
        if not isinstance(item.get("prompt"), str) or not item["prompt"].strip():
            fail(f"{key}.prompt", "is required: the perturbed prompt x′ exactly as it is to be sent.")
        kind = checked(check_choice, item["kind"], f"{key}.kind", KINDS) if item.get("kind") else ""
        transform = {"type": "literal", "prompt": item["prompt"]}
        if item.get("system") is not None:
            transform["system"] = str(item["system"])
        perturbations.append(Perturbation(pid, label, kind or "",
                                          MappingProxyType(transform)))
    return Scenario(id="prompts", title="prompts from the SPEC", description="",
                    template=original["prompt"].replace("{", "{{").replace("}", "}}"), fields=MappingProxyType({}),
                    system=str(original.get("system") or ""), facets=(), perturbations=tuple(perturbations),
                    source="SPEC")


def parse_spec(data: Any, *, scenarios: dict | None = None) -> AuditSpec:
    """Validate a SPEC mapping (as read from YAML)."""
    if not isinstance(data, dict):
        raise SpecError("the SPEC must be a YAML mapping of keys such as `sampler`, `scenario`, `k`.")
    spec = data
    for name in spec:
        if name not in _TOP:
            fail(name, f"is not a SPEC key; allowed: {', '.join(sorted(_TOP))}.")
    sampler = sampler_block(spec.get("sampler", {"backend": "simulated"}), "sampler")
    perturbed = sampler_block(spec["perturbed_sampler"], "perturbed_sampler") if spec.get("perturbed_sampler") else None
    embedder = embedder_block(spec.get("embedder", {"name": "minilm"}))
    if ("scenario" in spec) == ("prompts" in spec):
        fail("scenario", "or `prompts` is required, not both: name a packaged scenario or give the prompts.")
    if "scenario" in spec:
        known = scenarios if scenarios is not None else load_scenarios()
        scenario = known[checked(check_choice, spec["scenario"], "scenario", tuple(known))]
    else:
        scenario = _prompts_scenario(spec["prompts"])
    ids = spec.get("perturbations")
    if ids is None:
        ids = [p.id for p in scenario.perturbations]
    if not isinstance(ids, list) or not ids:
        fail("perturbations", "must be a non-empty list of perturbation ids.")
    known_ids = tuple(p.id for p in scenario.perturbations)
    ids = [checked(check_choice, pid, f"perturbations[{i}]", known_ids) for i, pid in enumerate(ids)]
    sequential = _sequential(spec)
    k = sequential["k_max"] if sequential else checked(check_positive_int, spec.get("k", 20), "k", minimum=2,
                                                         maximum=MAX_SAMPLES, why=SAMPLES_WHY)
    n_resamples = checked(check_positive_int, spec.get("n_resamples", 1000), "n_resamples", maximum=MAX_RESAMPLES,
                           why=RESAMPLES_WHY)
    try:
        check_audit_size(len(ids), k, n_resamples, batch_size=sequential["batch_size"] if sequential else None)
    except InvalidValue as error:
        raise SpecError(error.without_value, error.name) from None
    return AuditSpec(
        name=_name(spec.get("name"), scenario.id),
        sampler=sampler, perturbed_sampler=perturbed, embedder=embedder, scenario=scenario,
        perturbation_ids=tuple(ids),
        k=k,
        n_resamples=n_resamples,
        similarity=checked(check_choice, spec.get("similarity", "cosine"), "similarity", SIMILARITIES),
        discrepancy=checked(check_choice, spec.get("discrepancy", "jsd"), "discrepancy", DISCREPANCY_NAMES),
        correction=checked(check_choice, spec.get("correction", "bonferroni"), "correction", tuple(METHODS)),
        alpha=checked(check_probability, spec.get("alpha", 0.05), "alpha"),
        seed=checked(check_positive_int, spec.get("seed", 0), "seed", minimum=0),
        source=dict(spec),
        sequential=sequential,
        explain=_explain(spec.get("explain")),
    )


def load_spec(path: str | Path) -> AuditSpec:
    """Read and validate a SPEC file; an error names the file, the key and its line (never its value)."""
    path = Path(path)
    data = read_yaml(path, SpecError)
    try:
        return parse_spec(data)
    except SpecError as error:
        line = None
        if error.key:
            lines, key = key_lines(path), error.key
            while key and key not in lines:  # an inner key the file does not spell out: its parent's line
                key = key.rpartition(".")[0] if "." in key else key.rpartition("[")[0]
            line = lines.get(key)
        raise SpecError(f"{path.name}{f', line {line}' if line else ''}: {error}", error.key) from None
