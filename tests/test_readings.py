"""Tests of dbpa_core.present.readings"""

import pytest

from dbpa_core import significance_stars
from dbpa_core.present.readings import decision, read_decision, read_pvalue


@pytest.mark.parametrize(("p", "stars"), [
    (0.0, "***"), (0.000999, "***"), (0.001, "**"), (0.00999, "**"), (0.01, "*"),
    (0.0499, "*"), (0.05, ""), (1.0, ""),
])
def test_stars_boundaries(p, stars):
    assert significance_stars(p) == stars


def test_stars_bad_input():
    with pytest.raises(ValueError, match="`pvalue`"):
        significance_stars(1.5)


def test_readings():
    assert decision(0.01, 0.05) == "REJECT H₀"
    assert decision(0.05, 0.05) == "REJECT H₀"
    assert decision(0.2, 0.05) == "FAIL TO REJECT H₀"
    assert "1.0 %" in read_pvalue(0.01, 999)
    assert "not proof" in read_decision(0.3, 0.05)


def test_pvalue_at_its_floor_reads_as_the_floor():
    from dbpa_core.present.formatting import format_pvalue, pvalue_floor_note
    from dbpa_core.stats.permutation import resampling_floor

    assert resampling_floor(799) == 1 / 800
    assert format_pvalue(1 / 800, 799) == "≤ 0.0013"  # short: a metric card never cuts it (issue 29)
    assert format_pvalue(1 / 1001, 1000) == "≤ 0.001"
    assert format_pvalue(2 / 800, 799) == "0.0025"
    assert format_pvalue(1 / 20, 20, exact=True) == "≤ 0.05"
    assert pvalue_floor_note(1 / 800, 799) == "floor 1/(B+1)" and pvalue_floor_note(2 / 800, 799) == ""
    assert pvalue_floor_note(1 / 20, 20, exact=True) == "floor 1/N"
    assert format_pvalue(3e-7) == "3 × 10⁻⁷"
    assert format_pvalue(1 / 800) == "0.0013"  # without B nothing is known about the floor
    sentence = read_pvalue(1 / 1001, 1000)
    assert "None of the 1,000 random re-splits" in sentence and "floor 1/(B+1) = 0.000999" in sentence
    # the equality's three digits are the number under the bound's two (1/801 read "= 0.0012" beside "≤ 0.0013")
    assert "1/(B+1) = 0.00125" in read_pvalue(1 / 801, 800) and format_pvalue(1 / 801, 800) == "≤ 0.0013"


def test_negative_effect_is_explained():
    from dbpa_core.present.readings import read_effect

    assert "less* different" in read_effect(-0.01, -0.5)
    assert "Negative" not in read_effect(0.01, 0.5)
    # every positive size has a word (1–3 null standard deviations had none); a negative one has none: the
    # observed split is less different than chance ("-1.6 null standard deviations (moderate)" misled)
    assert [read_effect(0.01, z).split("deviations")[1].split(".")[0] for z in (0.5, 1.0, 2.9, 3.0, 12.0)] == [
        " (small)", " (moderate)", " (moderate)", " (large)", " (large)"]
    for z in (-0.99, -1.6, -2.5, -4.0):
        assert "deviations. Negative: the observed split is *less* different" in read_effect(-0.01, z)
    # a z that rounds to zero is "+0.0", never "-0.0"
    assert "+0.0 null standard deviations (small)." in read_effect(-1.89e-4, -0.04)


def test_readings_give_a_number_as_its_card_does():
    """A user trial read "Observed JSD 0.27" on the card, T_obs = 0.27 on the chart and "0.2699" in the
    sentence below; "-0.0458" beside "-0.04581". Every reading now uses the cards' format_number."""
    from dbpa_core.present.formatting import format_number
    from dbpa_core.present.readings import read_effect, read_statistic

    sentence = read_statistic(0.26994, 0.19331, "JSD")
    assert sentence.startswith(f"The observed JSD is {format_number(0.26994)}; ") and "0.2699" not in sentence
    assert "gives 0.193 on average" in sentence
    assert read_effect(-0.045812, -0.4).startswith("Effect size -0.0458: ")
    assert read_effect(0.024112, 2.0).startswith("Effect size +0.0241: ")


