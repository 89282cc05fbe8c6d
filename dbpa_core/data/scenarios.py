"""Scenarios: a prompt, its perturbations, and a known ground truth.

A scenario file (``assets/scenarios/*.yaml``) holds a prompt template with
fields, the answer *facets* the simulated sampler writes from, and a list of
named, typed perturbations labelled ``control`` (should not change the
answer) or ``target`` (should).  :meth:`Perturbation.apply` produces the
perturbed prompt exactly as it will be sent.

Transformation types
--------------------
prefix          ``text`` is put before the prompt (personas: "Act as a doctor. ").
suffix          ``text`` is put after the prompt.
replace_field   ``field`` takes ``value`` and the template is filled again.
paraphrase      ``template`` replaces the template (same fields).
pad             ``sentences`` copies of ``text`` are appended (prompt length, appendix C.1).
persona_pad     ``prefix`` (a persona) is put before the prompt and copies of ``text`` are
                appended until the prompt is about ``tokens`` tokens long (appendix C.1
                asked with a persona: does a longer context hide it?).
system          ``system`` replaces the system prompt (a system perturbation).
literal         ``prompt`` (and optionally ``system``) replace the prompt as a whole.

A scenario file may ``extends: <id>`` another file of the same folder: it then
takes that scenario's ``template``, ``fields``, ``system`` and ``facets`` (one
patient, one set of simulated answers) and brings its own perturbations, so a
second design on the same prompt repeats nothing.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .assets import SCENARIO_DIR, read_yaml


TRANSFORMS = {
    "prefix": ("text",),
    "suffix": ("text",),
    "replace_field": ("field", "value"),
    "paraphrase": ("template",),
    "pad": ("text", "sentences"),
    "persona_pad": ("prefix", "text", "tokens"),
    "system": ("system",),
    "literal": ("prompt",),
}
KINDS = ("control", "target")
#: ≈ characters per token of English text under BPE tokenizers: the padding target here and the cost
#: estimate (:mod:`dbpa_core.audit.costs`) use this one rule.
CHARS_PER_TOKEN = 4.0
_SCENARIO_KEYS = {"id", "title", "description", "template", "fields", "system", "facets", "perturbations"}
_PERTURBATION_KEYS = {"id", "label", "group", "kind", "transform", "simulated_effect", "note"}


class ScenarioError(ValueError):
    """A scenario file is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Facet:
    """One kind of content an answer may contain, with ways of phrasing it."""

    name: str
    weight: float
    phrasings: tuple[str, ...]


@dataclass(frozen=True)
class Perturbation:
    """A named, typed transformation of a scenario's prompt."""

    id: str
    label: str
    kind: str  # "control" or "target"
    transform: MappingProxyType
    group: str = ""
    simulated_effect: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    note: str = ""

    @property
    def is_target(self) -> bool:
        return self.kind == "target"


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    description: str
    template: str
    fields: MappingProxyType
    system: str
    facets: tuple[Facet, ...]
    perturbations: tuple[Perturbation, ...]
    source: str

    @property
    def prompt(self) -> str:
        """The original prompt x."""
        return self.template.format(**self.fields)

    def perturbation(self, perturbation_id: str) -> Perturbation:
        for perturbation in self.perturbations:
            if perturbation.id == perturbation_id:
                return perturbation
        known = ", ".join(p.id for p in self.perturbations)
        raise KeyError(f"scenario {self.id!r} has no perturbation {perturbation_id!r}; known: {known}.")

    def apply(self, perturbation: Perturbation | str) -> tuple[str, str]:
        """The perturbed (prompt, system) x' = Δ(x), exactly as sent."""
        if isinstance(perturbation, str):
            perturbation = self.perturbation(perturbation)
        t = perturbation.transform
        kind = t["type"]
        prompt, system = self.prompt, self.system
        if kind == "prefix":
            prompt = t["text"] + prompt
        elif kind == "suffix":
            prompt = prompt + t["text"]
        elif kind == "replace_field":
            prompt = self.template.format(**{**self.fields, t["field"]: t["value"]})
        elif kind == "paraphrase":
            prompt = t["template"].format(**self.fields)
        elif kind == "pad":
            prompt = prompt + "".join(" " + t["text"].strip() for _ in range(int(t["sentences"])))
        elif kind == "persona_pad":
            prompt = t["prefix"] + prompt
            prompt += "".join(" " + t["text"].strip() for _ in range(_sentences_to_reach(prompt, t)))
        elif kind == "system":
            system = t["system"]
        elif kind == "literal":
            prompt, system = t["prompt"], t.get("system", system)
        return prompt, system

    def facet_weights(self, perturbation: Perturbation | str | None = None) -> dict[str, float]:
        """Facet weights of the simulated sampler for the original arm or a perturbed arm."""
        weights = {f.name: f.weight for f in self.facets}
        if perturbation is not None:
            if isinstance(perturbation, str):
                perturbation = self.perturbation(perturbation)
            weights.update(perturbation.simulated_effect)
        return weights

    def true_effect(self, perturbation: Perturbation | str) -> float | None:
        """Ground truth of the simulated sampler: total variation distance between
        the facet distributions of the original and the perturbed arm (0 for
        controls); None for a scenario without facets (literal prompts)."""
        if not self.facets:
            return None
        before = self.facet_weights()
        after = self.facet_weights(perturbation)
        total_before, total_after = sum(before.values()), sum(after.values())
        return 0.5 * sum(abs(before[k] / total_before - after[k] / total_after) for k in before)


