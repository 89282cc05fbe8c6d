"""AppTest of the home page (the exposition), and of what its first view relies on."""

from __future__ import annotations

import math

import pytest

from test_app import metric, start

EXPOSITION_COLUMNS = ["perturbation", "true effect (simulated)", "observed JSD", "p", "p·Bonferroni",
                      "decision"]


@pytest.fixture
def app(tmp_path, monkeypatch):
    return start(tmp_path, monkeypatch)


def family_table(at):
    """Panel 03's table (the "What changed" panel above it has a static table too)."""
    return next(t.value for t in at.table if "perturbation" in t.value.columns)


def captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


def test_first_view_needs_no_model(tmp_path, monkeypatch):
    from dbpa_core.embedders import minilm

    # Models loaded by earlier tests in this process stay in the module's cache: start from none.
    monkeypatch.setattr(minilm, "_MINILM_MODELS", {})
    at = start(tmp_path, monkeypatch)
    # Checked at once: the page starts loading MiniLM in the background only after
    # it has drawn, one second later.
    assert not minilm._MINILM_MODELS, "the first view loaded the embedding model"
    assert at.title[0].value.startswith("Did the intervention change")
    assert "Simulated backend: synthetic answers whose true effect is known by construction" in captions(at)
    assert "Ground truth of the simulated model: this intervention changes nothing" in captions(at)
    assert metric(at, "Observed JSD")
    assert "k = 40 per arm · B = 800 · JSD" in captions(at)


def test_table_has_the_exposition_columns(app):
    table = family_table(app)
    assert list(table.columns) == EXPOSITION_COLUMNS
    assert len(table) == 6
    effects = dict(zip(table["perturbation"], table["true effect (simulated)"]))
    assert effects["1. Paraphrase: “Why does … have seasons?”"] == "0 % (control)"
    assert effects["6. Earth → Mars"].endswith("%") and effects["6. Earth → Mars"] != "0 %"
    assert "A real change (the clearest of 2 targets: smallest p)" in captions(app)  # known by construction
    # p·Bonferroni is m·p capped at 1, on the same p the p column shows
    for p, adjusted in zip(table["p"], table["p·Bonferroni"]):
        if not p.startswith("≤"):
            assert float(adjusted) == pytest.approx(min(1.0, 6 * float(p)), rel=0.02, abs=1e-3)
    mars = table.iloc[5]
    # the floor, short and on one line (a no-break space after "≤": at 1024 px "≤" and "0.0012" wrapped apart)
    assert mars["decision"] == "REJECT H₀" and mars["p"].startswith("≤\u00a00.0")
    assert not any("≤ " in cell for cell in [*table["p"], *table["p·Bonferroni"]])
    n_declared = int((table["decision"] == "REJECT H₀").sum())
    verb = "is" if n_declared == 1 else "are"
    assert f"{n_declared} of 6 perturbations {verb} declared to change" in captions(app)


def test_statistic_toggle_shows_its_own_effect(app):
    at = app
    jsd = metric(at, "Observed JSD")
    at.radio(key="home_statistic").set_value("centroid").run()
    assert not at.exception
    statistic = float(metric(at, "Observed centroid T"))
    assert metric(at, "Effect beyond chance")  # beyond chance, like the JSD card (issue 29)
    # the raw distance √T is read in a caption
    distance = next(float(c.value.split(" are ")[1].split(" apart")[0]) for c in at.caption
                    if "average outputs of the two arms are" in c.value)
    assert distance == pytest.approx(math.sqrt(statistic), rel=6e-3)
    assert "observed centroid T" in family_table(at).columns
    assert any("average outputs of the two arms" in c.value for c in at.caption)
    at.radio(key="home_statistic").set_value("jsd").run()
    assert metric(at, "Observed JSD") == jsd
    assert metric(at, "Effect beyond chance")


