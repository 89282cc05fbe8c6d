"""Figures: the permutation null stays readable, and its replay adds the re-splits in order."""

from __future__ import annotations

import numpy as np
import pytest

from dbpa_core import dbpa_test
from dbpa_core.present.figures import null_histogram


@pytest.fixture(scope="module")
def results():
    rng = np.random.default_rng(0)
    same = dbpa_test(rng.normal(size=(20, 16)), rng.normal(size=(20, 16)), discrepancy="centroid",
                     n_resamples=800, rng=1)
    shifted = dbpa_test(rng.normal(size=(20, 16)), rng.normal(size=(20, 16)) + 3.0, discrepancy="centroid",
                        n_resamples=800, rng=1)
    return same, shifted


def bar_total(figure) -> int:
    return int(sum(np.sum(trace.y) for trace in figure.data))


def test_every_resplit_is_counted(results):
    for result in results:
        assert bar_total(null_histogram(result)) == 800
        assert bar_total(null_histogram(result, shown=80)) == 80


def test_far_observed_breaks_the_axis(results):
    same, shifted = results
    figure = null_histogram(shifted, label="T")
    assert shifted.statistic > figure.layout.xaxis.range[1]  # the null keeps the axis, not T_obs
    assert any("axis broken" in a.text for a in figure.layout.annotations)
    # the null spreads over many bars instead of one
    assert np.count_nonzero(sum(np.asarray(t.y) for t in figure.data)) >= 10
    near = null_histogram(same, label="T")
    assert near.layout.xaxis.range[0] <= same.statistic <= near.layout.xaxis.range[1]
    assert not any("axis broken" in (a.text or "") for a in near.layout.annotations)


def test_a_few_outlying_resplits_go_to_an_overflow_bar():
    result = type("R", (), {})()
    null = np.concatenate([np.random.default_rng(2).normal(1.0, 0.1, 796), [9.0, 9.5, 10.0, 12.0]])
    result.null_distribution, result.statistic, result.alternative = null, 1.05, "greater"
    figure = null_histogram(result)
    assert figure.layout.xaxis.range[1] < 3  # not stretched to 12
    assert bar_total(figure) == 800
    assert any("+ 4 re-splits" in a.text for a in figure.layout.annotations)


def test_replay_frames_build_the_null_in_order(results):
    _, shifted = results
    figure = null_histogram(shifted, label="T", replay_frames=10)
    sizes = [int(frame.name) for frame in figure.frames]
    assert sizes == list(range(80, 801, 80))
    for frame, b in zip(figure.frames, sizes):
        assert int(sum(np.sum(t.y) for t in frame.data)) == b
    np.testing.assert_array_equal(figure.frames[-1].data[0].y, figure.data[0].y)
    slider = figure.layout.sliders[0]
    assert slider.currentvalue.prefix == "b = " and slider.currentvalue.suffix == " / 800"
    assert figure.layout.xaxis.range == null_histogram(shifted, label="T").layout.xaxis.range  # fixed axes


def test_one_colour_per_model_and_an_alpha_line():
    from dbpa_core import roc_analysis
    from dbpa_core.present.roc_figures import rates_over_alpha, roc_curves

    rng = np.random.default_rng(3)
    target = np.r_[np.zeros(20, bool), np.ones(20, bool)]
    curves = {name: roc_analysis(np.r_[rng.uniform(size=20), rng.uniform(0, scale, size=20)], target)
              for name, scale in (("model A", 0.1), ("model B", 0.6))}
    rates, roc = rates_over_alpha(curves), roc_curves(curves)
    for name in curves:
        colours = {t.line.color for t in rates.data if t.name.endswith(name)}
        colours |= {t.line.color for t in roc.data if t.name.startswith(name)}
        assert len(colours) == 1, f"{name} is drawn in {colours}"
    assert len({t.line.color for t in roc.data if t.name != "chance"}) == 2
    alpha_line = next(t for t in rates.data if t.name.startswith("y = α"))
    np.testing.assert_array_equal(alpha_line.x, alpha_line.y)
    assert rates.layout.xaxis.type == "log" and "0.05" in rates.layout.xaxis.ticktext


def test_nine_models_never_share_a_colour():
    """The paper's nine models (Fig. 1) once wrapped round an eight-colour palette: GPT-2 and GPT-4 in the
    same green.  Each model has its own colour; more models than colours is an error, not a lookalike."""
    from dbpa_core import roc_analysis
    from dbpa_core.present.figures import MODEL_COLOURS, model_colour
    from dbpa_core.present.roc_figures import rates_over_alpha, roc_curves

    rng = np.random.default_rng(4)
    target = np.r_[np.zeros(10, bool), np.ones(10, bool)]
    curves = {f"model {i}": roc_analysis(rng.uniform(size=20), target) for i in range(9)}
    roc = roc_curves(curves)
    assert len({t.line.color for t in roc.data if t.name != "chance"}) == 9
    tpr = [t.line.color for t in rates_over_alpha(curves).data if t.name.startswith("TPR")]
    assert len(set(tpr)) == 9
    with pytest.raises(ValueError, match="at most 16 models"):
        model_colour(len(MODEL_COLOURS))


