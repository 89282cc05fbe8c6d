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
    return next(h.body for h in at.html if 'data-testid="dbpa-verdict"' in h.body)


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


def _record_the_first_run(tmp_path, monkeypatch, **sidebar):
    """The home page's first run with the order of its strip, its pause and the shared sidebar recorded."""
    import types

    from dbpa_app.ui import first_verdict, sidebar as shared

    order = []
    draw_shipped, draw_shared = first_verdict.draw_shipped_verdict, shared.draw_shared

    def shipped(slot, settings, state, scenarios):
        drawn = draw_shipped(slot, settings, state, scenarios)
        order.append("strip" if drawn else "no strip")
        return drawn

    monkeypatch.setattr(first_verdict, "draw_shipped_verdict", shipped)
    monkeypatch.setattr(shared, "draw_shared", lambda: order.append("sidebar") or draw_shared())
    monkeypatch.setattr(first_verdict, "time", types.SimpleNamespace(sleep=lambda s: order.append(("pause", s))))
    at = prepare(tmp_path, monkeypatch, **sidebar)
    at.run()
    assert not at.exception, at.exception
    return at, order


def test_a_first_visit_gets_the_strip_before_the_sidebar(tmp_path, monkeypatch):
    """A fresh session: the shipped strip, a pause the browser draws it in (issue 45: drawn with the sidebar,
    it waited for the widgets' scripts), then the sidebar, whose settings are the defaults the strip assumed;
    the strip is not drawn again.  A later run draws the sidebar first, as every other page does."""
    from dbpa_app.ui.first_verdict import STRIP_ALONE_SECONDS

    at, order = _record_the_first_run(tmp_path, monkeypatch)
    assert order == ["strip", ("pause", STRIP_ALONE_SECONDS), "sidebar"], order
    assert at.session_state["settings"] == default_settings() and at.session_state["_verdict_shipped"] is True
    assert "Changed the answers" in _strip(at) or "No change detected" in _strip(at)
    order.clear()
    at.run()
    assert order == ["sidebar", "strip"], order


def test_a_session_with_a_sidebar_setting_never_gets_it_early(tmp_path, monkeypatch):
    """A sidebar value already in the session (a widget drawn, or set before the first run): no early strip
    and no pause; the sidebar first, and the strip from the page's own result."""
    at, order = _record_the_first_run(tmp_path, monkeypatch, seed=1)
    assert order == ["sidebar", "no strip"], order
    assert at.session_state["_verdict_shipped"] is False and "at α = 0.05" in _strip(at)


def test_every_sidebar_key_is_known_to_the_early_check():
    """``sidebar_untouched`` reads the sidebar's keys by their prefixes: every key the sidebar stores, for
    every backend and embedder, must start with one of them (a new widget without one would let a changed
    setting show the shipped strip for a moment)."""
    from streamlit.testing.v1 import AppTest

    from dbpa_app.ui.sidebar import SIDEBAR_KEY_PREFIXES

    def draw(backend, embedder):
        import streamlit as st

        from dbpa_app.ui.sidebar import sidebar

        # What the previous run stored (a widget's value is in the state from the run after it was drawn).
        st.session_state["_stored"] = sorted(str(key) for key in st.session_state.keys() if key != "_stored")
        st.session_state.setdefault("backend", backend)
        st.session_state.setdefault("embedder", embedder)
        sidebar()

    for backend in ("simulated", "local", "openai", "recorded"):
        for embedder in ("minilm", "openai"):
            at = AppTest.from_function(draw, args=(backend, embedder)).run().run()
            assert not at.exception, at.exception
            stored = at.session_state["_stored"]
            assert [key for key in stored if not key.startswith(SIDEBAR_KEY_PREFIXES)] == [], (backend, embedder)
            assert {"backend", "embedder", "seed"} <= set(stored), stored  # the run drew the sidebar
            assert len(stored) >= (3 if backend == "recorded" else 5) + (3 if embedder == "openai" else 0), stored
