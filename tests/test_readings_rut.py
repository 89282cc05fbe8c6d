"""Unit tests of the RUT result's readings, figures and record (dbpa_core.present.rut_readings, present.formatting, present.figures,
present.exports), moved here from the model-audit page's AppTest file (issue 46: statistics that pages show are
tested in the core, not through the UI)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dbpa_core.present.records import rut_record
from dbpa_core.present.rut_figures import rank_ecdf, rank_histogram
from dbpa_core.present.formatting import format_rut_pvalue
from dbpa_core.present.rut_readings import read_rut_decision, rut_strip
from dbpa_core.rut.data import AuditScores
from dbpa_core.rut.uniformity import rank_uniformity_test


def test_rut_pvalue_never_reads_zero():
    assert format_rut_pvalue(0.0) == "< 0.001"
    assert format_rut_pvalue(0.0004) == "< 0.001"
    assert format_rut_pvalue(0.034) == "0.034"
    assert "5 % of audits" in read_rut_decision(0.01, 0.05)
    assert "not proof" in read_rut_decision(0.5, 0.05)


@pytest.mark.parametrize(("pvalue", "bound"), [(0.161, 0.0), (0.0004, 0.42), (0.03, 0.07)])
def test_a_rut_result_writes_every_percentage_as_the_project_does(pvalue, bound):
    """One style in one result block, "5 %" with a space (format_share): before, "16.1%" and "the 95% lower
    bound" stood next to "in only 5 % of audits"."""
    from types import SimpleNamespace

    from dbpa_core.present.formatting import format_percent
    from dbpa_core.present.rut_readings import read_share_bound, rut_readings

    result = SimpleNamespace(statistic=0.273, pvalue=pvalue, n_prompts=4, ks_statistic=0.553, ks_pvalue=0.113,
                             share_lower_bound=bound, confidence_level=0.95)
    text = " ".join([*rut_readings(result), read_rut_decision(pvalue, 0.05), read_share_bound(bound)])
    assert "%" in text and not re.search(r"\d%", text), text
    assert "95 % lower bound" in text
    assert format_percent(0.161, 1) == "16.1 %" and format_percent(0.05) == "5 %"


def test_the_ks_baseline_never_reads_p_equal_to_zero():
    from dbpa_core.present.rut_readings import read_rut_ks

    # D = 0.391 over 100 ranks: scipy's exact p ≈ 1e-14, which format_number wrote "0" ("p = 0").
    assert "p < 0.001 (" in read_rut_ks(0.391, 1.2e-14) and "p = 0 " not in read_rut_ks(0.391, 1.2e-14)
    assert "p = 0.113 (" in read_rut_ks(0.553, 0.113)


def test_figures_span_the_unit_interval_and_record_is_complete():
    rng = np.random.default_rng(0)
    scores = AuditScores(("a", "b", "c"), rng.normal(size=3), rng.normal(size=(3, 4)), dropped=("d",))
    result = rank_uniformity_test(scores.target_scores, scores.reference_scores, rng=0)
    assert tuple(rank_histogram(result).layout.xaxis.range) == (0, 1)
    assert rank_histogram(result).data[-1].name == "expected if it is the reference model"  # in the legend
    assert tuple(rank_ecdf(result).layout.xaxis.range) == (0, 1)
    record = rut_record(result, scores, alpha=0.05, score="log_rank", target="x")
    assert record["dropped_prompts"] == ["d"] and len(record["ranks"]) == 3 and record["pvalue"] == result.pvalue
    assert dict(rut_strip(result, 0.05))["Prompts"] == "3"
    assert record["share_lower_bound"] == result.share_lower_bound and "lower bound" in record["share_reading"]