def _sentences_to_reach(prompt: str, transform) -> int:
    """Copies of the padding sentence that bring ``prompt`` to about ``transform["tokens"]`` tokens."""
    missing = int(transform["tokens"]) * CHARS_PER_TOKEN - len(prompt)
    return max(0, math.ceil(missing / (len(transform["text"].strip()) + 1)))


def _fail(source: str, where: str, message: str):
    raise ScenarioError(f"{source}: `{where}` {message}")


def _template_fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def parse_scenario(data: Any, source: str = "<scenario>") -> Scenario:
    """Validate a scenario mapping (as read from YAML) and build a :class:`Scenario`."""
    if not isinstance(data, dict):
        _fail(source, "(top level)", "must be a mapping of scenario keys.")
    unknown = set(data) - _SCENARIO_KEYS
    if unknown:
        _fail(source, sorted(unknown)[0], f"is not a scenario key; allowed: {', '.join(sorted(_SCENARIO_KEYS))}.")
    for key in ("id", "title", "template"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            _fail(source, key, "is required and must be a non-empty string.")
    fields = data.get("fields") or {}
    if not isinstance(fields, dict):
        _fail(source, "fields", "must be a mapping of template field names to values.")
    fields = {str(k): str(v) for k, v in fields.items()}
    missing = _template_fields(data["template"]) - set(fields)
    if missing:
        _fail(source, "template", f"uses field {{{sorted(missing)[0]}}} that `fields` does not define.")

    facets_data = data.get("facets")
    if not isinstance(facets_data, dict) or len(facets_data) < 2:
        _fail(source, "facets", "must map at least two facet names to {weight, phrasings}.")
    facets = []
    for name, spec in facets_data.items():
        where = f"facets.{name}"
        if not isinstance(spec, dict):
            _fail(source, where, "must be a mapping with `weight` and `phrasings`.")
        weight = spec.get("weight")
        if not isinstance(weight, int | float) or isinstance(weight, bool) or weight < 0:
            _fail(source, f"{where}.weight", "must be a number >= 0.")
        phrasings = spec.get("phrasings")
        if not isinstance(phrasings, list) or not phrasings or not all(isinstance(p, str) and p for p in phrasings):
            _fail(source, f"{where}.phrasings", "must be a non-empty list of sentences.")
        facets.append(Facet(str(name), float(weight), tuple(phrasings)))
    if sum(f.weight for f in facets) <= 0:
        _fail(source, "facets", "must give at least one facet a positive weight.")
    facet_names = {f.name for f in facets}

    perturbations, seen = [], set()
    items = data.get("perturbations") or []
    if not isinstance(items, list):
        _fail(source, "perturbations", "must be a list.")
    for position, item in enumerate(items):
        where = f"perturbations[{position}]"
        if not isinstance(item, dict):
            _fail(source, where, "must be a mapping.")
        unknown = set(item) - _PERTURBATION_KEYS
        if unknown:
            _fail(source, f"{where}.{sorted(unknown)[0]}",
                  f"is not a perturbation key; allowed: {', '.join(sorted(_PERTURBATION_KEYS))}.")
        pid = item.get("id")
        if not isinstance(pid, str) or not pid:
            _fail(source, f"{where}.id", "is required and must be a non-empty string.")
        if pid in seen:
            _fail(source, f"{where}.id", f"repeats the id {pid!r}; ids must be unique.")
        seen.add(pid)
        where = f"perturbations.{pid}"
        kind = item.get("kind")
        if kind not in KINDS:
            _fail(source, f"{where}.kind", f"must be 'control' or 'target'; got {kind!r}.")
        transform = item.get("transform")
        if not isinstance(transform, dict) or transform.get("type") not in TRANSFORMS:
            _fail(source, f"{where}.transform.type", f"must be one of {', '.join(TRANSFORMS)}.")
        for needed in TRANSFORMS[transform["type"]]:
            if needed not in transform:
                _fail(source, f"{where}.transform.{needed}", f"is required for a {transform['type']} transform.")
        if transform["type"] == "replace_field" and transform["field"] not in fields:
            _fail(source, f"{where}.transform.field", f"names {transform['field']!r}, which is not in `fields`.")
        if transform["type"] == "paraphrase":
            extra = _template_fields(transform["template"]) - set(fields)
            if extra:
                _fail(source, f"{where}.transform.template", f"uses field {{{sorted(extra)[0]}}} not in `fields`.")
        if transform["type"] == "pad" and (not isinstance(transform["sentences"], int) or transform["sentences"] < 1):
            _fail(source, f"{where}.transform.sentences", "must be a positive integer.")
        if transform["type"] == "persona_pad" and (not isinstance(transform["tokens"], int) or isinstance(
                transform["tokens"], bool) or transform["tokens"] < 1):
            _fail(source, f"{where}.transform.tokens", "must be a positive integer (the prompt length in tokens).")
        effect = item.get("simulated_effect") or {}
        if not isinstance(effect, dict):
            _fail(source, f"{where}.simulated_effect", "must map facet names to new weights.")
        for facet_name, weight in effect.items():
            if facet_name not in facet_names:
                _fail(source, f"{where}.simulated_effect.{facet_name}", "is not a facet of this scenario.")
            if not isinstance(weight, int | float) or weight < 0:
                _fail(source, f"{where}.simulated_effect.{facet_name}", "must be a weight >= 0.")
        if kind == "control" and effect:
            _fail(source, f"{where}.simulated_effect", "must be empty for a control (controls change nothing).")
        if kind == "target" and not effect:
            _fail(source, f"{where}.simulated_effect", "is required for a target: say which facets change.")
        normalised = {k: (str(v) if k not in ("sentences", "tokens") else v) for k, v in transform.items()}
        perturbations.append(Perturbation(
            id=pid, label=str(item.get("label") or pid), kind=kind, transform=MappingProxyType(normalised),
            group=str(item.get("group") or ""), simulated_effect=MappingProxyType({k: float(v) for k, v in effect.items()}),
            note=str(item.get("note") or ""),
        ))
    scenario = Scenario(
        id=data["id"], title=data["title"], description=str(data.get("description") or ""),
        template=data["template"], fields=MappingProxyType(fields), system=str(data.get("system") or ""),
        facets=tuple(facets), perturbations=tuple(perturbations), source=source,
    )
    for p in scenario.perturbations:
        if scenario.apply(p) == (scenario.prompt, scenario.system):
            _fail(source, f"perturbations.{p.id}.transform", "leaves the prompt unchanged; a perturbation must change it.")
    return scenario


#: What a scenario file that ``extends`` another takes from it (unless it gives its own).
_INHERITED_KEYS = ("template", "fields", "system", "facets")


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate one scenario file (resolving ``extends`` against its folder)."""
    path = Path(path)
    data = read_yaml(path, ScenarioError)
    if isinstance(data, dict) and "extends" in data:
        data = dict(data)
        base_id = data.pop("extends")
        base_path = path.parent / f"{base_id}.yaml"
        if not isinstance(base_id, str) or not base_path.is_file():
            _fail(path.name, "extends", f"must name a scenario file beside it ({base_id}.yaml was not found).")
        base = read_yaml(base_path, ScenarioError)
        if not isinstance(base, dict) or "extends" in base:
            _fail(path.name, "extends", f"names {base_path.name}, which must be a scenario that extends none.")
        data = {**{key: base[key] for key in _INHERITED_KEYS if key in base}, **data}
    return parse_scenario(data, source=path.name)


def load_scenarios(directory: str | Path | None = None) -> dict[str, Scenario]:
    """All scenarios of a folder (default ``assets/scenarios``), by id."""
    directory = Path(directory) if directory is not None else SCENARIO_DIR
    scenarios: dict[str, Scenario] = {}
    for path in sorted(directory.glob("*.yaml")):
        scenario = load_scenario(path)
        if scenario.id in scenarios:
            raise ScenarioError(f"{path.name}: `id` {scenario.id!r} is also used by {scenarios[scenario.id].source}.")
        scenarios[scenario.id] = scenario
    return scenarios
