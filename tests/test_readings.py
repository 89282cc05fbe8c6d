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