def test_n_presets_and_resample(app):
    at = app
    at.selectbox(key="home_perturbation").set_value("mars").run()
    next(b for b in at.button if b.key == "home_n_200").click().run()
    assert not at.exception
    assert at.slider(key="home_k").value == 200
    assert "k = 200 per arm" in captions(at)
    assert family_table(at).iloc[5]["decision"] == "REJECT H₀"
    next(b for b in at.button if b.key == "home_n_40").click().run()
    assert at.slider(key="home_k").value == 40
    before = metric(at, "Observed JSD")
    next(b for b in at.button if b.key == "home_resample_button").click().run()
    assert not at.exception
    assert metric(at, "Observed JSD") != before  # new outputs, new statistic
    assert "resample 1" in captions(at)


def test_the_k_presets_say_their_time_before_they_are_pressed(app, monkeypatch):
    """Issue 45's second timed walk: after a Resample the k = 200 preset took 11 s with nothing said until it had
    started.  Its time is said under the presets when its outputs are not embedded yet (the first view's k = 200
    ships embedded: nothing then), and not for the k on screen."""
    import os

    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    at = app
    at.run()
    assert not at.exception, at.exception
    assert "k = 200: about" not in captions(at)  # shipped with the first view's vectors
    next(b for b in at.button if b.key == "home_resample_button").click().run()
    assert not at.exception
    said = [c for c in captions(at).split("\n") if "k = 200: about" in c]
    assert said and "on this machine" in said[0], captions(at)
    next(b for b in at.button if b.key == "home_n_200").click().run()
    assert not at.exception
    assert "k = 200: about" not in captions(at) and "k = 40: about" not in captions(at)


def test_a_decision_alone_is_read_beside_the_familys(app):
    """The strip tests the chosen intervention alone (p ≤ α), the family table all of them (Bonferroni): where
    they differ the strip says why and which to report (trial 7: "REJECT H₀" above "FAIL TO REJECT H₀" for
    "Explain like I'm five", resample 6, without a word); where they agree it says nothing."""
    at = app
    at.selectbox(key="home_perturbation").set_value("eli5").run()
    seen = {True: 0, False: 0}
    for resample in range(1, 9):
        next(b for b in at.button if b.key == "home_resample_button").click().run()
        assert not at.exception
        alone = metric(at, "Decision") if any(m.label == "Decision" for m in at.metric) else None
        row = family_table(at).iloc[4]
        assert row["perturbation"].startswith("5.")
        p = float(str(row["p"]).replace("≤", "").strip())
        differ = p <= 0.05 and row["decision"] == "FAIL TO REJECT H₀"
        notes = [w.value for w in at.warning if w.value.startswith("Alone, this intervention's p ≤ α = 0.05")]
        assert len(notes) == differ, (resample, p, row["decision"], notes, alone)
        if differ:
            assert "Bonferroni asks p ≤ α/6 = 0.0083, which it does not reach" in notes[0]
        seen[differ] += 1
    assert seen[True] and seen[False], seen  # both cases were shown (else the test proves nothing)


def test_downloads_after_a_resample_say_how_to_draw_it_again(app, monkeypatch):
    """A download after "Resample" records the scenario and the replicate, and the seeds the sampler got, in
    its JSON and its CSV (trial 7: only "seed": 0, which re-runs another draw: p 0.730 instead of 0.864)."""
    import json

    from test_app import capture_downloads
    from test_exports import read_csv

    from dbpa_core.audit.request import arm_seed

    sent = capture_downloads(monkeypatch)
    at = app
    next(b for b in at.button if b.key == "home_resample_button").click().run()
    assert not at.exception and "resample 1" in captions(at)
    settings = json.loads(sent["family.json"])["settings"]
    assert (settings["scenario"], settings["seed"], settings["replicate"]) == ("seasons_question", 0, 1)
    assert settings["sampler_seeds"] == {"original": arm_seed(0, perturbed=False, replicate=1),
                                         "perturbed": arm_seed(0, perturbed=True, replicate=1)}
    read = read_csv(sent["family.csv"])
    assert set(read["scenario"]) == {"seasons_question"} and set(read["replicate"]) == {1}
    # re-running the recorded settings gives the numbers on screen
    from dbpa_core.audit import AuditRequest, SamplerConfig, run
    from dbpa_core.data.scenarios import load_scenarios

    request = AuditRequest.from_scenario(load_scenarios()[settings["scenario"]], sampler=SamplerConfig(
        **settings["sampler"]), k=settings["k"], n_resamples=settings["n_resamples"], seed=settings["seed"],
        replicate=settings["replicate"])
    again = run(request)
    assert [r.test.pvalue for r in again.results] == list(read["p"])


