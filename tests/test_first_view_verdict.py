"""The home page's shipped default verdict (ui.first_verdict, issue 45): right, and shown only where it applies.

The strip is drawn from assets/first_view/home_verdict.json before the page has run its test, so the file
must hold what the pipeline computes (else it would show a wrong number first), and any input other than the
defaults, sidebar included, must never show it.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from dbpa_app.ui.first_verdict import FIRST_VERDICT_FILE, HOME_DEFAULTS, default_settings, shipped_verdict
from dbpa_app.ui.lesson import StripNumbers, strip_html
from dbpa_core.audit.configs import EmbedderConfig, SamplerConfig
from dbpa_core.data.scenarios import load_scenarios
from test_app import prepare

SHIPPED = json.loads(FIRST_VERDICT_FILE.read_text(encoding="utf-8"))
REGENERATE = "stale: regenerate it with `python scripts/precompute_first_verdict.py`"


@pytest.fixture(scope="module")
def scenarios():
    return load_scenarios()


def test_the_shipped_verdict_is_what_the_pipeline_computes(tmp_path):
    """Recomputed through the real pipeline (the page's request, the simulated sampler, the shipped first-view
    vectors, dbpa_core.audit.runner.run): every number the strip reads, the statistic, the decision, the effect's
    reading, k, the request's key and the package version equal the shipped file's."""
    from scripts.precompute_first_verdict import first_verdict

    computed = first_verdict(tmp_path)
    for field in ("statistic", "decision", "effect", "key", "version", "perturbation", "inputs"):
        assert computed[field] == SHIPPED[field], f"{field}: {FIRST_VERDICT_FILE.name} is {REGENERATE}"
    assert computed["numbers"] == SHIPPED["numbers"], f"{FIRST_VERDICT_FILE.name} is {REGENERATE}"
    assert SHIPPED["numbers"]["k"] == HOME_DEFAULTS["home_k"]


def test_the_default_inputs_use_it(scenarios):
    """A first visit (no widget drawn yet) and a later run with every widget at its default both use it."""
    first = shipped_verdict(default_settings(), {}, scenarios)
    assert first is not None and first["numbers"] == StripNumbers(**SHIPPED["numbers"])
    assert first["intervention"].startswith("1 · ") and first["label"] == "JSD" and first["alpha"] == 0.05
    drawn = {**HOME_DEFAULTS, "home_perturbation": SHIPPED["perturbation"], "home_k_limit": 200}
    assert shipped_verdict(default_settings(), drawn, scenarios) == first


def _other_inputs(scenarios):
    """Every page input and sidebar setting moved off its default, one at a time."""
    changed = {"home_scenario": "customer_support", "home_k": 41, "home_alpha": 0.01, "home_statistic": "centroid",
               "home_b": 400, "home_resample": 1, "home_perturbation": "paraphrase_2"}
    assert set(changed) == {*HOME_DEFAULTS, "home_perturbation"}  # a new input must be added here
    for name, value in changed.items():
        yield name, default_settings(), {name: value}
    base = default_settings()
    for name, settings in {
        "seed": dataclasses.replace(base, seed=1),
        "temperature": dataclasses.replace(base, sampler=SamplerConfig("simulated", temperature=0.9, max_tokens=128)),
        "max tokens": dataclasses.replace(base, sampler=SamplerConfig("simulated", temperature=1.0, max_tokens=64)),
        "backend": dataclasses.replace(base, sampler=SamplerConfig("recorded")),
        "embedder": dataclasses.replace(base, embedder=EmbedderConfig("openai", model="text-embedding-3-small")),
        "a typed key": dataclasses.replace(base, keys=dataclasses.replace(base.keys, sampler="sk-typed")),
        "a sidebar problem": dataclasses.replace(base, problem="`Base URL` is not a URL"),
    }.items():
        yield name, settings, {}


def test_no_other_input_ever_uses_it(scenarios):
    for name, settings, state in _other_inputs(scenarios):
        assert shipped_verdict(settings, state, scenarios) is None, name


@pytest.mark.parametrize(("field", "value"), [("key", "0" * 64), ("version", "0.0.0"), ("perturbation", "paraphrase_2")])
def test_a_file_that_does_not_match_the_request_is_not_used(scenarios, field, value):
    assert shipped_verdict(default_settings(), {}, scenarios, shipped={**SHIPPED, field: value}) is None


def _strip(at) -> str:
    return next(m.value for m in at.markdown if 'data-testid="dbpa-verdict"' in m.value)


def test_the_page_shows_it_first_then_the_same_strip_from_its_own_result(tmp_path, monkeypatch):
    """On the page: the default view draws the shipped strip, and the strip its own result draws over it
    reads the same, character for character; moving α then never shows the shipped strip."""
    at = prepare(tmp_path, monkeypatch)
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["_verdict_shipped"] is True
    shown = shipped_verdict(default_settings(), {}, load_scenarios())
    assert _strip(at) == strip_html(shown["numbers"], shown["alpha"], intervention=shown["intervention"],
                                    label=shown["label"], simulated=True)
    at.select_slider(key="home_alpha").set_value(0.1).run()
    assert not at.exception, at.exception
    assert at.session_state["_verdict_shipped"] is False
    assert "at α = 0.1" in _strip(at)
