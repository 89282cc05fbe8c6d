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

``sequential`` replaces the fixed ``k`` by sequential tests that draw in
batches and stop as soon as a change is clear, each at α/m::

    sequential: {batch_size: 10, k_max: 200}   # optional: spending: pocock, futility: 0.9
Unknown keys are rejected; every error names the key and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..stats.corrections import METHODS
from ..stats.discrepancy import DISCREPANCY_NAMES
from ..stats.sequential import SPENDING
from ..samplers import SAMPLERS
from ..data.assets import read_yaml
from ..data.scenarios import KINDS, Perturbation, Scenario, load_scenarios
from ..stats.similarity import SIMILARITIES

_TOP = {"name", "sampler", "perturbed_sampler", "embedder", "scenario", "prompts", "perturbations", "k",
        "n_resamples", "similarity", "discrepancy", "correction", "alpha", "seed", "sequential"}
_SAMPLER = {"backend", "model", "base_url", "model_path", "temperature", "max_tokens", "max_concurrency", "timeout",
            "max_retries", "path"}
_EMBEDDER = {"name", "model", "base_url", "batch_size"}
_PROMPT = {"prompt", "system"}
_PERTURBATION = {"id", "label", "kind", "prompt", "system"}
_SEQUENTIAL = {"batch_size", "k_max", "spending", "futility"}


class SpecError(ValueError):
    """The SPEC is malformed; the message names the key and the allowed values."""


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


def _fail(key: str, message: str):
    raise SpecError(f"`{key}` {message}")


def _mapping(value, key: str, allowed: set[str]) -> dict:
    if not isinstance(value, dict):
        _fail(key, "must be a mapping.")
    for name in value:
        if name not in allowed:
            _fail(f"{key}.{name}", f"is not a known key; allowed: {', '.join(sorted(allowed))}.")
    return dict(value)


def _choice(value, key: str, allowed) -> str:
    if value not in allowed:
        _fail(key, f"must be one of {', '.join(map(str, allowed))}; got {value!r}.")
    return value