def test_streaming_ends_on_the_full_result(app):
    at = app
    at.selectbox(key="home_perturbation").set_value("eli5").run()
    final = (metric(at, "Observed JSD"), metric(at, "p-value"))
    next(b for b in at.button if b.key == "home_stream").click().run()
    assert not at.exception
    # the partial results were replaced in place by the full one, not appended
    assert (metric(at, "Observed JSD"), metric(at, "p-value")) == final
    assert "Streaming:" not in captions(at)
    assert sum(1 for s in at.subheader if s.value.startswith("02")) == 1


def test_switching_scenario_resets_the_intervention(app):
    """Issue 13: the Intervention box never keeps the previous scenario's label."""
    at = app
    at.selectbox(key="home_perturbation").set_value("mars").run()
    at.selectbox(key="home_scenario").set_value("customer_support").run()
    assert not at.exception
    from dbpa_core.data.scenarios import load_scenarios

    support = load_scenarios()["customer_support"]
    first = support.perturbations[0]
    assert at.selectbox(key="home_perturbation").value == first.id
    assert f"{support.title} · {first.label}" in captions(at)
    assert "Earth → Mars" not in captions(at)


def test_quick_pick_buttons_choose_an_intervention(app):
    at = app
    next(b for b in at.button if b.key == "home_pick_5").click().run()
    assert at.selectbox(key="home_perturbation").value == "eli5"


def test_recorded_backend_clamps_n(tmp_path, monkeypatch):
    at = start(tmp_path, monkeypatch, backend="recorded", home_show_changed=True)
    assert not at.exception
    assert at.slider(key="home_k").value == 20  # the default 40 clamped to what was recorded
    assert "20 responses per prompt were recorded" in captions(at)
    presets = [b for b in at.button if b.key.startswith("home_n_")]
    assert [b.label for b in presets] == ["k = 20"]  # not two identical "k = 20" buttons (issue 29)
    presets[0].click().run()
    assert not at.exception and at.slider(key="home_k").value == 20
    table = family_table(at)
    assert set(table["true effect"]) == {"unknown"}
    assert "Real model outputs: the true effect is unknown" in captions(at)
    # the detection card does not call a real model's target "a real change": its effect is unknown
    assert "A target, meant to change the answers (the clearest of 2 targets: smallest p)" in captions(at)
    assert "A real change" not in captions(at)
    # every recorded output is in use at k = 20: Resample replays them, and the page says so; the statistic and
    # the What-changed account stay (they read "2 of 2 themes differ", then "2 of 3", on the same outputs)
    assert "At k = 20 all of them are in use, so **Resample** replays the same outputs" in captions(at)
    at.selectbox(key="home_perturbation").set_value("eli5").run()  # its themes changed with the order before
    before = (metric(at, "Observed JSD"), [m.value for m in at.markdown if m.value.startswith("Theme *")],
              themes_table(at).drop(columns="p"))
    next(b for b in at.button if b.key == "home_resample_button").click().run()
    assert not at.exception and "resample 1" in captions(at)
    after = (metric(at, "Observed JSD"), [m.value for m in at.markdown if m.value.startswith("Theme *")],
             themes_table(at).drop(columns="p"))
    assert before[0] == after[0] and before[1] == after[1], (before[:2], after[:2])
    assert len(before[2]) > 1 and before[2].equals(after[2]), (before[2], after[2])


