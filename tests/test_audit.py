"""End-to-end: scenario → sampler → embedder → dbpa_test."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import dbpa_core as d
from dbpa_core.audit import draw_arm, run_scenario_family, compare_arms
from dbpa_core.samplers import get_sampler
from dbpa_core.data.scenarios import load_scenarios

SCENARIOS = load_scenarios()


def test_simulated_family_detects_targets_not_controls(minilm, store):
    seasons = SCENARIOS["seasons_question"]
    family = run_scenario_family(seasons, None, sampler=get_sampler("simulated"), embedder=minilm, k=40,
                                 n_resamples=999, discrepancy="energy", store=store, seed=0)
    by_id = {r.perturbation_id: r for r in family.results}
    assert by_id["mars"].test.pvalue < 0.01 and by_id["eli5"].test.pvalue < 0.01
    assert all(r.test.pvalue > 0.01 for r in family.results if r.kind == "control")
    assert family.adjusted.method == "bonferroni" and len(family.adjusted.pvalues_adjusted) == 6
    # the original arm was drawn once and shared
    assert len({id(r.original) for r in family.results}) == 1
    assert all(len(r.perturbed.texts) == 40 for r in family.results)


def test_recorded_real_model_persona(minilm):
    cvd = SCENARIOS["cvd_nice"]
    family = run_scenario_family(cvd, ["persona_doctor", "persona_child"], sampler=get_sampler("recorded"),
                                 embedder=minilm, k=20, n_resamples=499)
    assert len(family.results) == 2
    for result in family.results:
        assert 0 < result.test.pvalue <= 1 and result.original.model.endswith(".gguf")


def test_local_model_end_to_end(minilm, store):
    local = get_sampler("local")
    progress = []
    original = draw_arm(local, "Give one tip for sleeping well.", 6, label="original", max_tokens=24,
                        embedder=minilm, store=store, progress=lambda *a: progress.append(a))
    perturbed = draw_arm(local, "Act as a pirate. Give one tip for sleeping well.", 6, label="pirate",
                         max_tokens=24, seed=1, embedder=minilm, store=store)
    result = compare_arms(original, perturbed, label="pirate", n_resamples=200, rng=0)
    assert result.test.n_original == result.test.n_perturbed == 6
    assert original.embeddings.shape == (6, 384)
    assert {stage for stage, _, _ in progress} == {"sampling original", "embedding original"}
    assert np.isfinite(result.test.statistic)


def test_ground_truth_only_for_the_simulated_model(minilm):
    cvd = SCENARIOS["cvd_nice"]
    recorded = run_scenario_family(cvd, ["persona_child"], sampler=get_sampler("recorded"), embedder=minilm,
                                   k=10, n_resamples=99)
    simulated = run_scenario_family(cvd, ["persona_child"], sampler=get_sampler("simulated"), embedder=minilm,
                                    k=10, n_resamples=99)
    assert recorded.results[0].true_effect is None
    assert simulated.results[0].true_effect == cvd.true_effect("persona_child")


def test_a_tests_pvalue_does_not_depend_on_the_rest_of_the_family(minilm):
    """The app memoises tests one by one and must report what the command line reports."""
    seasons = SCENARIOS["seasons_question"]
    options = dict(sampler=get_sampler("simulated"), embedder=minilm, k=12, n_resamples=199, seed=5)
    full = run_scenario_family(seasons, None, **options)
    alone = run_scenario_family(seasons, [full.results[-1].perturbation_id], **options)
    assert alone.results[0].test.pvalue == full.results[-1].test.pvalue
    last = full.results[-1]
    direct = d.dbpa_test(last.original.embeddings, last.perturbed.embeddings, n_resamples=199, rng=5)
    assert_array_equal(last.test.null_distribution, direct.null_distribution)
    # Bonferroni over the 6 tests of the full family, over 1 alone
    assert full.adjusted.pvalues_adjusted[-1] == min(1.0, 6 * last.test.pvalue)


def test_compare_family_checks_lengths(minilm):
    from dbpa_core.audit import compare_family

    seasons = SCENARIOS["seasons_question"]
    arm = draw_arm(get_sampler("simulated"), seasons.prompt, 4, label="original", embedder=minilm)
    with pytest.raises(ValueError, match="perturbed_arms"):
        compare_family(arm, [arm], seasons.perturbations[:2])