def _integer(value, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(key, f"must be an integer >= {minimum}; got {value!r}.")
    return value


def _sampler(value, key: str) -> dict:
    if isinstance(value, dict) and "api_key" in value:
        # A SPEC is a file that gets shared and committed: keys stay in the environment.
        _fail(f"{key}.api_key", "must not be in a SPEC; set OPENAI_API_KEY in the environment instead.")
    sampler = _mapping(value, key, _SAMPLER)
    _choice(sampler.get("backend"), f"{key}.backend", SAMPLERS)
    if sampler["backend"] == "openai" and not sampler.get("model"):
        _fail(f"{key}.model", "is required for the openai backend (the model name the server knows).")
    temperature = sampler.get("temperature")
    if temperature is not None and (not isinstance(temperature, int | float) or not 0 <= temperature <= 5):
        _fail(f"{key}.temperature", f"must be a number in [0, 5]; got {temperature!r}.")
    if "max_tokens" in sampler:
        _integer(sampler["max_tokens"], f"{key}.max_tokens", 1)
    return sampler


def _sequential(spec: dict) -> dict | None:
    """The ``sequential`` block as keyword arguments of :func:`dbpa_core.sequential_dbpa_test`."""
    if spec.get("sequential") is None:
        return None
    if "k" in spec:
        _fail("k", "fixes the sample size; with `sequential` give its maximum as `sequential.k_max` instead.")
    sequential = _mapping(spec["sequential"], "sequential", _SEQUENTIAL)
    batch_size = _integer(sequential.get("batch_size", 10), "sequential.batch_size", 2)
    k_max = _integer(sequential.get("k_max", 200), "sequential.k_max", batch_size)
    settings = {"batch_size": batch_size, "k_max": k_max,
                "spending": _choice(sequential.get("spending", "pocock"), "sequential.spending", SPENDING)}
    futility = sequential.get("futility")
    if futility is not None:
        if isinstance(futility, bool) or not isinstance(futility, int | float) or not 0 < futility < 1:
            _fail("sequential.futility", f"must be a number in (0, 1) or omitted; got {futility!r}.")
        settings["futility"] = float(futility)
    return settings


def _prompts_scenario(value) -> Scenario:
    """A scenario built from literal prompts (no template, no simulated facets)."""
    prompts = _mapping(value, "prompts", {"original", "perturbations"})
    original = _mapping(prompts.get("original"), "prompts.original", _PROMPT)
    if not isinstance(original.get("prompt"), str) or not original["prompt"].strip():
        _fail("prompts.original.prompt", "is required: the original prompt x.")
    items = prompts.get("perturbations")
    if not isinstance(items, list) or not items:
        _fail("prompts.perturbations", "must be a non-empty list of perturbed prompts.")
    perturbations, seen = [], set()
    for position, item in enumerate(items):
        key = f"prompts.perturbations[{position}]"
        item = _mapping(item, key, _PERTURBATION)
        pid = str(item.get("id") or f"p{position + 1}")
        if pid in seen:
            _fail(f"{key}.id", f"repeats {pid!r}; ids must be unique.")
        seen.add(pid)
        if not isinstance(item.get("prompt"), str) or not item["prompt"].strip():
            _fail(f"{key}.prompt", "is required: the perturbed prompt x′ exactly as it is to be sent.")
        kind = item.get("kind", "")
        if kind not in (*KINDS, ""):
            _fail(f"{key}.kind", f"must be one of control, target (or omitted); got {kind!r}.")
        transform = {"type": "literal", "prompt": item["prompt"]}
        if item.get("system") is not None:
            transform["system"] = str(item["system"])
        perturbations.append(Perturbation(pid, str(item.get("label") or pid), kind or "",
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
            _fail(name, f"is not a SPEC key; allowed: {', '.join(sorted(_TOP))}.")
    sampler = _sampler(spec.get("sampler", {"backend": "simulated"}), "sampler")
    perturbed = _sampler(spec["perturbed_sampler"], "perturbed_sampler") if spec.get("perturbed_sampler") else None
    embedder = _mapping(spec.get("embedder", {"name": "minilm"}), "embedder", _EMBEDDER)
    _choice(embedder.get("name", "minilm"), "embedder.name", ("minilm", "openai"))
    if ("scenario" in spec) == ("prompts" in spec):
        _fail("scenario", "or `prompts` is required, not both: name a packaged scenario or give the prompts.")
    if "scenario" in spec:
        known = scenarios if scenarios is not None else load_scenarios()
        scenario = known.get(_choice(spec["scenario"], "scenario", tuple(known)))
    else:
        scenario = _prompts_scenario(spec["prompts"])
    ids = spec.get("perturbations")
    if ids is None:
        ids = [p.id for p in scenario.perturbations]
    if not isinstance(ids, list) or not ids:
        _fail("perturbations", "must be a non-empty list of perturbation ids.")
    for pid in ids:
        _choice(pid, "perturbations", tuple(p.id for p in scenario.perturbations))
    sequential = _sequential(spec)
    alpha = spec.get("alpha", 0.05)
    if not isinstance(alpha, int | float) or not 0 < alpha < 1:
        _fail("alpha", f"must be a number in (0, 1); got {alpha!r}.")
    return AuditSpec(
        name=str(spec.get("name") or scenario.id),
        sampler=sampler, perturbed_sampler=perturbed, embedder=embedder, scenario=scenario,
        perturbation_ids=tuple(ids),
        k=sequential["k_max"] if sequential else _integer(spec.get("k", 20), "k", 2),
        n_resamples=_integer(spec.get("n_resamples", 1000), "n_resamples", 1),
        similarity=_choice(spec.get("similarity", "cosine"), "similarity", SIMILARITIES),
        discrepancy=_choice(spec.get("discrepancy", "jsd"), "discrepancy", DISCREPANCY_NAMES),
        correction=_choice(spec.get("correction", "bonferroni"), "correction", tuple(METHODS)),
        alpha=float(alpha),
        seed=_integer(spec.get("seed", 0), "seed", 0),
        source=dict(spec),
        sequential=sequential,
    )


def load_spec(path: str | Path) -> AuditSpec:
    path = Path(path)
    data = read_yaml(path, SpecError)
    try:
        return parse_spec(data)
    except SpecError as error:
        raise SpecError(f"{path.name}: {error}") from None