def chart(at, key: str) -> dict:
    """The Plotly figure the page drew with ``key``, as its JSON spec."""
    import json

    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}"))


def themes_table(at):
    return next(t.value for t in at.table if "theme" in t.value.columns)


def test_what_changed_panel(app, minilm):
    """Under the result: the themes table, the readings and the theme of each point in the cloud. A control reads
    as diffuse (no theme presented as a finding); Earth → Mars reads as themes with their q; the numbers are the
    library's on the same arms, B and seed; the FDR level re-reads them at once."""
    from dbpa_core.audit import AuditRequest, SamplerConfig, run
    from dbpa_core.data.scenarios import load_scenarios
    from dbpa_core.present.formatting import format_pvalue
    from dbpa_core.stats.explain import explain_change

    at = app
    at.toggle(key="home_show_changed").set_value(True).run()  # one click away (issue 45), not on by default
    subheaders = [s.value for s in at.subheader]
    assert subheaders.index("02 · Outputs and the permutation null") < subheaders.index("What changed") \
        < subheaders.index("03 · A family of perturbations")
    control = themes_table(at)
    assert control["significant (FDR 0.1)"].eq("no").all()
    assert any("the change, if any, is diffuse" in i.value for i in at.info)
    assert not [m for m in at.markdown if m.value.startswith("Theme *")]  # nothing read as a finding

    at.selectbox(key="home_perturbation").set_value("mars").run()
    assert not at.exception
    table = themes_table(at)
    readings = [m.value for m in at.markdown if m.value.startswith("Theme *")]
    assert readings and (table["significant (FDR 0.1)"] == "yes").sum() == len(readings)
    assert not any("diffuse" in i.value for i in at.info)

    scenario = load_scenarios()["seasons_question"]
    request = AuditRequest.from_scenario(scenario, sampler=SamplerConfig("simulated", temperature=1.0, max_tokens=128),
                                         k=40, n_resamples=800, discrepancy="jsd")
    mars = run(request, embedder=minilm).results[[p.id for p in scenario.perturbations].index("mars")]
    expected = explain_change(mars.original.texts, mars.perturbed.texts, mars.original.embeddings,
                              mars.perturbed.embeddings, fdr=0.1, n_resamples=800, rng=0)
    significant = expected.significant_themes
    assert [", ".join(t.terms[:3]) for t in significant] == [r.split("*")[1] for r in readings]
    assert list(table["perturbed (%)"][:len(significant)]) == [f"{100 * t.share_y:.0f}" for t in significant]
    # The sentence above the table reads the same share as the table (it read "78 %" beside "77.5")
    assert all(f"— {share} % of" in reading for share, reading in zip(table["perturbed (%)"], readings))
    # A p at its floor 1/(B+1) is written "≤ 0.0012" in the table, as on the p-value card, not "0.0012".
    assert list(table["p"][:len(significant)]) == [format_pvalue(t.pvalue, 800).replace("≤ ", "≤\u00a0")
                                                   for t in significant]  # a no-break space: never wrapped after ≤
    assert any(p.startswith("≤") for p in table["p"]) == any(t.pvalue <= 1 / 801 for t in expected.themes)

    cloud = chart(at, "home_theme_cloud")
    points = [(trace["marker"]["color"], text) for trace in cloud["data"] for text in trace["hovertext"]]
    assert len(points) == 80  # every output, each with its theme in the hover text
    assert all(" · theme <i>" in text for _, text in points)
    colours = {colour for colour, _ in points}
    assert len(colours - {"#c7c7c7"}) == len(significant)  # one colour per significant theme, grey for the rest

    at.select_slider(key="home_fdr").set_value(0.01).run()  # a re-reading: nothing goes out of date
    assert "significant (FDR 0.01)" in themes_table(at).columns
    assert not any("Out of date" in w.value for w in at.warning)


