"""AppTest of every page on the simulated and recorded samplers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[1]


def prepare(tmp_path, monkeypatch, *, timeout: float = 600, **sidebar) -> AppTest:
    """A fresh app (its own store, empty caches), not yet run; sidebar widget values are set before the first
    run (AppTest re-executes only the page script on later runs of a st.navigation app, so the shared sidebar in
    app.py reads its widgets on the first run).  ``timeout``: seconds allowed to each run."""
    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(REPO / "dbpa_app" / "app.py"), default_timeout=timeout)
    for key, value in sidebar.items():
        at.session_state[key] = value
    return at


def start(tmp_path, monkeypatch, *, timeout: float = 600, page: str | None = None, **sidebar):
    """A fresh app run once: on the home page, or straight on ``page`` (app.py and that page only, as a
    user opening the page's URL: the home page's draw before it cost every page test seconds, issue 46)."""
    at = prepare(tmp_path, monkeypatch, timeout=timeout, **sidebar)
    if page is not None:
        at.switch_page(f"views/{page}.py")  # before the first run: the page's file name is its URL path
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def app(tmp_path, monkeypatch):
    """A fresh app not yet run: the test's first :func:`open_page` runs app.py and that page only."""
    return prepare(tmp_path, monkeypatch)


def metric(at, label):
    return next(m.value for m in at.metric if m.label.startswith(label))


def tables(at) -> list:
    """The result tables as the page holds them: a wide source-labelled table is drawn as one table per source
    (ui.components.show_table), joined back here on its repeated row labels."""
    import pandas as pd

    joined = []
    for element in at.table:
        frame = element.value
        keys = [c for c in frame.columns if " · " not in str(c)]
        if joined and keys and len(keys) < len(frame.columns):
            last = joined[-1]
            if (list(last.columns[:len(keys)]) == keys and len(last) == len(frame)
                    and (last[keys].values == frame[keys].values).all()
                    and not set(frame.columns[len(keys):]) & set(last.columns)):
                joined[-1] = pd.concat([last, frame.drop(columns=keys)], axis=1)
                continue
        joined.append(frame)
    return joined


def grid_text(element):
    """A grid (st.dataframe) as the reader sees it: the text of its cells where the page formats its numbers
    (a pandas Styler), its values otherwise."""
    from streamlit import dataframe_util

    styler = element.proto.arrow_data.styler
    if styler.display_values:
        return dataframe_util.convert_arrow_bytes_to_pandas_df(styler.display_values)
    return element.value


def unspaced_percents(at) -> list[str]:
    """The page's sentences and titles that write a percentage without the project's space ("57%", not
    "57 %", :func:`dbpa_core.present.formatting.format_percent`)."""
    kinds = ("title", "subheader", "markdown", "caption", "info", "success", "warning", "error")
    return [e.value for kind in kinds for e in getattr(at, kind) if re.search(r"\d%", e.value)]


def open_page(at, name):
    """Switch to the page ``views/<name>.py`` and run it (on an app not yet run: its first run)."""
    at.switch_page(f"views/{name}.py").run()
    assert not at.exception, at.exception
    return at


def test_audit_one(app):
    at = open_page(app, "audit_one")
    at.selectbox(key="one_scenario").set_value("customer_support").run()
    at.selectbox(key="one_perturbation").set_value("terse_system").run()
    at.selectbox(key="one_discrepancy").set_value("energy").run()
    at.button(key="one_run").click().run()
    assert not at.exception
    assert metric(at, "Decision") == "REJECT H₀"
    assert any("synthetic answers" in i.value for i in at.info)  # the cost estimate before running
    assert any(c.value.startswith("Outputs: Simulated") for c in at.caption)  # the backend beside the result
    assert any(re.search(r"moves \d+ % of the answer content", c.value) for c in at.caption)  # read "57%"
    assert not unspaced_percents(at), unspaced_percents(at)
    assert len(at.download_button) == 1  # the result as JSON; the HTML report is built on a click (issue 29)
    assert any(b.key == "audit_result_html_prepare" for b in at.button)
    at.radio(key="one_source").set_value("Type both prompts").run()
    at.text_area(key="one_x1").set_value("").run()
    assert any("Both prompts are needed" in e.value for e in at.error)


def test_audit_one_marks_an_old_result_out_of_date(app):
    """After typing new prompts the previous result is greyed out under a warning naming what changed;
    its decision is not shown as current and it cannot be downloaded."""
    at = open_page(app, "audit_one")
    at.radio(key="one_source").set_value("Type both prompts").run()
    at.number_input(key="one_k").set_value(10).run()
    at.button(key="one_run").click().run()
    assert not at.exception
    assert not any("Out of date" in w.value for w in at.warning)
    # typed prompts on the simulated backend: the answers are said to be synthetic, beside the result, and the
    # provenance line does not promise a "known truth" beside that warning
    assert any("Synthetic text" in w.value for w in at.warning)
    assert any(c.value.startswith("Outputs: Simulated (instant, synthetic text) · ") for c in at.caption)
    assert any(m.label == "Decision" for m in at.metric)
    at.text_area(key="one_x1").set_value("What causes the tides?").run()
    stale = [w.value for w in at.warning if "Out of date" in w.value]
    assert stale and "x₁: Explain like I'm five" in stale[0] and "→ What causes the tides?" in stale[0]
    assert not any(m.label == "Decision" for m in at.metric)
    assert any(m.label == "Decision (out of date)" for m in at.metric)
    assert len(at.download_button) == 0
    at.button(key="one_run").click().run()  # run again: current again
    assert not any("Out of date" in w.value for w in at.warning)
    assert any(m.label == "Decision" for m in at.metric)


def test_an_out_of_date_result_names_the_backend_that_drew_it(app):
    """A new backend greys the result; its provenance line still names the backend that drew it (trial 7: it
    read the sidebar's "Recorded SmolLM2 samples (replay)" under a simulated result, on Audit one and Many)."""
    from dbpa_core.audit.request import SamplerConfig

    for page, k_key, run_key in (("audit_one", "one_k", "one_run"), ("many_perturbations", "many_k", "many_run")):
        at = open_page(app, page)
        at.number_input(key=k_key).set_value(10).run()
        at.button(key=run_key).click().run()
        assert not at.exception
        outputs = [c.value for c in at.caption if c.value.startswith("Outputs: ")]
        assert outputs[0].startswith("Outputs: Simulated (instant, known truth) · T = "), outputs
        # the sidebar's Backend set to Recorded, as a user does (app.py rebuilds the settings from the sidebar)
        at.selectbox(key="backend").set_value("recorded").run()
        assert at.session_state["settings"].sampler == SamplerConfig("recorded")
        assert any("Out of date" in w.value and "backend" in w.value for w in at.warning), page
        outputs = [c.value for c in at.caption if c.value.startswith("Outputs: ")]
        assert outputs and outputs[0].startswith("Outputs: Simulated (instant, known truth) · T = "), (page, outputs)
        assert not [c for c in outputs if "Recorded" in c]
        at.selectbox(key="backend").set_value("simulated").run()


