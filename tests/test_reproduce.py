"""dbpa_core.paper: the paper's experiments on its shipped responses.

The embeddings come from the packaged MiniLM and are shared by the module
through one store, so each response is embedded once per test session.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from sklearn.metrics import roc_auc_score

import dbpa_core as d
from conftest import REPO
from dbpa_core import paper as r
from dbpa_core.present.reproduction import NOT_GIVEN
from dbpa_core import paper
from dbpa_core.present import reproduction as rp
from dbpa_core.stats.similarity import embedding_similarity_matrix

B = 1000


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory):
    from dbpa_core.data.store import SampleStore

    return SampleStore(tmp_path_factory.mktemp("paper") / "store.sqlite")


@pytest.fixture(scope="module")
def table2(minilm, shared_store):
    return r.persona_table(embedder=minilm, store=shared_store, n_resamples=B, seed=0)


def test_table2_agrees_with_the_paper_where_the_paper_found_an_effect(table2):
    reported = set(table2.significant(0.05, reported=True))
    assert reported == {"comedian", "robot from the future", "child"}
    # every persona the paper flagged is flagged here, with p at the floor of B = 1000 re-splits
    assert reported <= set(table2.significant(0.05))
    for row in table2.rows:
        if row.persona in reported:
            assert row.pvalue <= 2 / (B + 1)
    # the doctor's own two halves are one distribution: no change (calibration on real answers)
    doctor = table2.rows[0]
    assert doctor.persona == "doctor" and doctor.test.n_original == doctor.test.n_perturbed == 10
    assert doctor.pvalue > 0.2
    # the largest effect is the comedian (well above the child, the paper's largest): the order is ours
    assert "significant in both: comedian, robot from the future, child" in rp.persona_agreement(table2)
    # where the verdicts differ is written down, persona by persona
    assert "only here:" in rp.persona_agreement(table2)


def test_table2_statistic_is_the_papers_js_distance_on_a_shared_range(table2, minilm, shared_store):
    """ω = scipy's jensenshannon of 30-bin histograms of P0 and P1 on the pooled similarity range."""
    arms = paper.load_personas()
    x = minilm.embed(list(arms["doctor"]), store=shared_store).astype(np.float64)
    y = minilm.embed(list(arms["comedian"]), store=shared_store).astype(np.float64)
    s = embedding_similarity_matrix(np.vstack([x, y]), "cosine")
    pooled = s[np.triu_indices(40, k=1)]
    edges = np.linspace(pooled.min(), pooled.max(), 31)
    p0 = s[:20, :20][np.triu_indices(20, k=1)]
    p1 = s[:20, 20:].ravel()
    expected = jensenshannon(np.histogram(p0, edges)[0], np.histogram(p1, edges)[0])
    row = next(row for row in table2.rows if row.persona == "comedian")
    assert row.statistic == pytest.approx(expected, rel=1e-9)
    # JSD in bits is the same comparison: distance² / ln 2, with the same p-value (a monotone map)
    jsd = d.dbpa_test(x, y, discrepancy="jsd", n_resamples=B, rng=np.random.default_rng(0))
    assert row.jsd_bits == pytest.approx(jsd.statistic, rel=1e-9)
    assert row.pvalue == jsd.pvalue
    assert row.jsd_bits == pytest.approx(row.statistic**2 / math.log(2))


def test_table2_record_and_table(table2):
    record = rp.reproduction_record(table2)
    assert record["experiment"] == "table2" and len(record["rows"]) == 8
    assert {"label", "statistic", "pvalue", "reported_statistic", "reported_pvalue"} <= set(record["rows"][0])
    assert record["settings"]["n_resamples"] == B and record["settings"]["baseline"] == "Act as a doctor. "
    table = rp.persona_frame(table2)
    assert list(table["persona"]) == list(paper.PERSONAS)
    assert table.loc[table.persona == "child", "stars (paper)"].item() == "***"


def test_fig1_controls_targets_and_best_model(minilm, shared_store):
    models = ["SWNorth-gpt-4-0613-20231016", "gpt2"]
    study = r.roc_study(models, seeds=(9,), embedder=minilm, store=shared_store, n_resamples=200, seed=0)
    assert [m.label for m in study.models] == ["GPT-4", "GPT-2"]
    for model in study.models:
        assert model.control_pvalues.shape == (1, 28) and model.target_pvalues.shape == (1, 8)
        # AUC is the chance that a target gets a smaller p than a control (sklearn, independently)
        labels = np.r_[np.zeros(28), np.ones(8)]
        scores = -np.r_[model.control_pvalues[0], model.target_pvalues[0]]
        assert model.auc_mean == pytest.approx(roc_auc_score(labels, scores))
        assert model.auc_sd == 0.0  # one seed
    gpt4 = study.models[0]
    # each p-value is the DBPA test of two arms: control 0 is paraphrase "0" vs "1", target 0 is base vs "0"
    run = paper.load_paraphrases("SWNorth-gpt-4-0613-20231016", 9)
    embed = lambda texts: minilm.embed(list(texts), store=shared_store)  # noqa: E731
    direct = [d.dbpa_test(embed(a), embed(b), discrepancy="js_distance", n_resamples=200,
                          rng=np.random.default_rng(0)).pvalue
              for a, b in ((run.paraphrases[0], run.paraphrases[1]), (run.base, run.paraphrases[0]))]
    assert direct == pytest.approx([gpt4.control_pvalues[0, 0], gpt4.target_pvalues[0, 0]], rel=1e-12)
    for fpr in (0.01, 0.05):
        name = study.best_model_at(fpr)
        assert study.model(name).tpr_at_fpr(fpr) == max(m.tpr_at_fpr(fpr) for m in study.models)
        # the TPR/FPR page's comparison holds the same pooled curves
        assert study.comparison.rocs[name] is study.model(name).pooled
    record = rp.reproduction_record(study)
    assert record["experiment"] == "fig1"
    assert {"label", "auc_mean", "auc_sd", "tpr_at_fpr_0.01", "tpr_at_fpr_0.05"} <= set(record["rows"][0])
    assert record["rows"][0]["reported_auc"] == NOT_GIVEN
    # the reference run's target rejection rate is read from its result file (GPT-4 seed 9: none below .05)
    assert gpt4.target_rejection_rate(0.05, reported=True) == 0.0