def test_what_changed_is_computed_once_for_every_session(tmp_path, monkeypatch):
    """The explanations are cached by the request (and FDR, B): a second session computes none again; another
    FDR level is computed once more."""
    from streamlit.testing.v1 import AppTest

    from dbpa_core.stats import explain
    from test_app import REPO

    calls = []
    real = explain.explain_change
    monkeypatch.setattr(explain, "explain_change", lambda *args, **kwargs: calls.append(kwargs["fdr"])
                        or real(*args, **kwargs))
    at = start(tmp_path, monkeypatch, home_show_changed=True)
    assert calls == [0.1] * 6  # the shown intervention's, shared with the downloads' six
    again = AppTest.from_file(str(REPO / "dbpa_app" / "app.py"), default_timeout=600)
    again.session_state["home_show_changed"] = True
    again.run()
    assert not again.exception and themes_table(again).equals(themes_table(at))
    assert calls == [0.1] * 6
    at.select_slider(key="home_fdr").set_value(0.05).run()
    assert calls == [0.1] * 6 + [0.05] * 6


def follow_live_views(monkeypatch) -> tuple[list[str], list[str]]:
    """Every header a live view (ui.live.LiveDraw) writes and the key of every chart drawn, in order."""
    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator

    headers, charts = [], []
    real_markdown, real_chart = st.markdown, DeltaGenerator.plotly_chart

    def markdown(body, *args, **kwargs):
        if str(body).startswith("**Live:"):
            headers.append(str(body))
        return real_markdown(body, *args, **kwargs)

    def plotly_chart(self, figure, *args, **kwargs):
        key = kwargs.get("key") or ""
        # A live null's key carries its x-axis title, which a user reads
        charts.append(f"{key}|{figure.layout.xaxis.title.text}" if key.startswith("live_null_") else key)
        return real_chart(self, figure, *args, **kwargs)

    monkeypatch.setattr(st, "markdown", markdown)
    monkeypatch.setattr(DeltaGenerator, "plotly_chart", plotly_chart)
    return headers, charts


def counted(headers: list[str], k: int) -> tuple[list[int], list[tuple[int, ...]]]:
    """The outputs drawn at each redraw of a live view of k per arm: totals, and (original, perturbed) counts."""
    import re

    counts = [tuple(int(n) for n in re.findall(rf"(\d+) of {k}", header)) for header in headers]
    return [sum(c) for c in counts], counts


def assert_followed_live(headers: list[str], charts: list[str], k: int) -> None:
    """A live view of k per arm was followed to the end: there at once, each redraw with more outputs (the
    first output as soon as it came), the time left read from the measured throughput, the null and P0/P1."""
    import re

    totals, counts = counted(headers, k)
    assert len(totals) >= 3 and totals == sorted(set(totals)) and totals[-1] == 2 * k, headers
    assert counts[:2] == [(0, 0), (1, 0)]  # the empty view at once, then the first output as soon as it came
    assert all(re.search(r"measuring the throughput|[\d.]+ outputs/s measured · about \d+ (s|min) left|all outputs "
                         r"drawn", header) for header in headers), headers
    assert any(key.startswith("live_null_") for key in charts) and any(key.startswith("live_sims_") for key in charts)
    # A chart is drawn as soon as it can be, not at the next tick of the clock: the clouds at the second output,
    # the null and P0/P1 when the perturbed arm (drawn after the original) has its second.
    assert (2, 0) in counts and (k, 2) in counts, counts
    assert f"live_null_{k}_2|JSD" in charts and "live_clouds_2_0" in charts, charts  # JSD: a name, not an id


