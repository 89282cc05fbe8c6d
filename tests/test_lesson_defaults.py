"""Issue 45's small defects, each pinned: the method's script runs, k leaves Recorded's cap, a CSV names its
statistic, the paper views' CSVs carry their inputs, the null chart's title fits, the favicon is local."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dbpa_app.ui.lesson import LESSON_K, lesson_k, method_code

REPO = Path(__file__).resolve().parents[1]


def test_the_method_script_runs_as_shown(minilm, monkeypatch):
    """The home page's code snippet ran into undefined x0, x1 and pvalues; now it is a script."""
    from dbpa_core import embedders

    code = method_code(backend="simulated", prompt="What causes the seasons on Earth?",
                       perturbed="Why does Earth have seasons?", system1="Answer tersely.", k=6,
                       statistic="centroid", n_resamples=99, alpha=0.05)
    monkeypatch.setattr(embedders, "get_embedder", lambda name="minilm", **kw: minilm)  # the session's MiniLM
    namespace: dict = {}
    exec(compile(code, "<method snippet>", "exec"), namespace)  # noqa: S102 - running the shown code is the test
    assert namespace["e0"].shape == (6, 384) and 0 < namespace["result"].pvalue <= 1
    assert len(namespace["family"].reject) == 1
    assert "system='Answer tersely.'" in code and "x0 = 'What causes" in code


def test_k_goes_back_to_the_lesson_k_after_recorded():
    assert lesson_k(None, None, 200) == LESSON_K == 40
    assert lesson_k(40, None, 20) == 20  # Recorded holds 20 per arm
    assert lesson_k(20, 20, 200) == 40  # leaving Recorded: the cap was not a choice
    assert lesson_k(12, 20, 200) == 12  # a k chosen under the cap stays
    assert lesson_k(150, 200, 200) == 150 and lesson_k(3, 200, 200) == 5


def test_a_family_csv_names_its_statistic(minilm):
    """A column "ω" held the centroid distance T; now it says which statistic it holds."""
    from dbpa_core.audit import AuditRequest, SamplerConfig, run
    from dbpa_core.data.scenarios import load_scenarios
    from dbpa_core.present.tables import family_frame, statistic_name

    scenario = load_scenarios()["seasons_question"]
    for discrepancy, column in (("centroid", "centroid T"), ("jsd", "ω")):
        request = AuditRequest.from_scenario(scenario, sampler=SamplerConfig("simulated"), k=5, n_resamples=200,
                                             discrepancy=discrepancy)
        frame = family_frame(run(request, embedder=minilm))
        assert column in frame.columns and (column == "ω" or "ω" not in frame.columns), list(frame.columns)
    assert statistic_name("MMD(bandwidth=None)") == "MMD" and statistic_name("Unknown()") == "statistic"


def test_paper_view_csvs_carry_their_inputs():
    from dbpa_core.paper.stability import stability_study
    from dbpa_core.present.csv_inputs import settings_inputs, with_inputs
    from dbpa_core.present.stability_report import stability_record, table1_frame

    record = stability_record(stability_study(cost="paper", n_resamples=0, seed=3))
    table = with_inputs(table1_frame(stability_study(cost="paper", n_resamples=0, seed=3)), settings_inputs(record))
    assert {"cost", "seed", "bootstrap B"} <= set(table.columns)  # its B resamples items: not permutations
    assert (table["cost"] == "paper").all() and (table["seed"] == 3).all() and (table["bootstrap B"] == 0).all()
    assert "ratios" not in table.columns  # a curve's grid is not an input
    alignment = {"experiment": "alignment", "settings": {"n_resamples": 1000, "seed": 0, "k": 50}}
    assert settings_inputs(alignment) == {"experiment": "alignment", "n_resamples": 1000, "seed": 0, "k": 50}


def test_the_null_title_fits_half_a_1024_px_page():
    """The title was one line, cut in a half-width chart at 1024 px: now two short lines."""
    from dbpa_core.present.figures import null_histogram
    from dbpa_core.stats.permutation import dbpa_test

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 8)), rng.normal(size=(20, 8))
    x, y = x / np.linalg.norm(x, axis=1, keepdims=True), y / np.linalg.norm(y, axis=1, keepdims=True)
    figure = null_histogram(dbpa_test(x, y, n_resamples=5000, rng=0), label="centroid T", replay_frames=4)
    lines = figure.layout.title.text.split("<br>")
    assert len(lines) == 2 and max(map(len, lines)) <= 32, lines  # ≈ 240 px at 14 px
    assert all(len(frame.layout.title.text.split("<br>")) == 2 for frame in figure.frames)


def test_the_favicon_is_local():
    """A Material icon or emoji as page_icon is fetched from the internet (it failed offline)."""
    source = (REPO / "dbpa_app" / "app.py").read_text()
    assert 'page_icon=str(Path(__file__).parent / "favicon.png")' in source
    icon = REPO / "dbpa_app" / "favicon.png"
    assert icon.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and icon.stat().st_size < 5_000
    assert '"favicon.png"' in (REPO / "pyproject.toml").read_text()  # shipped in the wheel


@pytest.mark.parametrize(("pvalue", "headline"), [(0.001, "Likely not the claimed model"),
                                              (0.4, "Consistent with the claimed model")])
def test_the_rut_page_leads_with_the_plain_verdict(pvalue, headline):
    source = (REPO / "dbpa_app" / "ui" / "rut.py").read_text()
    assert "rut_verdict(result.pvalue, alpha)" in source
    from dbpa_core.present.verdicts import rut_verdict

    assert rut_verdict(pvalue, 0.05).startswith(headline)


def test_views_that_do_not_sample_say_so_and_typed_prompts_are_warned(tmp_path, monkeypatch):
    """The sidebar's sampler settings showed on views that ignore them, with no note; typed prompts on the
    simulated backend gave p ≤ 0.001 for any two prompts, said only after the run."""
    from test_app import open_page, start

    from dbpa_app.ui.sidebar import SAMPLER_IGNORED
    from dbpa_core.present.verdicts import TYPED_ON_SIMULATED

    at = start(tmp_path, monkeypatch, page="byo_samples")
    assert not at.exception
    notes = [i.value for i in at.sidebar.info]
    assert notes == [SAMPLER_IGNORED.format(why="it tests the outputs you upload")]
    at = open_page(at, "audit_one")
    assert not [i for i in at.sidebar.info if "does not sample" in i.value]  # this view samples
    # The paper views (their default) say so too, and stop saying it once they sample live.
    for page, source, why in (("alignment", "align_source", "the paper's recorded responses"),
                              ("persona_study", "persona_source", "the paper's recorded responses"),
                              ("tpr_fpr", "roc_source", "the paper's recorded responses")):
        at = open_page(at, page)
        assert [i.value for i in at.sidebar.info] == [
            SAMPLER_IGNORED.format(why=why + "; only the seed is used")], page
        at.radio(key=source).set_value("live").run()
        assert not [i for i in at.sidebar.info if "does not sample" in i.value], page
    at = open_page(at, "audit_one")
    at.radio(key="one_source").set_value("Type both prompts").run()
    assert any(w.value == TYPED_ON_SIMULATED for w in at.warning)  # before any Run