def test_numbers_for_people():
    """One formatting for every number shown (issue 29): significant digits, scientific notation outside
    [0.001, 10⁵), floating-point noise as 0 (an sd of 8.6e-17 once read "0000000008")."""
    from dbpa_core.present.formatting import counted, format_number, format_share

    assert format_number(8.6e-17) == "0"
    assert format_number(0.65451) == "0.655" and format_number(0.65451, 4) == "0.6545"
    assert format_number(2.5e-5) == "2.5 × 10⁻⁵" and format_number(-3.25e7) == "-3.25 × 10⁷"
    assert format_number(123456) == "123,456" and format_number(12.0) == "12"
    assert format_number(float("nan")) == "—"

    assert [counted(1, "item"), counted(2, "item"), counted(5, "more arm"), counted(0, "rewrite")] == [
        "1 item", "2 items", "5 more arms", "0 rewrites"]
    assert format_share(0.569) == "57 %" and format_share(0.995) == ">99 %" and format_share(1.0) == "100 %"
    assert format_share(0.004) == "<1 %" and format_share(0.0) == "0 %"


def test_log_ticks_are_plain_numbers():
    """A log axis is labelled 1–2–5 per decade while few, whole decades when many; never a bare mantissa."""
    from dbpa_core.present.formatting import log_ticks

    values, labels = log_ticks(0.05, 12)
    assert values == pytest.approx([0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10])
    assert labels == ["0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10"]
    values, labels = log_ticks(1e-6, 1e6)
    assert labels == ["1 × 10⁻⁶", "1 × 10⁻⁴", "0.01", "1", "100", "10,000", "1 × 10⁶"]  # every second decade
    assert log_ticks(2.1, 2.9)[0] == [2.1, 2.9]  # inside one step: the ends
    with pytest.raises(ValueError, match="`low` and `high` must be positive"):
        log_ticks(0, 1)


def test_tables_are_shown_for_people_and_keep_their_numbers():
    """The screen's formatters: p-values short, shares as percentages, floating-point noise as 0 (the alignment
    table once showed an sd of 8.6e-17 as "0000000008"); the frame itself keeps its numbers."""
    import pandas as pd

    from dbpa_core.present.formatting import people_formatters, people_frame

    frame = pd.DataFrame({"model": ["a", "b"], "ω sd": [8.6e-17, 0.0123456], "p": [0.0004, 0.5],
                          "true effect (simulated)": [0.569, 0.0], "TPR at FPR ≤ 5%": [0.8, 0.25],
                          "targets": [40, 1200], "differs": [True, False], "controls p < .05 · this project": [0.225, 1.0]})
    shown = people_frame(frame)
    assert list(shown["differs"]) == ["yes", "no"]  # not Python's True / False
    assert list(shown["controls p < .05 · this project"]) == ["22 %", "100 %"]  # a share, as the TPR beside it
    assert list(shown["ω sd"]) == ["0", "0.0123"]
    assert list(shown["p"]) == ["0.0004", "0.500"]
    assert list(shown["true effect (simulated)"]) == ["57 %", "0 %"]
    assert list(shown["TPR at FPR ≤ 5%"]) == ["80 %", "25 %"]
    assert list(shown["targets"]) == ["40", "1,200"]
    assert "model" not in people_formatters(frame) and frame["ω sd"].iloc[0] == 8.6e-17


@pytest.mark.parametrize("n", [4, 10, 40, 200])
def test_the_rut_sentence_quotes_the_5_percent_point_of_the_p_value_beside_it(n):
    """The W² sentence's "more than c in only 5 % of audits" is the point of the same finite-n law scipy's
    p-value uses: at c, scipy's p is 0.05; a trial read W² = 0.456 with p = 0.046 beside "more than 0.46"."""
    from scipy.stats._hypotests import _cdf_cvm

    from dbpa_core.present.rut_readings import read_rut_statistic
    from dbpa_core.stats.cvm import cvm_critical_value

    critical = cvm_critical_value(n)
    assert 1 - _cdf_cvm(critical, n) == pytest.approx(0.05, abs=1e-5)
    assert 0.44 < critical < 0.462
    sentence = read_rut_statistic(0.456, n)
    assert f"more than {critical:.3f} in only 5 % of audits of {n} prompts" in sentence