@pytest.mark.slow
def test_a_local_draw_is_shown_live_as_outputs_arrive(tmp_path, monkeypatch):
    """On the local backend (the packaged SmolLM2) the home page draws the chosen intervention's two arms first and
    shows them as they arrive: the view is there at once, each redraw of it has more outputs, the null and P0/P1
    appear once both arms have two, the time left is read from the measured throughput, and the view gives way to
    the final result.
    Audit one perturbation is followed live too, starting from the outputs the store already holds."""
    import re

    from test_app import open_page

    headers, charts = follow_live_views(monkeypatch)
    # Tiny draws (8 tokens, B = 100): the machine the tests run on may be shared and slow.
    at = start(tmp_path, monkeypatch, backend="local", max_tokens_local=8, home_k=5, home_b=100, timeout=1500)
    assert_followed_live(headers, charts, 5)
    # Its time left covers the pair on view and says that the scenario's other arms follow
    assert all(re.search(r" · then \d+ more arms behind the bar$", h) for h in headers), headers
    assert all("left for these two arms (re-read at each output)" in h for h in headers if " left" in h), headers
    assert metric(at, "Observed JSD") and not [m for m in at.markdown if m.value.startswith("**Live:")]

    headers.clear()
    at = open_page(at, "audit_one")
    at.selectbox(key="one_scenario").set_value("seasons_question").run()
    at.number_input(key="one_k").set_value(6).run()  # the first 5 of each arm are in the store
    at.number_input(key="one_b").set_value(100).run()
    at.button(key="one_run").click().run()
    assert not at.exception
    totals, counts = counted(headers, 6)
    assert totals == sorted(set(totals)) and totals[-1] == 12 and counts[0][1] == 0, headers
    assert not [h for h in headers if "behind the bar" in h]  # one perturbation: nothing follows the pair
    assert metric(at, "Decision") and not [m for m in at.markdown if m.value.startswith("**Live:")]


def test_the_bar_shows_no_second_time_left_beside_a_live_view():
    """The run's bar extrapolates the time left, except while a live view shows its own (one screen, one
    estimate); once the view closes, the bar's estimate is back."""
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from dbpa_app.ui.runs import RunProgress

        class View:  # what the bar reads of ui.live.LiveDraw
            shows_time_left = st.session_state["live"]

            def __call__(self, update):
                pass

        bar = RunProgress("Drawing", listener=View())
        bar.started -= 10  # ten seconds into the run
        bar.report(0.5, "sampling")

    def bar_text(live: bool) -> str:
        at = AppTest.from_function(script)
        at.session_state["live"] = live
        at.run()
        assert not at.exception
        (progress,) = at.get("progress")
        return progress.proto.text

    assert bar_text(False) == "Drawing: sampling · about 10 s left"
    assert bar_text(True) == "Drawing: sampling"


def test_the_live_time_left_says_what_it_covers():
    """The live view's estimate is for the two arms on view, re-read at each output (a batch of long answers
    may end at once, so it can stand still), and says how many arms the run draws after them."""
    from dbpa_app.ui.live import time_left

    assert time_left(4, 4, 10.0, more_arms=5) == ("0.4 outputs/s measured · about 10 s left for these two arms "
                                                  "(re-read at each output) · then 5 more arms behind the bar")
    assert time_left(240, 2, 2.0) == ("1 outputs/s measured · about 4 min left for these two arms (re-read at each "
                                       "output)")
    assert time_left(0, 8, 9.0, more_arms=1) == "all outputs drawn · then 1 more arm behind the bar"
    assert time_left(3, 1, 9.0) == "measuring the throughput…"


def progress_values():
    """An AppTest script: a RunProgress tracking the session's ``request`` is fed its ``updates`` (stage, label,
    done, total); the fractions its bar showed and the outputs it counted go back into the session."""
    import streamlit as st

    from dbpa_core.audit.arms import RunUpdate
    from dbpa_app.ui.runs import RunProgress

    bar = RunProgress("Drawing")
    bar.track(st.session_state["request"])
    shown = []
    real = bar._bar.progress
    bar._bar.progress = lambda value, text=None: (shown.append(value), real(value, text=text))
    for stage, label, done, total in st.session_state["updates"]:
        bar.update(RunUpdate(stage, label, done, total))
    st.session_state["shown"], st.session_state["kept"] = shown, bar.kept


