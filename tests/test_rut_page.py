"""AppTest of the 'Is this the claimed model?' page (pages/model_audit.py) and its core helpers."""

from __future__ import annotations

import numpy as np
import pytest

from dbpa_core.present.exports import rut_record
from dbpa_core.present.figures import rank_ecdf, rank_histogram
from dbpa_core.present.readings import format_rut_pvalue, read_rut_decision, rut_strip
from dbpa_core.rut.collect import REFERENCE_TEMPERATURE, target_request
from dbpa_core.rut.data import AuditScores
from dbpa_core.rut.uniformity import rank_uniformity_test
from test_app import metric, open_page, start


@pytest.fixture
def page(tmp_path, monkeypatch):
    return open_page(start(tmp_path, monkeypatch), "model_audit")


def test_default_view_reads_its_result_and_never_calls_a_rejection_success(page):
    """The default target is the reference model itself (H₀ holds): the recorded audit does not reject, and
    says so in an information box, never a success box."""
    assert not page.success
    p = metric(page, "p-value")
    assert metric(page, "Decision") == "FAIL TO REJECT H₀" and float(p) > 0.05
    assert not page.warning
    (box,) = page.info
    assert "rank like the claimed model" in box.value and "The reference model itself" in box.value
    assert any("The reference model itself" in m.value for m in page.markdown)  # the target beside the result
    assert "W² =" in " ".join(c.value for c in page.caption)


def test_a_rejection_is_a_warning_with_the_target_named(page):
    page.selectbox(key="rut_target").set_value("simulated_model").run()
    assert not page.exception
    assert metric(page, "Decision") == "REJECT H₀"
    assert not page.success
    (box,) = page.warning
    assert "Text from another model" in box.value and "5% of audits" in box.value


def test_power_curve_is_only_shown_for_the_inputs_it_was_computed_for(page):
    page.selectbox(key="rut_target").set_value("jailbreak_system").run()
    page.number_input(key="rut_trials").set_value(20).run()
    next(b for b in page.button if b.key == "rut_power").click().run()
    assert not page.exception and any("AUC" in c.value for c in page.caption)
    page.number_input(key="rut_n").set_value(8).run()
    assert not any("AUC" in c.value for c in page.caption)
    assert any("for other inputs" in c.value for c in page.caption)


def test_live_endpoint_target_takes_no_system_prompt(tmp_path, monkeypatch):
    at = open_page(start(tmp_path, monkeypatch), "model_audit")
    at.radio(key="rut_mode").set_value("Live: local model (slow)").run()
    assert at.text_input(key="rut_system").value.startswith("You are a pirate")  # the local stand-in's default
    at.selectbox(key="rut_source").set_value("openai").run()
    assert not any(t.key == "rut_system" for t in at.text_input)
    assert target_request("openai", system="You are a pirate.", temperature=1.3) == (None, REFERENCE_TEMPERATURE)
    assert target_request("upload", system="You are a pirate.", temperature=1.3) == (None, REFERENCE_TEMPERATURE)
    assert target_request("local", system="You are a pirate.", temperature=1.3) == ("You are a pirate.", 1.3)
    with pytest.raises(ValueError, match="`source`"):
        target_request("vllm", system=None, temperature=0.7)


def test_rut_pvalue_never_reads_zero():
    assert format_rut_pvalue(0.0) == "< 0.001"
    assert format_rut_pvalue(0.0004) == "< 0.001"
    assert format_rut_pvalue(0.034) == "0.034"
    assert "5% of audits" in read_rut_decision(0.01, 0.05)
    assert "not proof" in read_rut_decision(0.5, 0.05)


def test_figures_span_the_unit_interval_and_record_is_complete():
    rng = np.random.default_rng(0)
    scores = AuditScores(("a", "b", "c"), rng.normal(size=3), rng.normal(size=(3, 4)), dropped=("d",))
    result = rank_uniformity_test(scores.target_scores, scores.reference_scores, rng=0)
    assert tuple(rank_histogram(result).layout.xaxis.range) == (0, 1)
    assert tuple(rank_ecdf(result).layout.xaxis.range) == (0, 1)
    record = rut_record(result, scores, alpha=0.05, score="log_rank", target="x")
    assert record["dropped_prompts"] == ["d"] and len(record["ranks"]) == 3 and record["pvalue"] == result.pvalue
    assert dict(rut_strip(result, 0.05))["Prompts"] == "3"
