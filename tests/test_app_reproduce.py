"""AppTest of the "Reproduce the paper" page, and its self-contained HTML report."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from conftest import REPO
from test_app import capture_downloads, tables, unspaced_percents
from test_app_home import chart
from dbpa_core import paper
from dbpa_core.paper import embeddings
from dbpa_core.paper import printed as pr


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(REPO / "dbpa_app" / "app.py"), default_timeout=900)
    at.run()
    at.switch_page("views/reproduce.py").run()
    assert not at.exception, at.exception
    return at


def test_reproduce_page(page, monkeypatch):
    at = page
    assert at.title[0].value == "Reproduce the paper"
    assert any("paper (printed)" in c.value and "reference run" in c.value for c in at.caption)
    # default view: Table 2, three sources side by side, each column labelled with its source
    table = tables(at)[0]
    assert list(table["persona"])[:2] == ["doctor", "nurse"] and len(table) == 8
    assert {"p · this project", "p · reference run", "ω GPT-4 · paper (printed)",
            "stars GPT-3.5 · paper (printed)"} <= set(table.columns)
    # the printed column is the transcription (Table 2), not the reference run's file
    assert list(table["ω GPT-4 · paper (printed)"]) == [v.value for v in pr.TABLE2.column("GPT-4")]
    assert any("Agreement with the paper" in i.value and "randomly drawn patient" in i.value for i in at.info)
    # the chart's bar labels write each p as the table does: "p ≤ 0.001" at the floor 1/(B+1), not "p = 0.001"
    shown = [p.replace("\u00a0", " ") for p in table["p · this project"]]
    labels = chart(at, "reproduce_table2_bars")["data"][0]["text"]
    assert "≤ 0.001" in shown
    assert labels == [f"p {p}" if p.startswith("≤") else f"p = {p}" for p in shown], (labels, shown)
    assert any("re-splits" in c.value for c in at.caption)  # every number has its reading
    assert any("seed 0" in c.value for c in at.caption)
    at.selectbox(key="reproduce_persona").set_value("child").run()
    assert any("declared to change" in c.value for c in at.caption)
    # new inputs, new results: the caption names them and the doctor halves are split anew
    before = tables(at)[0]["p · this project"].iloc[0]
    at.number_input(key="reproduce_seed").set_value(3).run()
    assert not at.exception
    assert any("seed 3" in c.value for c in at.caption)
    assert tables(at)[0]["p · this project"].iloc[0] != before
    # Figs 1–2 on a cold store without the shipped vectors: the page says what the first run
    # costs and waits for the button
    empty = paper.ShippedEmbeddings(paper.shipped_embeddings().embedder_key, {}, np.zeros((0, 384), np.float16))
    with monkeypatch.context() as patch:
        patch.setattr(embeddings, "shipped_embeddings", lambda: empty)
        at.radio(key="reproduce_experiment").set_value("fig1").run()
        assert not at.exception
        assert any("7,342 responses with MiniLM" in i.value for i in at.info)  # distinct texts of 8,100
        assert not at.table
        assert at.button(key="reproduce_embed")
    # with them (as shipped) it runs at once: nothing to embed; both setups, each with its agreement
    sent = capture_downloads(monkeypatch)
    at.number_input(key="reproduce_b").set_value(100).run()
    assert not at.exception
    assert "reproduce_embed" not in [b.key for b in at.button]
    best = tables(at)[0]
    assert list(best["best model · paper (printed)"]) == ["Phi-3-mini", "Mistral-7B"]
    models = [len(frame) for frame in tables(at)[1:]]
    assert models == [len(paper.load_recording().models), len(paper.PARAPHRASE_MODELS)]
    assert sum("Agreement with the paper" in i.value for i in at.info) == 2
    assert any("Confound" in c.value for c in at.caption)
    assert list(best["allowed FPR"]) == ["1 %", "5 %"] and not unspaced_percents(at), unspaced_percents(at)
    # the CSV holds the three tables on the screen: the best models and each setup's
    csv = pd.read_csv(io.BytesIO(sent["reproduce_fig1.csv"]), dtype=str, keep_default_na=False)
    assert list(csv["table"].value_counts(sort=False)) == [len(t) for t in tables(at)]
    # the appendix reuses the persona embeddings: three tables in their printed form, each with its agreement
    at.radio(key="reproduce_experiment").set_value("appendix").run()
    assert not at.exception
    assert len(tables(at)) == 3
    # its CSV holds all three tables on the screen (it held Table 4 alone), each row named by its table
    csv = pd.read_csv(io.BytesIO(sent["reproduce_appendix.csv"]), dtype=str, keep_default_na=False)
    counts = csv["table"].value_counts(sort=False)
    assert list(counts.index) == ["C.2 · distance measures (Table 4)", "C.3 · embedding cost (Table 5)",
                                  "C.4 · text similarities (Table 6)"]
    assert list(counts) == [len(t) for t in tables(at)]
    assert list(csv.loc[csv["table"].str.contains("Table 6"), "persona"]) == list(tables(at)[2]["persona"])
    assert "perturbations" in csv.columns
    # one value per cell (issue 45): the value, p, stars and decision apart, never "0.41 ***"
    assert {"ROUGE-2 value · paper (printed)", "ROUGE-2 stars · paper (printed)", "ROUGE-2 value · this project",
            "ROUGE-2 p · this project", "ROUGE-2 stars · this project"} <= set(csv.columns)
    float(csv["ROUGE-2 value · this project"][csv["table"].str.contains("Table 6")].iloc[0])
    assert "Euclidean · paper (printed)" in tables(at)[0].columns
    assert "ROUGE-2 · paper (printed)" in tables(at)[2].columns
    assert any("Total Tokens column" in i.value for i in at.info)
    # §3.2's rule
    at.radio(key="reproduce_experiment").set_value("sample_size").run()
    assert not at.exception
    assert len(tables(at)[0]) == 4 and any("k = 20" in c.value for c in at.caption)
    # a formula: the header does not say "B = 1,000, seed 0" above a caption saying neither applies
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Results for: §3.2") and "B and the seed do not apply" in c for c in captions)
    assert not any("B = 1,000" in c for c in captions), captions
    assert any("The sidebar's backend, temperature, embedder and seed do not apply on this page" in c
               for c in captions)


def test_sections_report_is_self_contained():
    from dbpa_core.present.exports import sections_html
    from dbpa_core.present.figures import mean_sd_bars

    figure = mean_sd_bars(["a", "b"], [0.2, 0.4], [0.01, 0.02], [False, True], title="t")
    page = sections_html("Report", "intro", [("Section", ["A sentence."], [pd.DataFrame({"x": [1.5]})], [figure])],
                         {"seed": 0})
    assert page.startswith("<!DOCTYPE html>") and "A sentence." in page and "<table" in page
    assert "Plotly" in page and '<script src=' not in page  # plotly.js inlined, nothing fetched
    assert "&quot;seed&quot;: 0" in page  # the settings, HTML-escaped