def test_the_bar_never_goes_back_when_a_live_pair_is_read_again():
    """The home page draws the followed pair first, then the whole family, whose first two arms (the pair) come
    back from the store: the bar measures the family throughout and never moves back (it fell from 63 % to 22 %
    in a user's trial), and the outputs kept are counted once."""
    from types import SimpleNamespace

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(progress_values)
    at.session_state["request"] = SimpleNamespace(perturbations=(1, 2, 3), sequential=None, k=4)
    at.session_state["updates"] = [(stage, label, 4, 4) for label in ("original", "pair", "original", "pair",
                                                                      "other 1", "other 2")
                                   for stage in ("sampling", "embedding")]
    at.run()
    assert not at.exception
    shown = at.session_state["shown"]
    assert shown == sorted(shown) and shown[-1] == 1.0, shown
    assert shown[3] == pytest.approx(0.5)  # the pair drawn: two arms of four
    assert at.session_state["kept"] == 16  # four arms of four outputs, each counted once


def test_a_notice_of_a_stopped_run_goes_when_the_next_run_finishes():
    """"The previous run stopped…" is true until the next run finishes, then it is old news and goes; a run that
    had sampled nothing does not claim a count of outputs kept."""
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from dbpa_app.ui.runs import RunProgress
        from dbpa_app.ui.sidebar import interrupted_notice

        interrupted_notice()
        if st.session_state.get("finish"):
            with RunProgress("Drawing"):
                pass

    def warnings(kept: int, finish: bool) -> list[str]:
        at = AppTest.from_function(script)
        at.session_state["_drawing"] = {"label": "Sampling", "kept": kept}
        at.session_state["finish"] = finish
        at.run()
        assert not at.exception
        return [w.value for w in at.warning]

    assert warnings(22, False) == ["The previous run (Sampling) stopped before it finished. 22 outputs sampled in "
                                   "it are in the store, with every sample of earlier runs, and are reused when "
                                   "you run again."]
    assert warnings(0, False) == ["The previous run (Sampling) stopped before it finished. It had sampled no new "
                                  "outputs."]
    assert warnings(22, True) == []


