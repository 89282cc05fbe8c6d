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
    assert "1.0%" in read_pvalue(0.01, 999)
    assert "not proof" in read_decision(0.3, 0.05)


def test_pvalue_at_its_floor_reads_as_the_floor():
    from dbpa_core.present.readings import format_pvalue, pvalue_floor

    assert pvalue_floor(799) == 1 / 800
    assert format_pvalue(1 / 800, 799) == "≤ 1/(B+1) = 0.0013"
    assert format_pvalue(2 / 800, 799) == "0.0025"
    assert format_pvalue(1 / 20, 20, exact=True) == "≤ 1/N = 0.05"
    assert format_pvalue(1 / 800) == "0.0013"  # without B nothing is known about the floor
    sentence = read_pvalue(1 / 1001, 1000)
    assert "None of the 1,000 random re-splits" in sentence and "floor 1/(B+1) = 0.001" in sentence


def test_negative_effect_is_explained():
    from dbpa_core.present.readings import read_effect

    assert "less* different" in read_effect(-0.01, -0.5)
    assert "Negative" not in read_effect(0.01, 0.5)
