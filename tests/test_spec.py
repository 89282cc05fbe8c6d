"""Tests of dbpa_core.audit.spec: every bad SPEC is refused with the dotted key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dbpa_core.__main__ import main
from dbpa_core.audit.spec import SpecError, load_spec, parse_spec

REPO = Path(__file__).resolve().parents[1]
BASE = {"name": "t", "sampler": {"backend": "simulated"}, "scenario": "seasons_question",
        "perturbations": ["paraphrase_1", "mars"], "k": 12, "n_resamples": 200, "seed": 0}


def write_spec(tmp_path, **overrides):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({**BASE, **overrides}, allow_unicode=True))
    return path


@pytest.mark.parametrize(("overrides", "match"), [
    ({"colour": "red"}, "`colour` is not a SPEC key; allowed:"),
    ({"k": 1}, r"`k` must be an integer >= 2 and <= 5,000 \(the similarity matrix"),
    ({"k": 2.5}, "`k` must be an integer >= 2 and <= 5,000"),
    ({"n_resamples": 10**11}, "`n_resamples` must be an integer >= 1 and <= 1,000,000"),
    ({"seed": -1}, "`seed` must be an integer >= 0"),
    ({"discrepancy": "cosine"}, "`discrepancy` must be one of 'jsd'"),
    ({"correction": "bonf"}, "`correction` must be one of 'bonferroni'"),
    ({"similarity": "dot"}, "`similarity` must be one of 'cosine'"),
    ({"alpha": 2}, r"`alpha` must lie in \(0, 1\)\.$"),
    ({"alpha": "often"}, "`alpha` must be a number between 0 and 1"),
    ({"sampler": {"backend": "gpt"}}, "`sampler.backend` must be one of 'simulated', 'recorded', 'local', 'openai'"),
    ({"sampler": {"backend": "openai", "model": "m", "api_key": "sk"}},
     "`sampler.api_key` must not be in a SPEC; set OPENAI_API_KEY"),
    ({"sampler": {"backend": "openai"}}, "`sampler.model` is required"),
    ({"sampler": {"backend": "simulated", "temperature": 9}}, r"`sampler.temperature` must be a number in \[0, 5\]"),
    ({"sampler": {"backend": "simulated", "max_tokens": 0}}, "`sampler.max_tokens` must be an integer >= 1"),
    ({"sampler": {"backend": "simulated", "base_url": "http://127.0.0.1:1/v1"}},
     "`sampler.base_url` is not a known key; allowed: backend, max_tokens, model, temperature"),
    ({"sampler": {"backend": "openai", "model": "m", "base_url": "localhost:8000/v1"}},
     "`sampler.base_url` must start with http:// or https://"),
    ({"sampler": {"backend": "openai", "model": "m", "base_url": "http://u:KEY@host/v1"}},
     "`sampler.base_url` holds a credential"),
    ({"sampler": {"backend": "openai", "model": "m", "base_url": "http://host/v1?api_key=KEY"}},
     "`sampler.base_url` holds a credential"),
    ({"sampler": {"backend": "openai", "model": "m", "timeout": 0}}, "`sampler.timeout` must be a positive"),
    ({"perturbed_sampler": {"backend": "local", "model": "x"}}, "`perturbed_sampler.model` must be one of"),
    ({"perturbed_sampler": {"backend": "local", "n_gpu_layers": 3}}, "`perturbed_sampler.n_gpu_layers` is not a known key"),
    ({"scenario": "mars_mission"}, "`scenario` must be one of"),
    ({"perturbations": ["mars", "nope"]}, r"`perturbations\[1\]` must be one of"),
    ({"embedder": {"name": "bert"}}, "`embedder.name` must be one of 'minilm', 'openai'"),
    ({"embedder": {"name": "minilm", "model": "bert"}}, "`embedder.model` is not a known key; allowed: batch_size"),
    ({"embedder": {"name": "openai", "base_url": "http://u:p@h/v1"}}, "`embedder.base_url` holds a credential"),
    ({"name": "/../../tmp/x"}, "`name` must be a file name"),
    ({"name": ".."}, "`name` must be a file name"),
    ({"prompts": {"original": {"prompt": "x"}, "perturbations": [{"prompt": "y"}]}},
     "or `prompts` is required, not both"),
])
def test_bad_specs_name_the_key(tmp_path, overrides, match, capsys):
    with pytest.raises(SpecError, match=match):
        parse_spec(yaml.safe_load(write_spec(tmp_path, **overrides).read_text()))
    assert main(["audit", str(write_spec(tmp_path, **overrides))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: spec.yaml, line ") and "; got" not in err  # the key's line, never its value


def test_literal_prompt_kinds_are_checked():
    spec = {"prompts": {"original": {"prompt": "x"}, "perturbations": [{"prompt": "y", "kind": "ctrl"}]}}
    with pytest.raises(SpecError, match=r"`prompts.perturbations\[0\].kind` must be one of 'control', 'target'"):
        parse_spec(spec)


def test_choices_ignore_case_and_come_back_as_listed():
    spec = parse_spec({**BASE, "correction": "Holm", "similarity": "COSINE",
                       "sampler": {"backend": "Simulated", "temperature": 1}})
    assert (spec.correction, spec.similarity, spec.sampler["backend"]) == ("holm", "cosine", "simulated")
    assert spec.sampler["temperature"] == 1.0


def test_good_settings_reach_the_backends():
    from dbpa_core.audit.runner import build_embedder, build_sampler

    spec = parse_spec({**BASE, "sampler": {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                                           "timeout": 2, "max_retries": 0, "max_concurrency": 3},
                       "embedder": {"name": "minilm", "batch_size": 8}})
    sampler, embedder = build_sampler(spec.request.sampler), build_embedder(spec.request.embedder)
    assert (sampler.timeout, sampler.max_retries, sampler.max_concurrency) == (2.0, 0, 3)
    assert embedder.batch_size == 8


def test_shipped_specs_are_valid():
    # the audit SPECs (dbpa audit); rut_*.yaml and stability_*.yaml are the sibling audits', checked by
    # tests/test_request_agreement.py
    specs = [path for path in (REPO / "dbpa_core" / "assets" / "specs").glob("*.yaml")
             if not path.name.startswith(("rut_", "stability_"))]
    assert specs
    for path in specs:
        assert load_spec(path).k >= 2


def test_embedder_settings_are_constructor_parameters():
    import inspect

    from dbpa_core.embedders import EMBEDDER_SETTINGS, EMBEDDERS
    from dbpa_core.embedders.minilm import MiniLMEmbedder
    from dbpa_core.embedders.openai_compatible import OpenAIEmbedder

    classes = {"minilm": MiniLMEmbedder, "openai": OpenAIEmbedder}
    assert set(classes) == set(EMBEDDERS) == set(EMBEDDER_SETTINGS)
    for name, cls in classes.items():
        assert set(EMBEDDER_SETTINGS[name]) <= set(inspect.signature(cls.__init__).parameters), name


def test_the_shipped_spec_schema_is_the_generated_one_and_accepts_what_parse_spec_accepts(tmp_path):
    """dbpa_core/assets/spec.schema.json (for editors) equals spec_schema(); every shipped SPEC validates, and a
    key parse_spec refuses is refused by the schema too."""
    import json

    import jsonschema

    from dbpa_core.audit.spec_schema import spec_schema
    from dbpa_core.data.assets import ASSETS

    schema = json.loads((ASSETS / "spec.schema.json").read_text())
    assert schema == spec_schema(), "regenerate: python -m dbpa_core.audit.spec_schema > dbpa_core/assets/spec.schema.json"
    jsonschema.Draft202012Validator.check_schema(schema)
    audits = [path for path in (ASSETS / "specs").glob("*.yaml") if not path.name.startswith(("rut_", "stability_"))]
    assert audits  # the rut_*/stability_* SPECs are the sibling audits' (dbpa rut, dbpa stability)
    for path in audits:
        assert path.read_text().startswith("# yaml-language-server: $schema=../spec.schema.json")
        raw = yaml.safe_load(path.read_text())
        jsonschema.validate(raw, schema)
        parse_spec(raw)
    typed = {"sampler": {"backend": "openai", "model": "gpt-4o-mini", "temperature": 0.7}, "k": 10,
             "prompts": {"original": {"prompt": "a"}, "perturbations": [{"id": "b", "prompt": "b", "kind": "target"}]}}
    jsonschema.validate(typed, schema)
    for bad, key in (({**typed, "kk": 3}, "kk"), ({**typed, "k": 1}, "`k`"),
                     ({**typed, "sampler": {"backend": "local", "base_url": "x"}}, "base_url")):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        with pytest.raises(ValueError, match=key):
            parse_spec(bad)