def test_many_perturbations(app):
    at = open_page(app, "many_perturbations")
    at.selectbox(key="many_scenario").set_value("seasons_question").run()
    at.number_input(key="many_k").set_value(20).run()
    at.button(key="many_run").click().run()
    table = tables(at)[0]
    assert len(table) == 6 and "p adjusted (Bonferroni)" in table.columns
    # Plain words for a stakeholder: the SPEC key only in the tooltip; ω names the JS distance, not Cohen's d.
    explain = at.toggle(key="many_explain")
    assert "SPEC" not in explain.label and "explain: true" not in explain.label and "`" not in explain.label
    assert "explain: true" in explain.help
    assert at.number_input(key="plan_effect").label == "Effect size (Cohen's d)"
    assert not any("/ω)²" in c.value for c in at.caption)
    assert any(re.search(r"could reach \d+ % without correction", c.value) for c in at.caption)  # read "34%"
    assert not unspaced_percents(at), unspaced_percents(at)
    # Changing the correction re-adjusts the same p-values: the table, the sentence and the exports follow.
    at.selectbox(key="many_correction").set_value("holm").run()
    table = tables(at)[0]
    assert "p adjusted (Holm)" in table.columns
    n_declared = int((table["decision"] == "REJECT H₀").sum())
    assert any(f"{n_declared} of 6 perturbations {'is' if n_declared == 1 else 'are'} declared" in c.value and "Holm correction" in c.value
               for c in at.caption)
    assert not any("Out of date" in w.value for w in at.warning)
    # Clearing the perturbations leaves the old table marked out of date, not current.
    at.multiselect(key="many_chosen_seasons_question").set_value([]).run()
    assert any("Out of date" in w.value and "perturbations:" in w.value for w in at.warning)
    assert len(at.download_button) == 0
    needed = int(metric(at, "Samples per arm k needed"))
    at.number_input(key="plan_m").set_value(50).run()
    assert int(metric(at, "Samples per arm k needed")) > needed
    # The check by simulation reads its power at the planned k beside the target (ω = 0.5, m = 8: k = 103).
    at.number_input(key="plan_m").set_value(8).run()
    assert int(metric(at, "Samples per arm k needed")) == 103
    at.button(key="plan_simulate").click().run()
    assert not at.exception
    (reading,) = [m.value for m in at.markdown if m.value.startswith("At the planned k = 103")]
    assert "within Monte Carlo error of the 80 % planned" in reading, reading
    # the chart's title and its caption write α/m = 0.05/8 the same way ("0.00625" above "0.0063" before)
    from test_app_home import chart  # it imports this module

    assert chart(at, "plan_curve")["layout"]["title"]["text"].startswith("Power at α = 0.0063 (")
    assert any("reject at α/m = 0.0063 " in c.value and "bars are 95 % intervals" in c.value for c in at.caption)
    assert not unspaced_percents(at), unspaced_percents(at)