def test_fig3_models_the_reference_run_found_different_are_different_here(minilm, shared_store):
    study = r.alignment_study(seeds=(9,), embedder=minilm, store=shared_store, n_resamples=B, seed=0)
    assert [row.model.key for row in study.rows] == list(paper.ALIGNMENT_MODELS)
    reported_zero = {row.label for row in study.rows if row.reported_pvalues[0] == 0.0}
    assert reported_zero == {"SmolLM-135M", "GPT-2"}
    assert reported_zero <= set(study.differing(0.05))
    record = rp.reproduction_record(study)
    assert record["experiment"] == "fig3"
    assert {"label", "statistic_mean", "statistic_sd", "pvalue_mean"} <= set(record["rows"][0])
    assert "GPT-2" in rp.alignment_reading(study)


def test_appendix_tables(minilm, shared_store):
    result = r.appendix(embedder=minilm, store=shared_store, n_resamples=200, seed=0)
    assert result.omega.statistics.shape == (7, len(r.OMEGA_CHOICES))
    assert result.similarity.statistics.shape == (7, 3)
    # every ω and every similarity flags the clearest persona effects (comedian, child)
    for grid in (result.omega, result.similarity):
        for persona in ("comedian", "child"):
            assert np.all(grid.pvalues[grid.personas.index(persona)] < 0.05)
    # C.3: cost is linear in k and free for the packaged MiniLM
    costs = {(c.embedder, c.k): c for c in result.costs}
    assert costs["minilm", 100].dollars == 0.0
    small, large = costs["text-embedding-3-small", 20], costs["text-embedding-3-small", 100]
    assert large.tokens == pytest.approx(5 * small.tokens, rel=1e-3)
    assert large.dollars == pytest.approx(large.tokens * 0.02 / 1e6)
    record = rp.reproduction_record(result)
    assert {row["table"] for row in record["rows"]} == {"C.2", "C.3", "C.4"}
    assert all(row["reported"] == NOT_GIVEN for row in record["rows"])


def test_second_run_embeds_nothing(minilm, shared_store, table2):
    assert r.missing_embeddings("table2", embedder_key=minilm.key, store=shared_store) == 0
    assert len(shared_store.get_embeddings(minilm.key, r.experiment_texts("table2"))) == 160
    # MiniLM has nothing to embed for any experiment (its vectors ship); another embedder would
    assert r.missing_embeddings("fig1", embedder_key=minilm.key, store=shared_store) == 0
    assert r.missing_embeddings("fig1", embedder_key="openai:text-embedding-3-small", store=shared_store) > 7000


def test_bad_settings_name_the_parameter():
    with pytest.raises(ValueError, match="`n_resamples`"):
        r.persona_table(n_resamples=0)
    with pytest.raises(ValueError, match="`seed`"):
        r.persona_table(seed=-1)
    with pytest.raises(ValueError, match="`discrepancy`"):
        r.roc_study(discrepancy="cosine")
    with pytest.raises(ValueError, match="`models`"):
        r.roc_study([])
    with pytest.raises(ValueError, match="`seed` must be one of the paper's seeds"):
        r.alignment_study(seeds=(1,))
    with pytest.raises(ValueError, match="`experiment`"):
        r.experiment_texts("table3")
    with pytest.raises(ValueError, match="`ks`"):
        r.embedding_costs([0])


def test_command_line_reproduce_table2(tmp_path, shared_store, table2):
    out = tmp_path / "table2.json"
    completed = subprocess.run(
        [sys.executable, "-m", "dbpa_core", "reproduce", "table2", "--json", str(out), "--seed", "0",
         "--store", str(shared_store.path)],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    assert completed.returncode == 0, completed.stderr
    assert "p (paper)" in completed.stdout and "significant in both" in completed.stdout
    record = json.loads(out.read_text())
    assert record["experiment"] == "table2" and record["settings"]["seed"] == 0
    # the command line and the library give the same numbers for the same seed
    assert [row["pvalue"] for row in record["rows"]] == [row.pvalue for row in table2.rows]
    bad = subprocess.run([sys.executable, "-m", "dbpa_core", "reproduce", "table2", "--n-resamples", "0",
                          "--store", str(shared_store.path)], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    assert bad.returncode == 2 and "n_resamples" in bad.stderr
