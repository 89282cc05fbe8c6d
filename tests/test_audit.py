"""End-to-end: audit request → sampler → embedder → dbpa_test → correction (dbpa_core.audit.runner)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import dbpa_core as d
from dbpa_core.audit import (AuditRequest, NotStored, SamplerConfig, SequentialPlan, arm_seed, compare_arms,
                             draw_arm, run)
from dbpa_core.data.scenarios import load_scenarios
from dbpa_core.samplers import get_sampler

SCENARIOS = load_scenarios()


def scenario_request(scenario_id, ids=None, backend="simulated", **settings):
    return AuditRequest.from_scenario(SCENARIOS[scenario_id], ids, sampler=SamplerConfig(backend), **settings)


def test_simulated_family_detects_targets_not_controls(minilm, store):
    family = run(scenario_request("seasons_question", k=40, n_resamples=999, discrepancy="energy"), store=store,
                 embedder=minilm)
    by_id = {r.perturbation_id: r for r in family.results}
    assert by_id["mars"].test.pvalue < 0.01 and by_id["eli5"].test.pvalue < 0.01
    assert all(r.test.pvalue > 0.01 for r in family.results if r.kind == "control")
    assert family.adjusted.method == "bonferroni" and len(family.adjusted.pvalues_adjusted) == 6
    # the original arm was drawn once and shared
    assert len({id(r.original) for r in family.results}) == 1
    assert all(len(r.perturbed.texts) == 40 for r in family.results)
    assert family.kind == "fixed" and all(r.test.kind == "fixed" for r in family.results)


def test_recorded_real_model_persona(minilm):
    """Real SmolLM2 answers (recorded): the comedian and child personas change them after Bonferroni, the doctor
    persona does not; the p-values are pinned to the seeds (a change of seed derivation moves them)."""
    request = scenario_request("cvd_nice", ["persona_doctor", "persona_child", "persona_comedian"], "recorded",
                               k=20, n_resamples=499)
    family = run(request, embedder=minilm)
    assert [r.kind for r in family.results] == ["control", "target", "target"]
    assert list(family.adjusted.reject) == [False, True, True]
    assert [r.test.pvalue for r in family.results] == pytest.approx([0.018, 0.012, 0.002], abs=0.006)
    assert all(r.original.model.endswith(".gguf") and r.true_effect is None for r in family.results)
    # the arms are the recorded answers the sampler replays for exactly these seeds
    recorded = get_sampler("recorded")
    assert family.results[0].original.texts == tuple(recorded.sample(request.original.prompt, 20, seed=0))
    child = request.perturbations[1].prompt
    assert family.results[1].perturbed.texts == tuple(recorded.sample(child.prompt, 20, seed=1))


def test_local_model_end_to_end(minilm, store):
    local = get_sampler("local")
    progress = []
    original = draw_arm(local, "Give one tip for sleeping well.", 6, label="original", max_tokens=24,
                        embedder=minilm, store=store, progress=progress.append)
    perturbed = draw_arm(local, "Act as a pirate. Give one tip for sleeping well.", 6, label="pirate",
                         max_tokens=24, seed=1, embedder=minilm, store=store)
    result = compare_arms(original, perturbed, label="pirate", n_resamples=200, rng=0)
    assert result.test.n_original == result.test.n_perturbed == 6
    assert original.embeddings.shape == (6, 384)
    assert {u.text for u in progress} == {"sample original", "sampling original", "embedding original",
                                          "drawn original"}
    # the progress hook receives each output as it arrives, and the drawn arm itself (what a live view shows)
    samples = [u for u in progress if u.stage == "sample"]
    assert {u.index: u.output for u in samples} == dict(enumerate(original.texts)) and len(samples) == 6
    assert not any(u.stored for u in samples) and [u.done for u in samples] == list(range(1, 7))
    (drawn,) = [u.arm for u in progress if u.stage == "drawn"]
    assert drawn.texts == original.texts
    # a longer draw of the same request starts from the store: its outputs first, then each new one
    resumed = []
    longer = draw_arm(local, "Give one tip for sleeping well.", 8, label="original", max_tokens=24, embedder=minilm,
                      store=store, progress=resumed.append)
    samples = [u for u in resumed if u.stage == "sample"]
    assert [(u.index, u.output, u.stored) for u in samples[:6]] == [(i, t, True) for i, t in enumerate(original.texts)]
    assert sorted(u.index for u in samples[6:]) == [6, 7] and not any(u.stored for u in samples[6:])
    assert longer.texts[:6] == original.texts
    direct = d.dbpa_test(original.embeddings, perturbed.embeddings, n_resamples=200, rng=0)
    assert result.test.statistic == direct.statistic and result.test.pvalue == direct.pvalue


def test_ground_truth_only_for_the_simulated_model(minilm):
    recorded = run(scenario_request("cvd_nice", ["persona_child"], "recorded", k=10, n_resamples=99), embedder=minilm)
    simulated = run(scenario_request("cvd_nice", ["persona_child"], k=10, n_resamples=99), embedder=minilm)
    system = AuditRequest.from_scenario(SCENARIOS["cvd_nice"], ["persona_child"], sampler=SamplerConfig("simulated"),
                                        perturbed_sampler=SamplerConfig("simulated", temperature=2.0))
    assert recorded.results[0].true_effect is None
    assert simulated.results[0].true_effect == SCENARIOS["cvd_nice"].true_effect("persona_child")
    assert system.true_effects == (None,)  # a system perturbation: the scenario's truth does not apply


def test_a_tests_pvalue_does_not_depend_on_the_rest_of_the_family(minilm):
    """A shared cache keys tests by their request: a test must not depend on its neighbours."""
    full = run(scenario_request("seasons_question", k=12, n_resamples=199, seed=5), embedder=minilm)
    last = full.results[-1]
    alone = run(scenario_request("seasons_question", [last.perturbation_id], k=12, n_resamples=199, seed=5),
                embedder=minilm)
    assert alone.results[0].test.pvalue == last.test.pvalue
    direct = d.dbpa_test(last.original.embeddings, last.perturbed.embeddings, n_resamples=199, rng=5)
    assert_array_equal(last.test.null_distribution, direct.null_distribution)
    # Bonferroni over the 6 tests of the full family, over 1 alone
    assert full.adjusted.pvalues_adjusted[-1] == min(1.0, 6 * last.test.pvalue)


def test_seeds_are_derived_in_one_place():
    request = scenario_request("seasons_question", seed=7, replicate=2)
    seeds = [arm.seed for arm in request.arm_requests()]
    assert seeds[0] == arm_seed(7, perturbed=False, replicate=2) == 7 + 2000
    assert set(seeds[1:]) == {arm_seed(7, perturbed=True, replicate=2)} == {2008}


def test_request_is_frozen_hashable_and_keyed_by_every_input():
    base = scenario_request("seasons_question", k=12)
    assert hash(base) == hash(scenario_request("seasons_question", k=12))
    assert base.key == scenario_request("seasons_question", k=12).key
    changed = [scenario_request("seasons_question", k=13), scenario_request("seasons_question", k=12, seed=1),
               scenario_request("seasons_question", k=12, replicate=1),
               scenario_request("seasons_question", k=12, n_resamples=999),
               scenario_request("seasons_question", k=12, discrepancy="energy"),
               scenario_request("seasons_question", k=12, similarity="bleu"),
               scenario_request("seasons_question", k=12, alpha=0.01),
               scenario_request("seasons_question", k=12, correction="holm"),
               scenario_request("seasons_question", ["mars"], k=12),
               scenario_request("seasons_question", k=12, backend="recorded"),
               AuditRequest.from_scenario(SCENARIOS["seasons_question"], sampler=SamplerConfig("simulated",
                                                                                           temperature=0.5), k=12),
               scenario_request("seasons_question", sequential=SequentialPlan(k_max=12, batch_size=4))]
    assert len({base.key, *(r.key for r in changed)}) == len(changed) + 1
    with pytest.raises(AttributeError):
        base.k = 3
    # correction and α only re-read a fixed-k family, so its cached tests ignore them; a sequential one keeps them
    assert changed[6].tests_only().key == changed[7].tests_only().key == base.key
    assert changed[-1].tests_only() is changed[-1]


def test_request_normalises_names_and_refuses_credentials():
    request = scenario_request("seasons_question", similarity="BLEU", discrepancy="JSD", correction="Holm")
    assert (request.similarity, request.discrepancy, request.correction) == ("bleu", "jsd", "holm")
    with pytest.raises(ValueError, match="`sampler.base_url` holds a credential"):
        SamplerConfig("openai", model="m", base_url="http://user:secret@127.0.0.1:8000/v1")
    with pytest.raises(ValueError, match="`sampler.timeout` is not a setting"):
        SamplerConfig("simulated", options={"timeout": 3})
    with pytest.raises(ValueError, match="`k`"):
        scenario_request("seasons_question", k=1)


def test_upper_case_text_similarity_reaches_the_text_path(minilm):
    """"BLEU" is normalised once at the entry point: the texts are compared, never the embeddings."""
    family = run(scenario_request("seasons_question", ["mars"], k=8, n_resamples=99, similarity="BLEU"),
                 embedder=minilm)
    test = family.results[0].test
    result = family.results[0]
    direct = d.dbpa_test(list(result.original.texts), list(result.perturbed.texts), similarity="bleu",
                         n_resamples=99, rng=0)
    assert test.similarity == "bleu" and test.statistic == direct.statistic


def test_offline_run_refuses_to_sample_a_live_backend(minilm, store):
    request = AuditRequest.from_scenario(SCENARIOS["seasons_question"], ["mars"], sampler=SamplerConfig("local"),
                                         k=4, n_resamples=9)
    with pytest.raises(NotStored, match="samples of 'original'"):
        run(request, store=store, embedder=minilm, offline=True)
    simulated = scenario_request("seasons_question", ["mars"], k=4, n_resamples=9)
    with pytest.raises(NotStored, match="embeddings of 'original'"):
        run(simulated, store=store, embedder=minilm, offline=True)
    first = run(simulated, store=store, embedder=minilm)  # stores the embeddings
    again = run(simulated, store=store, embedder=minilm, offline=True)
    assert again.results[0].test.pvalue == first.results[0].test.pvalue


def test_results_pickle_for_the_shared_cache(minilm):
    family = run(scenario_request("seasons_question", ["mars"], k=6, n_resamples=19), embedder=minilm)
    copy = pickle.loads(pickle.dumps(family))
    assert copy.results[0].test.pvalue == family.results[0].test.pvalue
    assert dict(copy.settings) == dict(family.settings) and copy.settings["k"] == 6
    assert np.array_equal(copy.results[0].original.embeddings, family.results[0].original.embeddings)


def test_compare_family_checks_lengths(minilm):
    from dbpa_core.audit import compare_family

    seasons = SCENARIOS["seasons_question"]
    arm = draw_arm(get_sampler("simulated"), seasons.prompt, 4, label="original", embedder=minilm)
    with pytest.raises(ValueError, match="perturbed_arms"):
        compare_family(arm, [arm], seasons.perturbations[:2])
