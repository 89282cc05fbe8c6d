"""AppTest of the home page (the exposition), and of what its first view relies on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_app import metric, start

EXPOSITION_COLUMNS = ["perturbation", "true effect (simulated)", "observed JSD", "p", "p·Bonferroni",
                      "decision"]


@pytest.fixture
def app(tmp_path, monkeypatch):
    return start(tmp_path, monkeypatch)


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
    assert "N = 40 per arm · B = 800 · JSD" in captions(at)


def test_table_has_the_exposition_columns(app):
    table = app.table[0].value
    assert list(table.columns) == EXPOSITION_COLUMNS
    assert len(table) == 6
    effects = dict(zip(table["perturbation"], table["true effect (simulated)"]))
    assert effects["1. Paraphrase: “Why does … have seasons?”"] == "0% (control)"
    assert effects["6. Earth → Mars"].endswith("%") and effects["6. Earth → Mars"] != "0%"
    # p·Bonferroni is m·p capped at 1, on the same p the p column shows
    for p, adjusted in zip(table["p"], table["p·Bonferroni"]):
        if not p.startswith("≤"):
            assert float(adjusted) == pytest.approx(min(1.0, 6 * float(p)), rel=0.02, abs=1e-3)
    mars = table.iloc[5]
    assert mars["decision"] == "REJECT H₀" and mars["p"].startswith("≤ 1/(B+1) = ")
    assert any("declared to change" in c.value for c in app.caption)


def test_statistic_toggle_shows_its_own_effect(app):
    at = app
    jsd = metric(at, "Observed JSD")
    at.radio(key="home_statistic").set_value("centroid").run()
    assert not at.exception
    statistic = float(metric(at, "Observed centroid T"))
    distance = float(metric(at, "Effect ‖μ̂₀ − μ̂₁‖"))
    assert distance == pytest.approx(math.sqrt(statistic), rel=6e-3)  # the effect belongs to T
    assert "observed centroid T" in at.table[0].value.columns
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
    assert "N = 200 per arm" in captions(at)
    assert at.table[0].value.iloc[5]["decision"] == "REJECT H₀"
    next(b for b in at.button if b.key == "home_n_40").click().run()
    assert at.slider(key="home_k").value == 40
    before = metric(at, "Observed JSD")
    next(b for b in at.button if b.key == "home_resample_button").click().run()
    assert not at.exception
    assert metric(at, "Observed JSD") != before  # new outputs, new statistic
    assert "resample 1" in captions(at)


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


def test_streamed_prefix_is_a_smaller_draw(minilm):
    """Streaming shows the first n outputs of the drawn arms: the same as drawing n, tested as the final
    result is tested (its last step is the result itself)."""
    from dbpa_core.audit import AuditRequest, SamplerConfig, run
    from dbpa_core.audit.exposition import self_comparison, stream_sizes, streamed
    from dbpa_core.data.scenarios import load_scenarios
    from dbpa_core.samplers import get_sampler

    sampler = get_sampler("simulated")
    full = sampler.sample("What causes the seasons on Earth?", 40, seed=3)
    assert sampler.sample("What causes the seasons on Earth?", 12, seed=3) == full[:12]
    sizes = stream_sizes(40)
    assert sizes[0] == 4 and sizes[-1] == 40 and sizes == sorted(set(sizes)) and len(sizes) >= 8
    assert stream_sizes(200)[-1] == 200 and max(np.diff(stream_sizes(200))) <= 20

    request = AuditRequest.from_scenario(load_scenarios()["seasons_question"], ["mars"],
                                         sampler=SamplerConfig("simulated"), k=12, n_resamples=99, seed=4)
    result = run(request, embedder=minilm).results[0]
    steps = list(streamed(result, request))
    assert [len(s.original.texts) for s in steps] == stream_sizes(12)
    assert steps[-1].test.pvalue == result.test.pvalue and steps[-1].test.statistic == result.test.statistic
    smaller = run(AuditRequest.from_scenario(load_scenarios()["seasons_question"], ["mars"],
                                             sampler=SamplerConfig("simulated"), k=4, n_resamples=99, seed=4),
                  embedder=minilm).results[0]
    assert steps[0].test.pvalue == smaller.test.pvalue  # the first 4 outputs are a draw of 4
    halves = self_comparison(result.original, request)
    assert halves.original.texts + halves.perturbed.texts == result.original.texts


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
    at = start(tmp_path, monkeypatch, backend="recorded")
    assert not at.exception
    assert at.slider(key="home_k").value == 20  # the default 40 clamped to what was recorded
    assert "20 responses per prompt were recorded" in captions(at)
    next(b for b in at.button if b.key == "home_n_200").click().run()
    assert not at.exception and at.slider(key="home_k").value == 20
    table = at.table[0].value
    assert set(table["true effect"]) == {"unknown"}
    assert "Real model outputs: the true effect is unknown" in captions(at)


def test_shipped_first_view_embeddings_are_minilm(minilm):
    """The shipped vectors cover the first view and are what MiniLM gives (fails when stale)."""
    from scripts.precompute_first_view import first_view_texts
    from ui.exposition import FIRST_VIEW_FILE

    shipped = np.load(FIRST_VIEW_FILE)
    texts = [str(t) for t in shipped["texts"]]
    assert set(first_view_texts()) <= set(texts), "regenerate with scripts/precompute_first_view.py"
    assert str(shipped["embedder_key"]) == minilm.key
    picks = [0, len(texts) // 2, len(texts) - 1]
    np.testing.assert_allclose(shipped["vectors"][picks], minilm.embed([texts[i] for i in picks]), atol=2e-5)
