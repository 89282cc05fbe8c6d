"""AppTest of the Streamlit pages."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[1]


def test_how_it_works_runs_and_reacts():
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value.startswith("Distribution-based")
    decision_before = at.metric[2].value
    at.slider[1].set_value(0.0).run()
    assert not at.exception
    assert at.metric[2].value == "FAIL TO REJECT H₀"
    at.slider[1].set_value(1.0).run()
    assert at.metric[2].value == "REJECT H₀"
    assert decision_before in ("REJECT H₀", "FAIL TO REJECT H₀")