@pytest.mark.slow
def test_an_openai_compatible_draw_is_shown_live(tmp_path, monkeypatch, llama_server):
    """Audit one perturbation against a real OpenAI-compatible server (``python -m llama_cpp.server`` serving the
    packaged SmolLM2): the view is there at once, each redraw has more outputs as the server answers the parallel
    calls, the null and P0/P1 appear once both arms have two, the time left is read from the measured throughput,
    the run's bar shows no second estimate, and the view gives way to the final result.
    The home page, which draws by itself on free backends, asks before it calls the API."""

    from streamlit.delta_generator import DeltaGenerator

    from test_app import open_page

    headers, charts = follow_live_views(monkeypatch)
    bars = []
    real_progress = DeltaGenerator.progress

    def progress(self, value, text=None):
        bars.append(text or "")
        return real_progress(self, value, text=text)

    monkeypatch.setattr(DeltaGenerator, "progress", progress)
    at = start(tmp_path, monkeypatch, backend="openai", openai_base_url=llama_server, openai_model="smollm2",
               openai_api_key="test-key", max_tokens_openai=8, home_k=5, home_b=200, timeout=1500)
    assert not headers and not at.get("progress")  # nothing sent on opening the home page
    assert any(i.value.startswith("This run makes ") for i in at.info)
    assert [b for b in at.button if b.key == "home_draw_api" and b.label == "Draw from smollm2"]
    at = open_page(at, "audit_one")
    at.selectbox(key="one_scenario").set_value("seasons_question").run()
    at.number_input(key="one_k").set_value(6).run()
    at.number_input(key="one_b").set_value(100).run()
    at.button(key="one_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert_followed_live(headers, charts, 6)
    assert bars and not [text for text in bars if " left" in text], bars  # the live view's estimate is the one
    assert metric(at, "Decision") and not [m for m in at.markdown if m.value.startswith("**Live:")]
    # Asked, the home page draws: the chosen intervention followed live, then its result.
    headers.clear()
    at = open_page(at, "how_it_works")
    at.button(key="home_draw_api").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    totals, _ = counted(headers, 5)
    assert totals and totals[-1] == 10, headers
    assert metric(at, "Observed JSD")
    at.run()  # the next rerun: everything is in the store, so nothing is asked and the same result is shown
    assert metric(at, "Observed JSD") and not [b for b in at.button if b.key == "home_draw_api"]


def test_the_background_model_load_ends_quietly_when_the_server_stops():
    """MiniLM loads in a thread after the first page; a server stopped meanwhile makes transformers' thread pool
    refuse work: that ends the thread without a traceback in the server's log, and any other error is raised."""
    from dbpa_app.ui.exposition import load_quietly_at_shutdown

    class Embedder:
        def __init__(self, error):
            self.error = error

        @property
        def model(self):
            raise self.error

    load_quietly_at_shutdown(Embedder(RuntimeError("cannot schedule new futures after interpreter shutdown")))
    load_quietly_at_shutdown(Embedder(RuntimeError("can't register atexit after shutdown")))  # an import then
    with pytest.raises(RuntimeError, match="out of memory"):
        load_quietly_at_shutdown(Embedder(RuntimeError("out of memory")))
    with pytest.raises(OSError, match="no such file"):
        load_quietly_at_shutdown(Embedder(OSError("no such file")))


def test_the_method_section_says_what_omega_cannot_see(app):
    from dbpa_app.ui.exposition import BLIND_SPOT_TEXT

    texts = "\n".join(m.value for m in app.markdown)
    assert BLIND_SPOT_TEXT in texts
    assert "This is the paper's z-test approximation, not DBPA's power" in texts
    assert any(b.key == "blind_spot_run" for b in app.button)


def test_the_bar_counts_only_embedding_where_drawing_costs_nothing():
    """Simulated outputs cost nothing to draw: the bar measures their embedding alone, so half of the last arm's
    embedding is not read as "about 0 s left" (the timed walk's Resample, issue 45)."""
    from types import SimpleNamespace

    from streamlit.testing.v1 import AppTest

    for backend, expected in (("simulated", [0.0, 0.0, 0.25]), ("local", [0.25, 0.5, 0.625])):
        at = AppTest.from_function(progress_values)
        at.session_state["request"] = SimpleNamespace(perturbations=(1,), sequential=None, k=4,
                                                      sampler=SimpleNamespace(backend=backend))
        at.session_state["updates"] = [("sampling", "original", 4, 4), ("sampling", "perturbed", 4, 4),
                                       ("embedding", "original", 2, 4)]
        at.run()
        assert not at.exception
        assert at.session_state["shown"] == pytest.approx(expected), backend


def test_one_run_is_announced_once_in_a_session():
    """The caption under Resample and the bar once it is pressed say the same time for the same run, though the
    load moved in between (the timed walk: "about 25 s", then "about 30 s"); another run is estimated anew."""
    from streamlit.testing.v1 import AppTest

    def script():
        import dataclasses
        import os
        from unittest import mock

        import streamlit as st

        from dbpa_core.audit.configs import SamplerConfig
        from dbpa_core.audit.request import AuditRequest
        from dbpa_core.data.scenarios import load_scenarios
        from dbpa_app.ui.timing import request_time

        request = AuditRequest.from_scenario(load_scenarios()["seasons_question"], sampler=SamplerConfig("local"),
                                             k=40, n_resamples=200)
        with mock.patch.object(os, "getloadavg", return_value=(2.0, 2.0, 2.0)):
            caption = request_time(request, fresh=True).seconds
        with mock.patch.object(os, "getloadavg", return_value=(40.0, 40.0, 40.0)):
            pressed = request_time(dataclasses.replace(request, alpha=0.01)).seconds  # the same tests
            other = request_time(dataclasses.replace(request, replicate=1), fresh=True).seconds
        st.session_state["times"] = caption, pressed, other

    at = AppTest.from_function(script)
    at.run(timeout=60)
    assert not at.exception
    caption, pressed, other = at.session_state["times"]
    assert pressed == caption and other > 2 * caption