def test_log_axes_are_labelled_with_plain_numbers():
    """Log axes once read "5 0.1 2 5 1 2 5 10 2" (Stability) and "4, 3, 2, 0.1, 9, 8" (the sequential boundary):
    every tick is a whole number as a person writes it."""
    from dbpa_core.present.figures import log_axis

    axis = log_axis([[0.05, 0.1, 0.2], np.array([1.0, 5.0, 20.0])])  # ragged parts: paths and a boundary
    assert axis["type"] == "log"
    assert axis["ticktext"] == ["0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20"]
    assert log_axis([0.0, -1.0]) == {"type": "log"}  # nothing positive: Plotly's own axis


def test_best_model_bars_outline_only_a_declared_best():
    """Fig. 2: TPR at each allowed FPR per model; the best is outlined, none on a tie."""
    from dbpa_core import roc_analysis
    from dbpa_core.present.roc_figures import best_model_bars

    strong = roc_analysis([0.001, 0.002, 0.5, 0.6, 0.7], [True, True, False, False, False])
    weak = roc_analysis([0.3, 0.002, 0.001, 0.6, 0.7], [True, True, False, False, False])
    figure = best_model_bars({"strong": strong, "weak": weak}, {0.01: "strong", 0.05: None})
    first, second = figure.data
    assert list(first.y) == [1.0, 0.0] and first.marker.line.color == ("black", "rgba(0,0,0,0)")
    assert set(second.marker.line.color) == {"rgba(0,0,0,0)"}  # no best declared: nothing outlined
    assert [t.name for t in figure.data] == ["allowed FPR 1 %", "allowed FPR 5 %"]  # the project's "5 %"
    assert list(first.text) == ["100 %", "0 %"]


def test_power_curve_title_writes_alpha_as_the_planner_caption_does():
    """The planner's title read "Power at α = 0.00625" above a caption reading "α/m = 0.0063" (user trial 5):
    both write α/m = 0.05/8 to two significant digits."""
    from types import SimpleNamespace

    from dbpa_core.present.figures import power_curve

    power = np.array([0.3, 0.8])
    curve = SimpleNamespace(sample_sizes=[10, 20], power=power, ci_low=power - 0.1, ci_high=power + 0.1,
                            alpha=0.05 / 8, n_trials=60)
    assert power_curve(curve).layout.title.text == f"Power at α = {0.05 / 8:.2g} (60 simulated audits per k)"
    assert power_curve(curve).layout.title.text.startswith("Power at α = 0.0063 (")


def test_the_null_names_the_observed_value_as_a_reader_writes_it(results):
    """No raw "T_obs" on the chart (a user trial read it in the title and the legend), and no "T" at all: the
    home page calls the centroid distance T (trial 7 read "T_obs = 0.0113" for a JSD); plain words, and the
    label sits off its dashed line."""
    same, shifted = results
    for result in results:
        figure = null_histogram(result, label="JSD", replay_frames=4)
        assert "T_obs" not in figure.to_json() and "T<sub>" not in figure.to_json()
        assert figure.layout.title.text.endswith("re-splits ≥ the observed")
        assert figure.data[0].name == "re-splits less extreme than the observed"
        assert any(a.text.startswith("observed = ") for a in figure.layout.annotations)
    (label,) = [a for a in null_histogram(same, label="JSD").layout.annotations if a.text.startswith("observed")]
    assert abs(label.xshift) >= 4


def test_bar_labels_write_a_pvalue_at_its_floor_as_the_table_does(results):
    """Table 2's chart read "p = 0.001" where the table beside it read "≤ 0.001" (user trial 5): given the
    tests' B, a p at its floor 1/(B+1) is labelled "p ≤ …"; a p above the floor, and an adjusted p (no B
    given), keep "= …"."""
    from dbpa_core.present.figures import discrepancy_bars
    from dbpa_core.present.formatting import format_pvalue

    same, shifted = results
    assert shifted.pvalue == pytest.approx(1 / 801) and same.pvalue > 0.01  # the fixture's floor and a plain p
    pvalues = [same.pvalue, shifted.pvalue]
    figure = discrepancy_bars(["same", "shifted"], [same.statistic, shifted.statistic], pvalues, alpha=0.05,
                              title="t", pvalue_label="p", n_resamples=[800, 800], exact=[False, False])
    assert list(figure.data[0].text) == [f"p = {format_pvalue(same.pvalue)}", "p ≤ 0.0013"]  # 1/801 = 0.00125: a bound rounds up
    assert list(figure.data[0].text)[1] == f"p {format_pvalue(shifted.pvalue, 800)}"
    one_b = discrepancy_bars(["same", "shifted"], [1, 2], pvalues, alpha=0.05, title="t", pvalue_label="p",
                             n_resamples=800)
    assert list(one_b.data[0].text) == list(figure.data[0].text)
    adjusted = discrepancy_bars(["same", "shifted"], [1, 2], pvalues, alpha=0.05, title="t")
    assert list(adjusted.data[0].text)[1] == f"adjusted p = {format_pvalue(shifted.pvalue)}"
    with pytest.raises(ValueError, match="`n_resamples` and `exact` must be one value or one per bar"):
        discrepancy_bars(["a", "b"], [1, 2], pvalues, alpha=0.05, title="t", n_resamples=[800])
