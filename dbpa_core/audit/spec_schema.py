"""A JSON Schema of the audit SPEC, built from the same tables :mod:`dbpa_core.audit.spec` validates with.

Editors that speak the YAML language server complete and check a SPEC with it::

    # yaml-language-server: $schema=https://.../spec.schema.json   (or a local path)

The schema is a convenience for editors: :func:`dbpa_core.audit.spec.parse_spec`
stays the one authority (it also checks ranges that depend on each other,
such as B·(k₀ + k₁)²).  ``python -m dbpa_core.audit.spec_schema`` prints it;
``dbpa_core/assets/spec.schema.json`` is the shipped copy, kept equal to this
by a test.
"""

from __future__ import annotations

import json

from .._validation import MAX_SAMPLES
from ..embedders import EMBEDDER_SETTINGS
from ..samplers import GENERATION_SETTINGS, SAMPLER_SETTINGS
from ..stats.corrections import METHODS
from ..stats.discrepancy import DISCREPANCY_NAMES
from ..stats.permutation import MAX_RESAMPLES
from ..stats.spending import SPENDING
from ..stats.similarity import SIMILARITIES

#: JSON types of the settings a backend takes (every other setting is a string).
_SETTING_TYPES = {"temperature": {"type": "number", "minimum": 0, "maximum": 5},
                  "max_tokens": {"type": "integer", "minimum": 1}, "n_ctx": {"type": "integer", "minimum": 1},
                  "batch_size": {"type": "integer", "minimum": 1}, "max_concurrency": {"type": "integer", "minimum": 1},
                  "timeout": {"type": "number", "exclusiveMinimum": 0},
                  "max_retries": {"type": "integer", "minimum": 0}, "logprobs": {"type": "boolean"}}


def _backend(name: str, settings: tuple[str, ...], *, key: str, generation: tuple[str, ...] = ()) -> dict:
    properties = {key: {"const": name}}
    for setting in (*settings, *generation):
        properties[setting] = _SETTING_TYPES.get(setting, {"type": "string"})
    return {"type": "object", "required": [key], "additionalProperties": False, "properties": properties}


def _sampler() -> dict:
    return {"oneOf": [_backend(name, settings, key="backend", generation=GENERATION_SETTINGS)
                      for name, settings in SAMPLER_SETTINGS.items()]}


def _prompt(extra: dict | None = None, required=("prompt",)) -> dict:
    properties = {"prompt": {"type": "string", "minLength": 1}, "system": {"type": ["string", "null"]},
                  **(extra or {})}
    return {"type": "object", "required": list(required), "additionalProperties": False, "properties": properties}


def spec_schema() -> dict:
    """The JSON Schema (draft 2020-12) of an audit SPEC."""
    perturbation = _prompt({"id": {"type": "string"}, "label": {"type": "string"},
                            "kind": {"enum": ["control", "target"]}}, required=("id", "prompt"))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "DBPA Explorer audit SPEC (dbpa audit SPEC.yaml)",
        "type": "object",
        "additionalProperties": False,
        "required": ["sampler"],
        "oneOf": [{"required": ["scenario"], "not": {"required": ["prompts"]}},
                  {"required": ["prompts"], "not": {"required": ["scenario"]}}],
        "properties": {
            "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"},
            "sampler": _sampler(),
            "perturbed_sampler": _sampler(),
            "embedder": {"oneOf": [_backend(name, settings, key="name") for name, settings in
                                   EMBEDDER_SETTINGS.items()]},
            "scenario": {"type": "string", "description": "a shipped scenario id (dbpa_core/assets/scenarios)"},
            "prompts": {"type": "object", "required": ["original", "perturbations"], "additionalProperties": False,
                        "properties": {"original": _prompt(),
                                       "perturbations": {"type": "array", "minItems": 1, "items": perturbation}}},
            "perturbations": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "k": {"type": "integer", "minimum": 2, "maximum": MAX_SAMPLES},
            "n_resamples": {"type": "integer", "minimum": 1, "maximum": MAX_RESAMPLES},
            "similarity": {"enum": list(SIMILARITIES)},
            "discrepancy": {"enum": list(DISCREPANCY_NAMES)},
            "correction": {"enum": list(METHODS)},
            "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "seed": {"type": "integer", "minimum": 0},
            "sequential": {"type": "object", "additionalProperties": False,
                           "properties": {"batch_size": {"type": "integer", "minimum": 1},
                                          "k_max": {"type": "integer", "minimum": 2, "maximum": MAX_SAMPLES},
                                          "spending": {"enum": list(SPENDING)},
                                          "futility": {"type": "number", "exclusiveMinimum": 0,
                                                       "exclusiveMaximum": 1}}},
            "explain": {"oneOf": [{"type": "boolean"},
                                  {"type": "object", "additionalProperties": False,
                                   "properties": {"fdr": {"type": "number", "exclusiveMinimum": 0,
                                                          "exclusiveMaximum": 1}}}]},
        },
    }


if __name__ == "__main__":
    print(json.dumps(spec_schema(), indent=2))