def test_an_exact_test_reads_as_every_split_not_random_re_splits():
    """k = 4 per arm: the test enumerates all C(8, 4) = 70 splits, so p is exact; the reading says so and
    never "random re-splits … tried" (trial 5), nor that more re-splits could lower a floor it has reached."""
    from dbpa_core import dbpa_test

    import numpy as np

    data = np.random.default_rng(2)
    result = dbpa_test(data.normal(size=(4, 3)), data.normal(size=(4, 3)) + 0.3, n_resamples=200, rng=0)
    assert result.exact and result.n_resamples == 70
    sentence = read_pvalue(result.pvalue, result.n_resamples, exact=True)
    assert "random" not in sentence and "tried" not in sentence and "about" not in sentence
    assert "of all 70 splits of the pooled outputs (every split was counted: p is exact)" in sentence
    assert f"in {round(result.pvalue * 100, 1)} %" in sentence
    floor = read_pvalue(1 / 70, 70, exact=True)
    assert floor.startswith("Of all 70 splits of the pooled outputs, only the observed one") and "1/N = 0.0143" in floor
    assert "re-splits" not in floor
    assert "about 20.0 % of random re-splits of the 1,000 tried" in read_pvalue(0.2, 1000)  # a random test is unchanged


def test_a_familys_verb_agrees_with_its_count():
    from dbpa_core.present.readings import read_family

    assert read_family(1, 6, 0.05, "bonferroni").startswith(
        "1 of 6 perturbations is declared to change the output distribution (Bonferroni correction;")
    assert read_family(2, 6, 0.05, "holm").startswith("2 of 6 perturbations are declared")
    assert read_family(0, 1, 0.05, "bonferroni").startswith("0 of 1 perturbation are declared")
    assert read_family(1, 3, 0.05, "bonferroni", noun="model", claim="declared to answer differently").startswith(
        "1 of 3 models is declared to answer differently (")


def test_an_exact_tests_chance_level_reads_as_every_split():
    """The sentence over the chance level and the null chart's caption say "every split" when the test counted
    every split of the pooled outputs (k = 4 per arm: 70), "at random" / "random re-splits" otherwise."""
    from dbpa_core.present.readings import null_splits, read_statistic

    exact = read_statistic(0.9, 0.3, "JSD", exact=True)
    assert "splitting the same outputs in every possible way gives 0.3 on average" in exact and "random" not in exact
    assert "re-splitting the same outputs at random gives 0.3" in read_statistic(0.9, 0.3, "JSD")
    assert null_splits(True) == "every split of the pooled outputs"
    assert null_splits(False) == "random re-splits of the pooled outputs"


def test_a_single_theme_count_reads_as_a_sentence():
    """One number of themes tried reads "with 8 outputs, 2 is the only number of themes tried", not "(2 the only
    number possible)"; several read "3 chosen by silhouette among 2–6"."""
    from types import SimpleNamespace

    from dbpa_core.present.explanation_readings import read_explanation_method

    one = SimpleNamespace(n_x=4, n_y=4, candidates=(2,), n_clusters=2, n_resamples=70, exact=True)
    assert "(with 8 outputs, 2 is the only number of themes tried)" in read_explanation_method(one)
    many = SimpleNamespace(n_x=20, n_y=20, candidates=(2, 3, 4, 5, 6), n_clusters=3, n_resamples=1000, exact=False)
    assert "(3 chosen by silhouette among 2–6)" in read_explanation_method(many)


def test_a_persona_grids_p_at_its_floor_reads_as_a_bound():
    """The live persona table writes a p at its floor 1/(B+1) "≤ 0.001", as the paper view's table and the
    chart do (a trial read "0.001" beside the heatmap's "***"); other p as they are."""
    import numpy as np

    from dbpa_core.audit.experiments import PersonaGrid
    from dbpa_core.present.formatting import people_frame

    grid = PersonaGrid(("nurse", "child"), ("control", "target"), ("m1", "m2"), np.array([[0.1, 0.2], [0.3, 0.4]]),
                       np.array([[1 / 1001, 0.25], [0.0123, 1 / 70]]), "jsd", ((1000, False), (70, True)))
    shown = people_frame(grid.table())
    assert list(shown["p m1"]) == ["≤\u00a00.001", "0.012"]
    assert list(shown["p m2"]) == ["0.250", "≤\u00a00.015"]  # exact: the floor is 1/N = 0.0143, a bound rounded up
    assert grid.table()["p m1"].iloc[0] == 1 / 1001  # the CSV keeps the number