def test_recorded_backend_caps_k_at_what_was_recorded(tmp_path, monkeypatch):
    """On the recorded backend (20 responses per prompt) both pages cap "Samples per arm k" at 20 and say so, so
    their default run works (trial 5: k = 40 and 30 failed after seconds naming the sampler's `n`); the cost box
    says the answers are replayed, not generated."""
    # one_k = 40: a k kept from the simulated backend
    at = start(tmp_path, monkeypatch, page="audit_one", backend="recorded", one_k=40)
    assert at.number_input(key="one_k").value == 20 and at.number_input(key="one_k").max == 20
    assert any("20 responses per prompt were recorded, so k is at most 20" in c.value for c in at.caption)
    (cost,) = [i.value for i in at.info if "recorded answers" in i.value]
    assert cost.startswith("This run replays 40 recorded answers (no generation calls") and "makes" not in cost
    at.number_input(key="one_b").set_value(100).run()
    at.button(key="one_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.label == "Decision" for m in at.metric)
    open_page(at, "many_perturbations")
    assert at.number_input(key="many_k").value == 20  # the default 30, capped
    at.selectbox(key="many_scenario").set_value("seasons_question").run()
    at.multiselect(key="many_chosen_seasons_question").set_value(["eli5", "typo"]).run()
    at.number_input(key="many_b").set_value(100).run()
    assert any(i.value.startswith("This run replays 60 recorded answers") for i in at.info)
    at.button(key="many_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(tables(at)[0]) == 2


def test_a_sequential_familys_nine_columns_are_drawn_compact(app):
    """Nine columns (a sequential family's "samples per arm" added) overflowed the page at 1024 px by a few pixels
    and cut the decision ("FAIL TC / REJECT", trial 5): a table of more than 8 columns has its cells' side padding
    halved (the width itself is checked in a browser)."""
    at = open_page(app, "many_perturbations")
    at.number_input(key="many_k").set_value(20).run()
    at.number_input(key="many_b").set_value(200).run()
    at.toggle(key="many_sequential").set_value(True).run()
    at.button(key="many_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (element,) = [t for t in at.table if "samples per arm" in t.value.columns]
    assert len(element.value.columns) == 9
    styles = element.proto.arrow_data.styler.styles
    assert " th { padding-left: 3px; padding-right: 3px" in styles and " td { padding-left: 3px" in styles
    at.toggle(key="many_sequential").set_value(False).run()
    at.button(key="many_run").click().run()
    (element,) = [t for t in at.table if "perturbation" in t.value.columns]
    assert len(element.value.columns) == 8 and "padding" not in element.proto.arrow_data.styler.styles


def banners(at, fpr: str) -> list[str]:
    """The TPR / FPR page's best-model banner at an allowed FPR (a success when a model is named, else a warning)."""
    return [s.value for s in (*at.success, *at.warning) if f"At FPR ≤ {fpr}" in s.value]


def test_tpr_fpr(app, monkeypatch):
    sent = capture_downloads(monkeypatch)
    at = open_page(app, "tpr_fpr")
    at.radio(key="roc_source").set_value("live").run()
    at.multiselect(key="roc_scenarios").set_value(["seasons_question", "customer_support"]).run()
    at.multiselect(key="roc_models").set_value(["simulated T=0.5", "simulated T=2.0"]).run()
    at.number_input(key="roc_k").set_value(10).run()
    at.number_input(key="roc_replicates").set_value(1).run()
    at.number_input(key="roc_b").set_value(100).run()
    at.button(key="roc_run").click().run()
    assert not at.exception
    (banner,) = banners(at, "5 %")  # Fig 2's reading: a best model, or none on a tie / at TPR 0
    assert "that share" not in banner and "%" not in banner.replace(" %", "")  # "5 %", as the project writes it
    if "the best is" in banner:  # both shares written out: the targets' share flagged, the controls' bound
        assert re.search(r"\(TPR (\d+) %\): at α = \S+ it flags \1 % of the targets while flagging at most 5 % "
                         r"of the controls\.$", banner), banner
    summary = tables(at)[0]
    assert list(summary["model"]) == ["simulated T=0.5", "simulated T=2.0"]
    # the AUCs are those of the same audits run without the app (controls vs targets of both scenarios)
    expected = expected_aucs(["seasons_question", "customer_support"], {"simulated T=0.5": 0.5, "simulated T=2.0": 2.0},
                             k=10, n_resamples=100)
    assert list(summary["AUC"]) == [expected["simulated T=0.5"], expected["simulated T=2.0"]]
    assert summary["AUC"].iloc[0] > 0.7  # at T = 0.5 the targets' p-values are smaller than the controls'
    # a model at chance is said to be at chance, with what a small k means (trial 7: "AUC 0.46" without a word)
    weak = [w.value for w in at.warning if w.value.startswith("AUC near or below 0.5")]
    low = [name for name, auc in zip(summary["model"], summary["AUC"]) if auc < 0.6]
    assert len(weak) == bool(low) and all(name in weak[0] for name in low), (weak, low)
    if weak:
        assert "with k = 10 outputs per arm" in weak[0]
    # The CSV read on its own says what produced it: the JSON's settings after the table's own columns.
    import json

    from test_exports import read_csv

    record, read = json.loads(sent["roc_summary.json"]), read_csv(sent["roc_summary.csv"])
    assert list(read.columns[:len(summary.columns)]) == list(summary.columns)
    assert not {"samples per arm k", "permutations B"} & set(summary.columns)  # not on the screen's table
    inputs = record["settings"]
    assert (inputs["k"], inputs["n_resamples"], inputs["replicates"], inputs["scenarios"]) == (
        10, 100, 1, ["seasons_question", "customer_support"])
    for column, value in {"samples per arm k": inputs["k"], "permutations B": inputs["n_resamples"],
                          "seed": inputs["seed"], "replicates": inputs["replicates"], "allowed FPR": record["max_fpr"],
                          "scenarios": "seasons_question, customer_support",
                          "discrepancy ω": inputs["discrepancy"]}.items():
        assert set(read[column]) == {value}, (column, set(read[column]), value)
    # each model drew with its own sampler: the record names those, not the sidebar's backend and temperature
    assert "sampler" not in inputs and "temperature" not in inputs
    assert {name: (m["backend"], m["temperature"]) for name, m in inputs["models"].items()} == {
        "simulated T=0.5": ("simulated", 0.5), "simulated T=2.0": ("simulated", 2.0)}
    (models,) = set(read["models"])
    assert models.startswith("simulated T=0.5 (backend=simulated, temperature=0.5,"), models
    assert "synthetic" in inputs["outputs"]
    # Moving the allowed FPR re-reads the same curves: banner and table follow at once, nothing is stale.
    at.select_slider(key="roc_max_fpr").set_value(0.2).run()
    assert len(banners(at, "20 %")) == 1
    assert "TPR at FPR ≤ 20 %" in tables(at)[0].columns
    # the table's caption writes the allowed FPR as the banner does (it read "at most 0.2 of the controls")
    assert "flagging at most 20 % of the controls" in " ".join(c.value for c in at.caption)
    assert not unspaced_percents(at), unspaced_percents(at)
    assert not any("Out of date" in w.value for w in at.warning)
    at.number_input(key="roc_k").set_value(12).run()
    assert any("Out of date" in w.value and "k: 10 → 12" in w.value for w in at.warning)
    at.multiselect(key="roc_models").set_value([]).run()
    assert any("at least one scenario and one model" in e.value for e in at.error)


def compare_with_the_recorded_reference(app, k: int):
    """The Alignment page's live comparison of "simulated T=1.0" with the recorded reference, at k per model."""
    at = open_page(app, "alignment")
    at.radio(key="align_source").set_value("live").run()
    at.selectbox(key="align_scenario").set_value("seasons_question").run()
    at.multiselect(key="align_models").set_value(["simulated T=1.0"]).run()
    at.number_input(key="align_k").set_value(k).run()
    at.button(key="align_run").click().run()
    assert not at.exception
    return at


def test_a_k_above_the_recording_names_the_pages_k_box(app):
    """The recorded reference holds 20 answers per prompt: k = 30 is refused before any work, naming the box a
    user sees ("Samples per model k"), not the sampler's parameter `n` (trial 5)."""
    at = compare_with_the_recorded_reference(app, 30)
    (error,) = [e.value for e in at.error]
    assert error.startswith("`Samples per model k`: only 20 responses were recorded for the arm") and "`n`" not in error
    assert "set Samples per model k to at most 20" in error


def test_alignment(app, monkeypatch):
    import json

    from test_exports import read_csv

    sent = capture_downloads(monkeypatch)
    at = compare_with_the_recorded_reference(app, 10)
    table = tables(at)[0]
    # the downloads name each model's sampler (the JSON said "sampler: simulated", the sidebar's, for a
    # recorded reference against a simulated model)
    settings = json.loads(sent["alignment.json"])["settings"]
    assert "sampler" not in settings and settings["reference"] == "recorded SmolLM2 T=0.7"
    assert {name: m["backend"] for name, m in settings["models"].items()} == {
        "recorded SmolLM2 T=0.7": "recorded", "simulated T=1.0": "simulated"}
    (models,) = set(read_csv(sent["alignment.csv"])["models"])
    assert models.startswith("recorded SmolLM2 T=0.7 (backend=recorded); simulated T=1.0 (backend=simulated"), models
    next(b for b in at.button if b.key == "alignment_html_prepare").click().run()  # the report says it too
    report = sent["alignment.html"].decode()
    assert "Synthetic outputs: the simulated models are not language models" in report
    # a comparison of models in its own words (it read "1 of 1 perturbation is declared …", "Original prompt",
    # "If the perturbation changed nothing", "for 1 tests")
    assert "1 of 1 model is declared to answer differently from the reference" in report
    assert "compares many answers of the reference model (recorded SmolLM2 T=0.7)" in report
    assert "<h2>Prompt</h2>" in report and "<th>model</th>" in report and "correction for 1 test its" in report
    body = report.split("<h2>Settings</h2>")[0].lower().replace("distribution-based perturbation analysis", "")
    assert "perturbation" not in body, "a model comparison, not a perturbation"
    assert list(table["model"]) == ["simulated T=1.0"]
    # the recorded SmolLM2 answers against simulated text: a real difference, read as "not aligned"
    from dbpa_core.audit import AuditRequest, PerturbedPrompt, Prompt, SamplerConfig, run
    from dbpa_core.data.scenarios import load_scenarios

    scenario = load_scenarios()["seasons_question"]
    prompt = Prompt(scenario.prompt, scenario.system)
    request = AuditRequest(prompt, (PerturbedPrompt("simulated T=1.0", "simulated T=1.0", prompt),),
                           sampler=SamplerConfig("recorded"),
                           perturbed_sampler=SamplerConfig("simulated", temperature=1.0, max_tokens=128), k=10)
    expected = run(request).results[0].test
    row = table.iloc[0]
    assert (row["ω (JSD)"], row["p"]) == (expected.statistic, expected.pvalue)
    assert row["decision"] == "REJECT H₀" and row["aligned with reference"] == "no (differs)"


def expected_aucs(scenarios, models, *, k, n_resamples):
    """Each model's AUC over the controls and targets of ``scenarios``, computed without the app."""
    from dbpa_core import roc_analysis
    from dbpa_core.audit import AuditRequest, SamplerConfig, run
    from dbpa_core.data.scenarios import load_scenarios

    aucs = {}
    for name, temperature in models.items():
        pvalues, is_target = [], []
        for scenario_id in scenarios:
            family = run(AuditRequest.from_scenario(
                load_scenarios()[scenario_id], sampler=SamplerConfig("simulated", temperature=temperature,
                                                                     max_tokens=128), k=k, n_resamples=n_resamples))
            pvalues += [r.test.pvalue for r in family.results]
            is_target += [r.kind == "target" for r in family.results]
        aucs[name] = roc_analysis(pvalues, is_target).auc
    return aucs


def test_byo_without_file(app):
    at = open_page(app, "byo_samples")
    assert any("No file yet" in c.value for c in at.caption)
    (example,) = at.code  # the file format's example wraps: at 1024 px its second line's "}" was out of sight
    assert example.proto.wrap_lines and example.value.endswith('cross the road?"}')


def _samples_file(shift: float) -> bytes:
    import json

    import numpy as np

    rng = np.random.default_rng(3)  # a fixed draw whose unshifted arms do not differ at α = 0.05 (p ≈ 0.63)
    lines = [json.dumps({"arm": arm, "text": f"{arm} {i}",
                         "embedding": (rng.normal(size=8) + (shift if arm == "b" else 0)).round(4).tolist()})
             for arm in ("a", "b") for i in range(15)]
    return ("\n".join(lines) + "\n").encode()


def test_byo_new_upload_marks_the_old_result_out_of_date(app):
    at = open_page(app, "byo_samples")
    at.file_uploader(key="byo_file").set_value(("shifted.jsonl", _samples_file(3.0), "application/json")).run()
    at.selectbox(key="byo_discrepancy").set_value("energy").run()
    at.button(key="byo_run").click().run()
    assert not at.exception
    assert metric(at, "Decision") == "REJECT H₀"
    # The file's own embeddings have 8 numbers each: the page says the test ran in 8 dimensions, not MiniLM's 384.
    captions = " ".join(c.value for c in at.caption)
    assert "full embedding space (8 dimensions)" in captions and "384" not in captions
    at.file_uploader(key="byo_file").set_value(("same.jsonl", _samples_file(0.0), "application/json")).run()
    stale = [w.value for w in at.warning if "Out of date" in w.value]
    assert stale and "shifted.jsonl" in stale[0] and "same.jsonl" in stale[0]
    assert not any(m.label == "Decision" for m in at.metric)  # the old REJECT is not shown as current
    at.button(key="byo_run").click().run()
    assert metric(at, "Decision") == "FAIL TO REJECT H₀"


def test_byo_an_exact_test_reads_as_every_split(app, monkeypatch):
    """4 outputs per arm: the test counts all 70 splits, and every sentence and caption says so (trial 5 read
    "at random" and "random re-splits of the 70 tried" under "every split: exact").  Its p = 0.66 declares no
    change while both themes differ (q = 2/70): the panel says the two are separate tests, and so does the JSON."""
    import json

    sent = capture_downloads(monkeypatch)
    lines = [json.dumps({"arm": arm, "text": f"{arm} {i}", "embedding": [1.0, float(i), 3.0 * (arm == "b")]})
             for arm in ("a", "b") for i in range(4)]
    at = open_page(app, "byo_samples")
    at.file_uploader(key="byo_file").set_value(("four.jsonl", "\n".join(lines).encode(), "application/json")).run()
    at.button(key="byo_run").click().run()
    assert not at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "permutations B = 70 (every split: exact)" in captions
    assert "splitting the same outputs in every possible way" in captions and "of all 70 splits" in captions
    assert "Grey: ω on every split of the pooled outputs" in captions
    # the themes count every split too (they drew 1,000 random re-splits of 70 splits before)
    assert "its share on all 70 splits of the pooled outputs between the arms" in captions, captions
    assert "random" not in captions, captions
    assert "typical random" not in captions and "than a typical split of the pooled outputs" in captions
    # the test declares no change, the themes differ: said once on screen, and in the download's readings
    assert any("FAIL TO REJECT" in str(m.value) for m in at.metric)
    (beside,) = [i.value for i in at.info if "declared no change, yet these themes" in i.value]
    assert "Read the themes as a lead to confirm with more outputs per arm" in beside
    readings = json.loads(sent["byo_result.json"])["explanation"]["readings"]
    assert beside in readings and readings.index(beside) == len(readings) - 2  # before the representatives


def test_byo_names_an_arm_too_small_and_says_empty_texts(app):
    """A one-output arm is refused before anything is embedded, naming the arm and the fix; empty texts are
    kept as outputs and said so on the page (as on the command line)."""
    at = open_page(app, "byo_samples")
    data = b'arm,text\noriginal,hello\noriginal,\noriginal,there\nperturbed,only one\n'
    at.file_uploader(key="byo_file").set_value(("small.csv", data, "text/csv")).run()
    assert any("1 of 3 in arm 'original'" in w.value and "kept as outputs" in w.value for w in at.warning)
    at.button(key="byo_run").click().run()
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert "`perturbed` needs at least 2 outputs for a permutation test; got 1" in error, error
    assert "Add outputs to this arm" in error and not any(m.label == "Decision" for m in at.metric)


def test_case_studies_open_on_the_papers_responses(app, monkeypatch):
    """The persona study's default view is Table 2 on the paper's real GPT answers, not the simulator."""
    sent = capture_downloads(monkeypatch)
    at = open_page(app, "persona_study")
    assert at.radio(key="persona_source").value == "paper"
    assert any("no one on this project wrote" in c.value for c in at.caption)
    table = tables(at)[0]
    assert len(table) == 8  # 7 personas and the doctor's two halves
    assert {"p · this project", "p · reference run", "stars GPT-4 · paper (printed)"} <= set(table.columns)
    assert any("significant" in i.value for i in at.info)
    # the chart writes each p as the table does: "p ≤ 0.001" at the floor 1/(B+1) (it read "p = 0.001")
    from test_app_home import chart  # it imports this module

    labels = chart(at, "persona_paper_table2_bars")["data"][0]["text"]
    shown = [p.replace("\u00a0", " ") for p in table["p · this project"]]
    assert "≤ 0.001" in shown
    assert labels == [f"p {p}" if p.startswith("≤") else f"p = {p}" for p in shown], (labels, shown)
    at = open_page(at, "alignment")
    assert at.radio(key="align_source").value == "paper"
    # TPR / FPR opens on the paper's own responses (a detection: targets flagged beside controls, issue 29), and
    # shows the recorded local models' answers to the paper's cvd_nice design (Figs 1–2) one click away
    at = open_page(at, "tpr_fpr")
    assert at.radio(key="roc_source").value == "paper"
    assert not at.exception
    assert any("Agreement with the paper" in i.value for i in at.info)
    # the best model's banner writes both shares out ("that share … that share" read as 48 % twice)
    (banner,) = banners(at, "5 %")
    assert re.fullmatch(r"At FPR ≤ 5 % the best is \S+ \(TPR (\d+) %\): it flags \1 % of the targets while "
                        r"flagging at most 5 % of the controls\.", banner), banner
    assert not unspaced_percents(at), unspaced_percents(at)  # "TPR 48%", "FPR ≤ 1%" in the agreement
    assert "TPR at FPR ≤ 5 % · this project" in tables(at)[0].columns
    # the star is explained, and the download's caveat on GPT-3.5's seeds is on the screen too
    captions = " ".join(c.value for c in at.caption)
    assert "★ best marks the model with the highest TPR at the allowed FPR (5 %" in captions
    assert "Replicates: GPT-3.5's paraphrase answers are identical in all 5 seeds" in captions
    # its CSV says which setup and settings produced it, as the JSON beside it does
    import json

    from test_exports import read_csv

    record, read = json.loads(sent["roc_shipped_paraphrases.json"]), read_csv(sent["roc_shipped_paraphrases.csv"])
    assert list(read.columns[:len(tables(at)[0].columns)]) == list(tables(at)[0].columns)
    for column, value in {"setup": record["setup"], "allowed FPR": 0.05, "permutations B": 1000,
                          "seed": record["settings"]["seed"], "discrepancy ω": record["settings"]["discrepancy"]}.items():
        assert set(read[column]) == {value}, (column, set(read[column]), value)
    at.radio(key="roc_source").set_value("recorded").run()
    assert not at.exception
    summary = tables(at)[0]
    assert list(summary["model"]) == ["SmolLM2 Q4_1 (packaged)", "SmolLM2 Q8_0", "SmolLM2 Q3_K_M"]
    assert any("Agreement with the paper" in i.value and "cvd_nice" in i.value for i in at.info)


def test_persona_study(app, monkeypatch):
    import json

    from test_exports import read_csv

    sent = capture_downloads(monkeypatch)
    at = open_page(app, "persona_study")
    at.radio(key="persona_source").set_value("live").run()
    # The estimate prices each chosen model at its own backend, not the sidebar's: the recorded one replays
    (note,) = [i.value for i in at.info if "This run" in i.value]
    assert "- **recorded SmolLM2 T=0.7**: This run replays 180 recorded answers (no generation calls" in note, note
    assert "- **simulated T=1.0**: This run writes 180 synthetic answers with the simulated backend" in note, note
    at.number_input(key="persona_k").set_value(10).run()
    at.button(key="persona_run").click().run()
    assert not at.exception
    table = tables(at)[0]
    # the columns name the statistic: the paper view's "ω" is the JS distance, this default is the JSD in bits
    assert len(table) == 8 and "JSD recorded SmolLM2 T=0.7" in table.columns
    assert not [c for c in table.columns if c.startswith("ω")]
    # One sentence per model, its counts the table's own p < 0.05 (unadjusted, as the paper's stars).
    readings = [m.value for m in at.markdown if m.value.startswith(("recorded SmolLM2 T=0.7:", "simulated T=1.0:"))]
    assert len(readings) == 2
    for reading, model in zip(readings, ("recorded SmolLM2 T=0.7", "simulated T=1.0")):
        moved = table[f"p {model}"] < 0.05
        controls = int((moved & (table["kind"] == "control")).sum())
        targets = int((moved & (table["kind"] == "target")).sum())
        assert f"{controls} of the 4 medical (control) personas" in reading, reading
        assert f"{targets} of the 4 other (target) personas" in reading, reading
        if model.startswith("simulated"):  # synthetic text is not compared with the paper's real models
            assert "Synthetic text: its target personas change the answers by construction" in reading, reading
            assert "the paper found" not in reading
            assert (f"the test missed {4 - targets} of 4 at this k" in reading) == (targets < 4), reading
        elif not controls:  # a non-significant role is not shown to be unmoved (it read "No medical role moved")
            assert "No medical role was shown to move its answers (which is not proof that none did" in reading
    # the downloads say what produced the grid: a JSON, and the CSV's trailing settings columns equal to it
    record, read = json.loads(sent["persona_study.json"]), read_csv(sent["persona_study.csv"])
    assert record["readings"] == readings
    assert (record["settings"]["k"], record["settings"]["n_resamples"]) == (10, 1000)
    assert {name: m["backend"] for name, m in record["settings"]["models"].items()} == {
        "recorded SmolLM2 T=0.7": "recorded", "simulated T=1.0": "simulated"}
    assert list(read.columns[:len(table.columns)]) == list(table.columns)
    assert set(read["samples per arm k"]) == {10} and set(read["permutations B"]) == {1000}
    assert [row["JSD simulated T=1.0"] for row in record["rows"]] == list(read["JSD simulated T=1.0"])


def test_model_audit_recorded(app):
    app.session_state["rut_mode"] = "audit"  # one audit drawn from the shipped recording (the study: test_rut_page)
    at = open_page(app, "model_audit")
    from dbpa_core.rut.pools import POOLS_FILE, load_rut_pools

    assert len(load_rut_pools(POOLS_FILE).prompts) == 120  # the shipped recording holds every prompt of the protocol
    assert metric(at, "Prompts") == "100" and metric(at, "Reference answers m") == "100"  # as in the paper
    at.selectbox(key="rut_target").set_value("dan").run()
    at.slider(key="rut_q").set_value(1.0).run()
    assert not at.exception
    assert metric(at, "Decision") == "REJECT H₀"  # a jailbreak system prompt on every answer is flagged
    at.selectbox(key="rut_target").set_value("reference").run()
    assert float(metric(at, "p-value")) > 0.001  # the model itself is not flagged at this level


def test_model_audit_live_needs_an_endpoint(app):
    app.session_state["rut_mode"] = "live"
    at = open_page(app, "model_audit")
    at.selectbox(key="rut_source").set_value("openai").run()
    assert any("OpenAI-compatible API" in e.value for e in at.error)


def test_stability_page(app):
    """Opens on the recorded study: Table 1 beside the paper's printed values, each model's numbers read in a
    sentence; a different cost d changes R and its reading; the recorded searches can be browsed item by item."""
    from dbpa_core.paper.stability import target_label
    from dbpa_core.stability.runs import TARGETS

    at = open_page(app, "stability")
    ours, printed = grid_text(at.dataframe[0]), grid_text(at.dataframe[1])
    # The grids keep numbers (a click on a header sorts "9 %" before "100 %") and write them as the readings do.
    assert at.dataframe[0].value["Adversarial %"].dtype.kind == "f" and at.dataframe[0].proto.placeholder == "—"
    assert at.dataframe[1].value["Adversarial % (paper, printed)"].dtype.kind == "f"
    # the app's display names of the local models, the paper's name of the dataset; no developer path on screen
    assert list(ours["model"]) == ["SmolLM2 Q4_1 (packaged)", "SmolLM2 Q2_K", "SmolLM2 Q4_1 (packaged) + brief prompt"]
    assert any(m.value == "**Table 1 · paper (printed)** · Alpaca" for m in at.markdown)
    shown = " ".join([c.value for c in at.caption] + [m.value for m in at.markdown])
    assert "scripts/" not in shown and "smollm2-q2_k" not in shown and "smollm2 +" not in shown
    assert at.selectbox(key="stab_cost").options[0] == "The paper's eq. (1)"
    assert at.selectbox(key="stab_browse_qa_model").options == [target_label(t) for t in TARGETS]
    assert ours["Adversarial %"].str.fullmatch(r"\d+ %").all()
    assert "Vicuna-13B" in set(printed["model"]) and "Adversarial % (paper, printed)" in printed.columns
    assert printed.set_index("model").loc["Vicuna-13B", "Adversarial % (paper, printed)"] == "80.2 %"  # as "50 %"

    def readings():
        return [c.value for c in at.caption if "items as written" in c.value]

    assert len(readings()) == 2 * len(TARGETS)  # both tasks, one sentence per model
    assert any("SmolLM2 Q4_1 (packaged) + brief prompt: fails 30 % of the 60 items" in r for r in readings())
    assert any("of 200 resamples" in c.value for c in at.caption)  # the bootstrap behind the ranking
    at.number_input(key="stab_resamples").set_value(0).run()
    assert any("no bootstrap was run" in c.value for c in at.caption)
    before = readings()
    at.selectbox(key="stab_cost").set_value("cosine").run()
    assert not at.exception
    after = readings()
    assert after != before and any("costs" in r for r in after)  # R (and its reading) follows the cost

    def tree():
        return next(d.value for d in at.table if "verdict" in d.value.columns)

    # the browser opens on the first item a rewrite broke: its tree ends in the failing answer
    assert tree()["verdict"].iloc[0] == "the item as written" and tree()["fails"].iloc[-1]
    assert any(c.value.startswith("SmolLM2 Q4_1 (packaged) gets this item right") and "made it fail" in c.value
               for c in at.caption)
    first = tree()["prompt"].iloc[0]
    at.selectbox(key="stab_browse_qa_item").set_value(0).run()
    assert tree()["prompt"].iloc[0] != first and len(tree()) == 1  # item 1 fails as written: nothing searched
    assert any(c.value.startswith("SmolLM2 Q4_1 (packaged) fails this item as written, so no rewrite can add to its "
                                  "error rate.")
               for c in at.caption)


def test_stability_live_needs_a_model_that_answers(app):
    at = open_page(app, "stability")
    at.radio(key="stab_mode").set_value("Live run: your model and questions").run()
    assert any("A live run needs a model that answers" in e.value for e in at.error)


def test_stability_live_choices_fit_their_boxes(tmp_path, monkeypatch):
    """The live run's two selectboxes sit half a row wide: a chosen value of more than ~30 characters was cut at
    1024 and 1280 px ("Packaged SmolLM2-135M (offline, the r…"); the options are short, the whole explanation is
    in each widget's help."""
    from servers import free_port

    at = start(tmp_path, monkeypatch, page="stability", backend="openai",
               openai_base_url=f"http://127.0.0.1:{free_port()}/v1", openai_api_key="test-key")
    at.radio(key="stab_mode").set_value("Live run: your model and questions").run()
    at.radio(key="stab_live_source").set_value("shipped").run()
    assert not at.exception
    for key, explained in (("stab_live_assistant", "SmolLM2-135M"), ("stab_live_judge", "calibrated")):
        box = at.selectbox(key=key)
        assert len(box.options) == 2 and all(len(option) <= 28 for option in box.options), box.options
        assert explained in box.help


def test_stability_live_search_on_the_local_model(tmp_path, monkeypatch):
    """A live search on the packaged SmolLM2: Table 1 for the sidebar's model on the items searched, read in a
    sentence; the JSON download says what the screen says; a second run replays the store (no new call); a new
    input marks the result out of date and withdraws its download."""
    import json
    import sqlite3

    sent = capture_downloads(monkeypatch)
    # Opened straight on the page: the home page, which draws by itself on the local backend, is not run first.
    at = start(tmp_path, monkeypatch, page="stability", backend="local", max_tokens_local=8, timeout=1500)
    at.radio(key="stab_mode").set_value("Live run: your model and questions").run()
    at.radio(key="stab_live_source").set_value("shipped").run()
    at.number_input(key="stab_live_n").set_value(2).run()
    at.number_input(key="stab_live_k").set_value(1).run()
    at.number_input(key="stab_live_depth").set_value(1).run()
    at.number_input(key="stab_live_b").set_value(50).run()
    assert not at.exception and not any("Out of date" in w.value for w in at.warning)
    assert any(c.value.startswith("2 items × 1 target: per item, one answer as written, then up to 1 rewrite proposed")
               for c in at.caption)  # not "item(s)", "target(s)", "1 rewrites"
    at.button(key="stab_live_run").click().run()
    assert not at.exception, at.exception
    ours = grid_text(at.dataframe[0])
    assert list(ours["model"]) == ["local SmolLM2 (sidebar)"]
    assert ours["error rate as written (%)"].iloc[0] in ("0 %", "50 %", "100 %")
    assert "None" not in ours.to_string()  # a number that is not defined reads "—", with a footnote saying why
    if ours["# Avg. Queries"].iloc[0] == "—":
        assert any("no rewrite made the model fail" in c.value for c in at.caption)
    readings = [c.value for c in at.caption if "items as written" in c.value]
    assert len(readings) == 1 and "of the 2 items" in readings[0], readings
    ranking = " ".join(m.value for m in at.markdown)
    assert "a ranking needs two or more models" in ranking and "keeps its place" not in " ".join(
        c.value for c in at.caption)  # one model: no vacuous "most stable first" or "100 % of resamples"
    record = json.loads(sent["stability_live.json"])
    row = record["rows"][0]
    assert row["model"] == "local SmolLM2 (sidebar)" and row["n_items"] == 2
    # the CSV and the JSON are the screen's numbers: percentages under "%" in the CSV, fractions named so in the JSON
    import io

    import pandas as pd

    cells = pd.read_csv(io.BytesIO(sent["stability_live.csv"])).iloc[0]
    assert float(cells["error rate as written (%)"]) == pytest.approx(100 * row["baseline_risk"])
    assert ours["error rate as written (%)"].iloc[0] == f"{100 * row['baseline_risk']:.0f} %"
    if row["adversarial_fraction"] is not None:
        assert float(cells["Adversarial %"]) == pytest.approx(100 * row["adversarial_fraction"])
    assert record["settings"]["n_resamples"] == 50 and record["settings"]["source"] == "live search on this machine"
    asked = record["inputs"]  # the run's inputs: which items, K, rounds, the models, the judge, the system prompt
    assert asked["K"] == 1 and asked["rounds"] == 1 and asked["first n"] == 2 and asked["B"] == 50
    assert asked["items"] == "shipped qa items" and len(asked["item prompts"]) == 2
    assert asked["target"] == "local SmolLM2 (sidebar)" and asked["system prompt"] == ""
    assert asked["assistant"] == "Packaged SmolLM2 (offline)" and asked["judge"] == "Embedding similarity"
    assert asked["embedder"] and asked["seed"] == 0 and asked["task"] == "General QA"
    # the target answers greedily whatever the sidebar's temperature (stability.search): the file says so
    assert asked["target answers"] == "greedy (T = 0)" and "target temperature" not in asked
    # ... and at the recorded study's length, not the sidebar's max tokens (8 here): the page and the file say so
    assert asked["target max tokens"] == 24 and asked["rewrites"] == "T = 0.9, ≤ 24 tokens"
    assert any("at most 24 tokens, as the recorded study, whatever the sidebar's temperature and max tokens"
               in c.value for c in at.caption)
    assert asked["also run"] == []

    def calls() -> int:
        with sqlite3.connect(tmp_path / "store.sqlite") as db:
            return sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for (t,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"))

    stored = calls()
    assert stored > 0
    at.button(key="stab_live_run").click().run()  # every call is in the store: replayed, nothing new drawn
    assert not at.exception and calls() == stored and grid_text(at.dataframe[0]).equals(ours)

    sent.clear()
    at.number_input(key="stab_live_n").set_value(1).run()
    assert any("Out of date" in w.value for w in at.warning)
    at.multiselect(key="stab_live_compare").set_value(["smollm2-q2_k"]).run()
    (stale,) = [w.value for w in at.warning if "Out of date" in w.value]
    assert "SmolLM2 Q2_K" in stale and "smollm2-q2_k" not in stale  # the warning names models as the page does
    assert "stability_live.json" not in sent  # no download of a result that no longer answers the inputs


def test_a_failed_run_leaves_no_progress_bar_or_cancel_button(tmp_path, monkeypatch):
    """A dead endpoint: the error names the URL and what was kept; the run's bar and Cancel button are gone."""
    from servers import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there: the connection is refused at once
    at = start(tmp_path, monkeypatch, page="audit_one", backend="openai", openai_base_url=url,
               openai_api_key="test-key")
    at.number_input(key="one_k").set_value(4).run()
    at.button(key="one_run").click().run()
    assert not at.exception
    assert any(url in e.value and "samples" in e.value for e in at.error), [e.value for e in at.error]
    assert not [b for b in at.button if b.label == "Cancel"]
    assert not at.get("progress")


def capture_downloads(monkeypatch) -> dict:
    """file name → what its download button would send (bytes)."""
    from streamlit.delta_generator import DeltaGenerator

    real = DeltaGenerator.download_button
    sent = {}

    def download_button(self, label, data, file_name=None, *args, **kwargs):
        sent[file_name] = data
        return real(self, label, data, file_name, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", download_button)
    # st.download_button is bound to the main block at import: the report's button (inside a column's `with`)
    # goes through it
    monkeypatch.setattr(st, "download_button", lambda *args, **kwargs: download_button(st._main, *args, **kwargs))
    return sent


def themes_table(at):
    return next(t.value for t in at.table if "theme" in t.value.columns)


def test_audit_one_what_changed(app, monkeypatch):
    """The panel under the result: its themes and readings, the same in the JSON and HTML downloads; a new
    input greys it with the result (no download), and a new run shows the new perturbation's account."""
    import html
    import json

    sent = capture_downloads(monkeypatch)
    at = open_page(app, "audit_one")
    at.selectbox(key="one_scenario").set_value("seasons_question").run()
    at.selectbox(key="one_perturbation").set_value("mars").run()
    at.number_input(key="one_k").set_value(30).run()
    at.button(key="one_run").click().run()
    assert not at.exception
    assert "What changed" in [s.value for s in at.subheader]
    table = themes_table(at)
    readings = [m.value for m in at.markdown if m.value.startswith("Theme *")]
    assert readings and (table["significant (FDR 0.1)"] == "yes").sum() == len(readings)
    record = json.loads(sent["audit_result.json"])
    explanation = record["explanation"]
    assert [t["significant"] for t in explanation["themes"]].count(True) == len(readings)
    assert all(r in explanation["readings"] for r in readings)  # the download says what the screen says
    # a declared change with themes: nothing to reconcile, on screen or in the download
    assert record["decision"] == "REJECT H₀"
    assert not [i for i in at.info if "declared no change" in i.value]
    assert not [r for r in explanation["readings"] if "declared no change" in r]
    next(b for b in at.button if b.key == "audit_result_html_prepare").click().run()  # built on a click
    report = sent["audit_result.html"].decode()
    assert "<h2>What changed</h2>" in report and html.escape(readings[0].split("*")[1]) in report

    at.selectbox(key="one_perturbation").set_value("paraphrase_1").run()
    assert any("Out of date" in w.value for w in at.warning)
    assert len(at.download_button) == 0
    assert themes_table(at).equals(table)  # still Mars's account, greyed with its result
    at.button(key="one_run").click().run()
    assert not any("Out of date" in w.value for w in at.warning)
    assert not [m for m in at.markdown if m.value.startswith("Theme *")]
    assert any("the change, if any, is diffuse" in i.value for i in at.info)


def _themed_file(share: float) -> bytes:
    """Arm a: statin advice; arm b: a ``share`` of jokes among the advice (embeddings in the file)."""
    import json

    import numpy as np

    rng = np.random.default_rng(5)
    advice, joke = np.eye(8)[0], np.eye(8)[1]
    rows = []
    for arm in ("a", "b"):
        for i in range(20):
            funny = arm == "b" and i < share * 20
            text = (f"Why did the statin cross the road? Joke {i}." if funny
                    else f"Stop smoking and take a statin, option {i}.")
            vector = (joke if funny else advice) + rng.normal(scale=0.05, size=8)
            rows.append(json.dumps({"arm": arm, "text": text, "embedding": vector.round(4).tolist()}))
    return ("\n".join(rows) + "\n").encode()


def test_byo_what_changed(app, monkeypatch):
    """An uploaded file's account names its own arms, is in its downloads, and follows a new file."""
    import json

    sent = capture_downloads(monkeypatch)
    at = open_page(app, "byo_samples")
    at.file_uploader(key="byo_file").set_value(("jokes.jsonl", _themed_file(0.5), "application/json")).run()
    at.button(key="byo_run").click().run()
    assert not at.exception
    readings = [m.value for m in at.markdown if m.value.startswith("Theme *")]
    assert any(r.startswith("Theme *cross, did, joke* — 50 % of b outputs vs 0 % of a") for r in readings), readings
    record = json.loads(sent["byo_result.json"])
    assert record["explanation"]["arms"] == {"x": "a", "y": "b"}
    assert record["embedder"] == "from the file"  # as the caption says (the Audit JSON names its embedder too)
    assert any(c.value.startswith("Outputs: your file") and "embeddings from the file" in c.value for c in at.caption)
    next(b for b in at.button if b.key == "byo_result_html_prepare").click().run()  # built on a click
    assert "What changed" in sent["byo_result.html"].decode()
    at.file_uploader(key="byo_file").set_value(("advice.jsonl", _themed_file(0.0), "application/json")).run()
    assert any("Out of date" in w.value and "advice.jsonl" in w.value for w in at.warning)
    assert len(at.download_button) == 0
    at.button(key="byo_run").click().run()
    assert not [m for m in at.markdown if m.value.startswith("Theme *")]
    assert any("diffuse" in i.value for i in at.info)


def test_many_perturbations_explain(app, monkeypatch):
    """The SPEC's `explain: true` in the app: each perturbation's account in the family downloads, one on screen."""
    import json

    sent = capture_downloads(monkeypatch)
    at = open_page(app, "many_perturbations")
    at.selectbox(key="many_scenario").set_value("seasons_question").run()
    at.number_input(key="many_k").set_value(20).run()
    at.button(key="many_run").click().run()
    assert "What changed" not in [s.value for s in at.subheader]
    assert all("explanation" not in p for p in json.loads(sent["family.json"])["perturbations"])
    # The family CSV says what produced it, as the JSON beside it does (scenario, k, B, seed, α, correction, ω).
    from test_exports import read_csv

    record, read = json.loads(sent["family.json"]), read_csv(sent["family.csv"])
    shown = tables(at)[0]
    assert list(read.columns[:len(shown.columns)]) == list(shown.columns)
    assert "permutations B" not in shown.columns  # the screen's table is left as it was
    settings = record["settings"]
    assert (settings["scenario"], settings["k"], settings["correction"], settings["alpha"]) == (
        "seasons_question", 20, "bonferroni", 0.05)
    for column, key in [("scenario", "scenario"), ("samples per arm k", "k"), ("permutations B", "n_resamples"),
                        ("seed", "seed"), ("alpha", "alpha"), ("correction", "correction"),
                        ("discrepancy ω", "discrepancy")]:
        assert set(read[column]) == {settings[key]}, (column, set(read[column]), settings[key])
    assert set(read["sampler"]) == {"; ".join(f"{k}={v}" for k, v in settings["sampler"].items())}
    at.toggle(key="many_explain").set_value(True).run()
    at.selectbox(key="many_explained").set_value(5).run()  # Earth → Mars
    assert not at.exception
    assert "What changed" in [s.value for s in at.subheader]
    readings = [m.value for m in at.markdown if m.value.startswith("Theme *")]
    entries = json.loads(sent["family.json"])["perturbations"]
    assert len(entries) == 6 and all("themes" in p["explanation"] for p in entries)
    assert all(r in entries[5]["explanation"]["readings"] for r in readings) and readings


def test_many_perturbations_says_an_unreachable_level_and_plans_from_a_pilot(app):
    at = open_page(app, "many_perturbations")
    at.selectbox(key="many_scenario").set_value("seasons_question").run()
    at.multiselect(key="many_chosen_seasons_question").set_value(["mars", "typo"]).run()
    at.number_input(key="many_k").set_value(20).run()
    at.number_input(key="many_b").set_value(100).run()
    at.select_slider(key="many_alpha").set_value(0.001).run()
    at.button(key="many_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # α/m = 0.0005 < 1/101: the family sentence says no p can reach it and what B would (issue 42).
    assert any("No p of this test can reach the level: Bonferroni over 2 tests asks p ≤ α/2 = 0.0005" in c.value
               and "B ≥ 1,999 re-splits would reach it" in c.value for c in at.caption)
    at.select_slider(key="many_alpha").set_value(0.1).run()
    at.number_input(key="many_b").set_value(200).run()
    at.button(key="many_run").click().run()
    at.selectbox(key="many_pilot").set_value(0).run()
    at.button(key="many_pilot_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    pilot = next(t.value for t in at.dataframe if "planned k per arm" in t.value.columns)
    assert list(pilot["ω"]) == ["jsd", "energy"]
    assert any(m.value.startswith("**jsd**: ") for m in at.markdown)
