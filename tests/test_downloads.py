"""Downloads never fail silently (issue 29): the HTML report is built on a click, kept for the session for
what it reports, and a report that cannot be built says why."""

from streamlit.testing.v1 import AppTest


def page(fail: bool):
    import pandas as pd
    import streamlit as st

    from dbpa_app.ui.components import downloads

    def report():
        st.session_state["built"] = st.session_state.get("built", 0) + 1
        if fail:
            raise RuntimeError("no plotly.js")
        return "<html>report</html>"

    downloads(table=pd.DataFrame({"x": [1.5]}), record={"a": 1, "created": st.session_state.get("tick", 0)},
              report_html=report, name="t")
    st.session_state["tick"] = st.session_state.get("tick", 0) + 1


def test_the_report_is_built_on_click_and_kept_for_the_session():
    at = AppTest.from_function(page, kwargs={"fail": False}).run()
    assert not at.exception
    assert "built" not in at.session_state  # nothing built (≈5 MB) until asked for
    next(b for b in at.button if b.key == "t_html_prepare").click().run()
    assert at.session_state["built"] == 1 and at.session_state["t_html_report"][1] == b"<html>report</html>"
    at.run()  # a rerun (a new creation time in the record) keeps the same file: the link cannot go stale
    assert at.session_state["built"] == 1 and not any(b.key == "t_html_prepare" for b in at.button)


def test_a_report_that_cannot_be_built_says_why():
    at = AppTest.from_function(page, kwargs={"fail": True}).run()
    next(b for b in at.button if b.key == "t_html_prepare").click().run()
    assert not at.exception
    assert any("could not be built" in e.value and "no plotly.js" in e.value for e in at.error)