def test_a_floor_is_written_as_a_true_bound():
    """p at its floor reads "≤ x" with x rounded *up*: 1/70 = 0.0143 is not "≤ 0.014", 1/16 = 0.0625 not
    "≤ 0.062", 1/801 = 0.00125 not "≤ 0.0012"; floors that round to themselves are unchanged."""
    from dbpa_core.present.formatting import format_pvalue
    from dbpa_core.stats.permutation import resampling_floor

    cases = {(70, True): "≤ 0.015", (16, True): "≤ 0.063", (800, False): "≤ 0.0013", (1000, False): "≤ 0.001",
             (999, False): "≤ 0.001", (200, False): "≤ 0.005", (100, False): "≤ 0.01"}
    for (b, exact), text in cases.items():
        floor = resampling_floor(b, exact=exact)
        assert format_pvalue(floor, b, exact=exact) == text, (b, exact)
        assert float(text.removeprefix("≤ ")) >= floor  # a true bound


def test_aucs_at_chance_are_read_with_what_a_small_k_means():
    from dbpa_core.present.paper_readings import read_chance_aucs

    assert read_chance_aucs({"a": 0.9, "b": 0.61}) == ""
    sentence = read_chance_aucs({"a": 0.9, "b": 0.46, "c": 0.48}, k=5)
    assert sentence.startswith("AUC near or below 0.5 — b (0.46), c (0.48): here the test told targets from "
                               "controls no better than chance with k = 5 outputs per arm.")
    assert "a (" not in sentence and "raise k or the replicates" in sentence


def test_an_alpha_below_the_pvalue_floor_is_said_unreachable_not_chance():
    from dbpa_core.present.readings import read_decision, read_unreachable

    # Home page, Earth → Mars at α = 0.001 with B = 800: p at its floor 1/801 (issue 42 read "within what chance
    # produces").
    sentence = read_decision(1 / 801, 0.001, n_resamples=800)
    assert "within what chance produces" not in sentence
    assert sentence == ("p > α = 0.001, and no change is declared. No p of this test can reach the level: α = 0.001 "
                        "asks p ≤ 0.001, but with B = 800 re-splits the smallest possible p is 1/(B+1) = 0.00125, so "
                        "nothing can be declared at this level whatever the outputs; B ≥ 999 re-splits would reach "
                        "it.")
    # Reachable: the sentence as before; without B, as before.
    assert "within what chance produces" in read_decision(0.4, 0.05, n_resamples=800)
    assert "within what chance produces" in read_decision(1 / 801, 0.001)
    # Exact enumeration: only more outputs help.
    assert read_unreachable(0.01, 70, exact=True).endswith("only more outputs per arm can reach it.")
    assert "1/N = 0.0143" in read_unreachable(0.01, 70, exact=True)


def test_a_family_level_below_the_floor_is_said_in_the_family_sentence():
    from dbpa_core.present.readings import read_family

    # m = 6 at α = 0.005, B = 800: Bonferroni asks p ≤ 0.00083 < 1/801.
    sentence = read_family(0, 6, 0.005, "bonferroni", n_resamples=800)
    assert sentence.endswith("No p of this test can reach the level: Bonferroni over 6 tests asks p ≤ α/6 = "
                             "0.00083, but with B = 800 re-splits the smallest possible p is 1/(B+1) = 0.00125, so "
                             "nothing can be declared at this level whatever the outputs; B ≥ 1,199 re-splits would "
                             "reach it.")
    # Many perturbations at α = 0.001, m = 8, B = 1,000.
    assert "B ≥ 7,999 re-splits would reach it" in read_family(0, 8, 0.001, "holm", n_resamples=1000)
    # FDR and reachable levels: nothing added.
    assert "No p" not in read_family(0, 8, 0.001, "fdr_bh", n_resamples=1000)
    assert "No p" not in read_family(1, 6, 0.05, "bonferroni", n_resamples=800)
