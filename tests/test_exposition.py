"""Unit tests of the home page's exposition in the core (dbpa_core.audit.exposition: the streamed prefixes) and
of the shipped first-view embeddings it draws from, moved here from the home page's AppTest file (issue 46:
statistics that pages show are tested in the core, not through the UI)."""

from __future__ import annotations

import numpy as np


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


def test_shipped_first_view_embeddings_are_minilm(minilm):
    """The shipped vectors cover the first view and are what MiniLM gives (fails when stale)."""
    from dbpa_app.ui.exposition import FIRST_VIEW_FILE
    from scripts.precompute_first_view import first_view_texts

    shipped = np.load(FIRST_VIEW_FILE)
    texts = [str(t) for t in shipped["texts"]]
    assert set(first_view_texts()) <= set(texts), "regenerate with scripts/precompute_first_view.py"
    assert str(shipped["embedder_key"]) == minilm.key
    picks = [0, len(texts) // 2, len(texts) - 1]
    np.testing.assert_allclose(shipped["vectors"][picks], minilm.embed([texts[i] for i in picks]), atol=2e-5)
