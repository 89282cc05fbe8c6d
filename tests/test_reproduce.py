"""dbpa_core.paper: the paper's experiments on its shipped responses and on the recorded cvd_nice answers.

The embeddings come from the packaged MiniLM and are shared by the module
through one store, so each response is embedded once per test session.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import jensenshannon
from sklearn.metrics import roc_auc_score

import dbpa_core as d
from conftest import REPO
from dbpa_core import paper as r
from dbpa_core import paper
from dbpa_core.paper import printed as pr
from dbpa_core.present import reproduction as rp
from dbpa_core.present import reproduction_tables as rt
from dbpa_core.present.formatting import format_percent
from dbpa_core.stats.similarity import embedding_similarity_matrix

B = 1000


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory):
    from dbpa_core.data.store import SampleStore

    return SampleStore(tmp_path_factory.mktemp("paper") / "store.sqlite")


@pytest.fixture(scope="module")
def table2(minilm, shared_store):
    return r.persona_table(embedder=minilm, store=shared_store, n_resamples=B, seed=0)


def printed_rows_match_the_transcription(record):
    """Every "paper (printed)" row of a record equals printed.py's cell at its reference, and names it."""
    rows = [row for row in record["rows"] if row["source"] == pr.PRINTED]
    assert rows
    for row in rows:
        assert row["reference"]
        if "value" in row:  # a table cell: the same number and stars as the transcription
            table = pr.TABLES[row["reference"]]
            cell = table.value(row["item"], row.get("model") or row.get("choice"))
            assert (row["value"], row["stars"]) == (cell.value, cell.stars)
    return rows


def test_table2_three_sources_side_by_side(table2):
    reported = set(table2.significant(0.05, reported=True))
    assert reported == {"comedian", "robot from the future", "child"}
    # the reference run's file matches neither printed column (the finding, kept visible)
    assert reported != set(pr.TABLE2.significant("GPT-4")) and reported != set(pr.TABLE2.significant("GPT-3.5"))
    # every persona printed as significant for GPT-4 or GPT-3.5 is significant here, at the floor of B = 1000
    printed = set(pr.TABLE2.significant("GPT-4")) | set(pr.TABLE2.significant("GPT-3.5"))
    assert printed <= set(table2.significant(0.05))
    for row in table2.rows:
        if row.persona in printed:
            assert row.pvalue <= 2 / (B + 1)
    # the doctor's own two halves are one distribution: no change (calibration on real answers)
    doctor = table2.rows[0]
    assert doctor.persona == "doctor" and doctor.test.n_original == doctor.test.n_perturbed == 10
    assert doctor.pvalue > 0.2
    sentence = rp.persona_agreement(table2)
    assert "GPT-4 is significant for comedian, NeurIPS reviewer" in sentence
    assert f"p = {doctor.pvalue:.2f}" in sentence and "randomly drawn patient" in sentence
    record = rp.reproduction_record(table2)
    assert {row["source"] for row in record["rows"]} == set(pr.SOURCES)
    assert len(printed_rows_match_the_transcription(record)) == 16  # 8 personas × GPT-4, GPT-3.5
    table = rt.persona_frame(table2)
    assert list(table["persona"]) == list(paper.PERSONAS)
    assert table.loc[table.persona == "child", "stars GPT-3.5 · paper (printed)"].item() == "**"
    assert table.loc[table.persona == "child", "stars · reference run"].item() == "***"


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


def test_fig1_controls_and_targets_share_their_original(minilm, shared_store):
    """§4.2's design: paraphrase k is the original of its 7 paraphrase controls AND of its target, base.

    DBPA is asymmetric (P0 comes from the original arm), so this fails if a target is tested with
    another original (e.g. base as its original, the earlier design) even when the comparisons'
    labels say otherwise: each p-value is recomputed from the two arms it should compare.
    """
    key = "SWNorth-gpt-4-0613-20231016"
    study = r.paraphrase_study([key, "gpt2"], seeds=(9,), embedder=minilm, store=shared_store, n_resamples=200)
    assert study.design == "shared_original" and [m.label for m in study.models] == ["GPT-4", "GPT-2"]
    gpt4 = study.models[0]
    # one original per set: 8 sets, each 7 controls + 1 target with the same original
    for k in range(8):
        tests = [c for c in gpt4.comparisons if c.original == k]
        assert sorted(c.perturbed for c in tests if not c.is_target) == [j for j in range(8) if j != k]
        assert [c.perturbed for c in tests if c.is_target] == ["base"]
    run = paper.load_paraphrases(key, 9)
    embed = lambda texts: minilm.embed(list(texts), store=shared_store)  # noqa: E731

    def pvalue(original, perturbed):
        return d.dbpa_test(embed(original), embed(perturbed), discrepancy="js_distance", n_resamples=200,
                           rng=np.random.default_rng(0)).pvalue

    for k in (0, 5):
        target = next(c for c in gpt4.comparisons if c.original == k and c.is_target)
        control = next(c for c in gpt4.comparisons if c.original == k and not c.is_target)
        assert target.pvalue == pvalue(run.paraphrases[k], run.base)
        assert control.pvalue == pvalue(run.paraphrases[k], run.paraphrases[control.perturbed])
    # the direction matters on these data: with base as the original the target's p differs
    reversed_p = [pvalue(run.base, run.paraphrases[k]) for k in range(8)]
    assert reversed_p != [c.pvalue for c in gpt4.comparisons if c.is_target]
    # AUC is the chance that a target gets a smaller p than a control (sklearn, independently)
    labels = [c.is_target for c in gpt4.comparisons]
    assert gpt4.pooled.auc == pytest.approx(roc_auc_score(labels, [-c.pvalue for c in gpt4.comparisons]))
    assert gpt4.pooled.n_controls == 56 and gpt4.pooled.n_targets == 8
    assert gpt4.reported_pvalues.shape == (8,)


def test_fig1_best_model_is_none_on_a_tie():
    roc = d.roc_analysis([0.01, 0.5, 0.02, 0.6], [True, False, True, False])
    weak = d.roc_analysis([0.3, 0.01, 0.5, 0.6], [True, False, True, False])
    make = lambda label, curve: paper.ModelROC(label, label, (), (curve,), curve)  # noqa: E731
    tied = paper.ROCStudy("recorded_cvd", (make("a", roc), make("b", roc), make("c", weak)), {})
    best = tied.best_at(0.05)
    assert best.model is None and best.tied == ("a", "b") and best.tpr == 1.0
    assert "tie" in rp.best_model_sentence(best) and tied.best_depends_on_fpr() is None
    alone = paper.ROCStudy("recorded_cvd", (make("a", roc), make("c", weak)), {})
    assert alone.best_at(0.05).model == "a"
    nothing = paper.ROCStudy("recorded_cvd", (make("c", weak),), {})
    assert nothing.best_at(0.01) == paper.BestModel(0.01, None, 0.0, ())


def test_best_model_reading_writes_both_shares_out():
    """The banner read "it flags that share of the targets while flagging at most that share of the controls"
    (user trial 5: "that share" twice read as 48 % both times); it names both shares, "48 %" and "5 %"."""
    best = paper.BestModel(0.05, "Phi-3-mini", 0.475, ())
    assert rp.best_model_sentence(best) == "at FPR ≤ 5 % the best is Phi-3-mini (TPR 48 %)"
    assert rp.best_model_reading(best) == ("At FPR ≤ 5 % the best is Phi-3-mini (TPR 48 %): it flags 48 % of the "
                                           "targets while flagging at most 5 % of the controls.")
    assert rp.best_model_reading(best, alpha=0.0123456).endswith(
        ": at α = 0.0123 it flags 48 % of the targets while flagging at most 5 % of the controls.")
    assert rp.best_model_reading(paper.BestModel(0.01, None, 0.0, ())) == (
        "At FPR ≤ 1 % no model flags any target, so none is best.")


@pytest.fixture(scope="module")
def cvd(minilm, shared_store):
    return r.cvd_study(embedder=minilm, store=shared_store, n_resamples=B, seed=0)


def test_recorded_cvd_data_loads_and_matches_its_scenario():
    recording = r.load_recording()
    assert recording.k >= 40 and len(recording.models) >= 3 and len(recording.seeds) >= 1
    design = recording.design()
    assert design.original == "original" and len(design.controls) >= 8 and len(design.targets) >= 8
    assert all(len(texts) == recording.k and all(isinstance(t, str) for t in texts)
               for texts in recording.answers.values())
    # every answer's MiniLM vector ships: nothing is embedded when a page opens
    vectors = r.recorded_vectors()
    from dbpa_core.data.store import text_hash

    assert all(text_hash(t) in vectors.rows for texts in recording.answers.values() for t in texts)


def test_recorded_cvd_aucs_are_reproducible_for_a_fixed_seed(cvd, minilm, shared_store):
    again = r.cvd_study(embedder=minilm, store=shared_store, n_resamples=B, seed=0)
    assert [m.pooled.auc for m in again.models] == [m.pooled.auc for m in cvd.models]
    assert [m.aucs.tolist() for m in again.models] == [m.aucs.tolist() for m in cvd.models]
    assert cvd.design == "shared_original"
    # the targets are tested against the one original arm of their model and seed
    recording = r.load_recording()
    model, seed = next(iter(recording.models)), recording.seeds[0]
    target = next(c for c in cvd.models[0].comparisons if c.is_target and c.replicate == seed)
    embed = lambda arm: minilm.embed(list(recording.answers[model, seed, arm]), store=shared_store)  # noqa: E731
    direct = d.dbpa_test(embed("original"), embed(target.perturbed), discrepancy="js_distance", n_resamples=B,
                         rng=np.random.default_rng(0))
    assert target.pvalue == direct.pvalue and target.statistic == pytest.approx(direct.statistic, rel=1e-12)
    # another seed of the tests gives other p-values (the seed is used)
    other = r.cvd_study(embedder=minilm, store=shared_store, n_resamples=B, seed=1)
    assert [c.pvalue for c in other.models[0].comparisons] != [c.pvalue for c in cvd.models[0].comparisons]
    # the agreement sentence states the measured shares behind the AUCs (AUC < 0.5: controls flagged more)
    sentence = rp.roc_agreement(cvd)
    controls = [float((m.control_pvalues < 0.05).mean()) for m in cvd.models]
    assert f"flags {format_percent(min(controls))}–{format_percent(max(controls))} of the controls" in sentence
    assert not re.search(r"\d%", sentence)  # "57 %", the project's way, never "57%"
    assert "moved more with a control" not in sentence and "follow the thresholds" not in sentence
    # AUC < 0.5 read as measured (issue 42): the name echo, and the targets flagged about as often as α.
    if any(m.pooled.auc < 0.5 for m in cvd.models):
        comparisons = [c for m in cvd.models for c in m.comparisons]
        names = [c for c in comparisons if not c.is_target and str(c.perturbed).startswith("name")]
        targets = [c for c in comparisons if c.is_target]
        echo = [np.mean([("John" in t) for s in recording.seeds for t in recording.answers[m.key, s, "original"]])
                for m in cvd.models]
        assert (f"the name controls are flagged in {sum(c.pvalue < 0.05 for c in names)} of {len(names)} tests, "
                "the model repeating the patient's name ('John' is in "
                f"{format_percent(min(echo))}–{format_percent(max(echo))} of its original answers)") in sentence
        assert f"the targets in {sum(c.pvalue < 0.05 for c in targets)} of {len(targets)}, about α" in sentence
        assert "which says nothing about whether these models follow NICE's thresholds" in sentence
    assert f"k = {recording.k}, {len(recording.seeds)} seeds" in sentence


def test_fig1_record_has_auc_tpr_and_design_per_model_for_both_setups(minilm, shared_store, cvd):
    shipped = r.paraphrase_study(["gpt2", "Phi-3-mini-4k-instruct"], seeds=(9, 68), embedder=minilm,
                                 store=shared_store, n_resamples=200)
    record = rp.reproduction_record(r.Figs12(shipped, cvd))
    assert record["experiment"] == "fig1" and record["design"] == "shared_original"
    assert set(record["setups"]) == {"shipped_paraphrases", "recorded_cvd"}
    for setup in record["setups"].values():
        assert setup["design"] == "shared_original"
        for model in setup["models"]:
            assert model["design"] == "shared_original" and model["source"] == pr.THIS_PROJECT
            assert 0 <= model["auc"] <= 1 and set(model["tpr_at_fpr"]) == {"0.01", "0.05"}
    assert {row["source"] for row in record["rows"]} == set(pr.SOURCES)
    fig2 = [row for row in record["rows"] if row["source"] == pr.PRINTED]
    assert {(row["max_fpr"], row["model"]) for row in fig2} == {(0.01, "Phi-3-mini"), (0.05, "Mistral-7B")}
    assert all(row["reference"] == "§4.2, Fig. 2" for row in fig2)
    assert len(record["agreement"]) == 2 and "Mistral-7B at 5 %" in record["agreement"][0]
    best = rt.best_model_frame(r.Figs12(shipped, cvd))
    assert list(best["best model · paper (printed)"]) == ["Phi-3-mini", "Mistral-7B"]


def test_fig3_three_sources(minilm, shared_store):
    study = r.alignment_study(seeds=(9,), embedder=minilm, store=shared_store, n_resamples=B, seed=0)
    assert [row.model.key for row in study.rows] == list(paper.ALIGNMENT_MODELS)
    reported_zero = {row.label for row in study.rows if row.reported_pvalues[0] == 0.0}
    assert reported_zero == {"SmolLM-135M", "GPT-2"}
    assert reported_zero <= set(study.differing(0.05))
    record = rp.reproduction_record(study)
    assert {row["source"] for row in record["rows"]} == set(pr.SOURCES)
    printed = [row for row in record["rows"] if row["source"] == pr.PRINTED]
    assert {row["item"] for row in printed if row["differs"]} == set(pr.FIG3_DIFFERENT)
    assert all(row["reference_model"] == "GPT-4" and row["reference"] == "§4.3, Fig. 3" for row in printed)
    assert "no GPT-4 arm" in record["agreement"][0]
    table = rt.alignment_frame(study)
    assert table["differs from GPT-4 · paper (printed)"].sum() == 2


def test_appendix_tables_in_the_papers_form(minilm, shared_store):
    result = r.appendix(embedder=minilm, store=shared_store, n_resamples=200, seed=0)
    assert result.omega.choices == pr.TABLE4.columns and result.similarity.choices == pr.TABLE6.columns
    assert result.omega.statistics.shape == (8, 6) and result.similarity.statistics.shape == (8, 4)
    # every ω and every similarity flags the clearest persona effects (comedian, child), as printed for BLEU
    for grid in (result.omega, result.similarity):
        for persona in ("comedian", "child"):
            assert np.all(grid.pvalues[grid.personas.index(persona)] < 0.05)
    # C.3: every cell of Table 5 from assets/pricing.yaml, at the token count its own column uses
    for row in result.costs.rows:
        assert row.tokens == pr.TABLE5.value(str(row.perturbations), "tokens").value
        for model in result.costs.models:
            assert row.cents[model] == pytest.approx(pr.TABLE5.value(str(row.perturbations), model).value)
    assert result.costs.undercount(200) == pytest.approx(10 * result.costs.undercount(2000))
    record = rp.reproduction_record(result)
    assert {row["table"] for row in record["rows"]} == {"Table 4", "Table 5", "Table 6"}
    assert {row["source"] for row in record["rows"]} == {pr.PRINTED, pr.THIS_PROJECT}
    assert len(printed_rows_match_the_transcription(record)) == 8 * 6 + 8 * 4 + 9 * 3
    assert len(record["agreement"]) == 3 and "Total Tokens column" in record["agreement"][1]
    # The doctor row: what the paper says (a role-free baseline), the code's reading named as such (issue 42).
    doctor = result.omega.personas.index("doctor")
    flagged = [c for j, c in enumerate(result.omega.choices) if result.omega.pvalues[doctor, j] < 0.05]
    assert "the paper compares each persona with baseline answers given without a role (§4.1)" in record["agreement"][0]
    assert "which the paper does not say" in record["agreement"][0]
    assert "two separately drawn doctor arms" not in record["agreement"][0]
    assert f"ours compares two halves of the one shipped doctor arm, no role-free answers being shipped (flagged by " \
           f"{rp._names(flagged)})" in record["agreement"][0]
    frame = rt.grid_frame(result.omega)
    assert frame.loc[frame.persona == "child", "Euclidean · paper (printed)"].item() == "57.03***"


def test_stacked_frame_keeps_every_table_shown():
    """Appendix C's CSV held Table 4 alone while Tables 5 and 6 stood beside it (user trial 5): the stacked
    frame holds every table, each row named by its table, each table's own numbers as they are."""
    import pandas as pd

    from dbpa_core.present.tables import frame_csv

    omega = pd.DataFrame({"persona": ["doctor", "nurse"], "JSD · this project": ["0.343", "0.367 ***"]})
    costs = pd.DataFrame({"perturbations": [10, 100], "tokens · this project": [1234, 12340]})
    stacked = rt.stacked_frame([("C.2 · Table 4", omega), ("C.3 · Table 5", costs)])
    assert list(stacked.columns) == ["table", "persona", "JSD · this project", "perturbations",
                                     "tokens · this project"]
    assert list(stacked["table"]) == ["C.2 · Table 4"] * 2 + ["C.3 · Table 5"] * 2
    lines = frame_csv(stacked).splitlines()
    assert lines[1:] == ["C.2 · Table 4,doctor,0.343,,", "C.2 · Table 4,nurse,0.367 ***,,",
                         "C.3 · Table 5,,,10,1234", "C.3 · Table 5,,,100,12340"]  # "10", not "10.0"
    assert rt.stacked_frame([("Table 2", omega)]) is omega  # one table: its CSV as before, no "table" column
    with pytest.raises(ValueError, match="`tables` must hold at least one"):
        rt.stacked_frame([])


def test_sample_size_rule_for_the_papers_settings():
    result = r.sample_size_table()
    assert result.k[1, 0.5] == d.required_sample_size(0.5) == 63
    assert result.k[8, 0.5] == d.required_sample_size(0.5, m=8)
    record = rp.reproduction_record(result)
    assert all(row["source"] in pr.SOURCES for row in record["rows"])
    quote = next(row for row in record["rows"] if row["source"] == pr.PRINTED)
    assert quote["reference"] == "§3.2"
    # the JSON's constant is the one every k was computed with (it read 1 beside k = 2·(…/ω)²)
    constant = record["settings"]["constant"]
    z = stats.norm.ppf(1 - 0.05 / 2) + stats.norm.ppf(0.8)
    assert constant == 2 and result.k[1, 0.2] == math.ceil(constant * (z / 0.2) ** 2) == 393
    assert (f"ω ≥ {result.detectable[1]:.2f} (Cohen's d) for one perturbation and ≥ {result.detectable[8]:.2f}"
            in record["agreement"][0])


def test_second_run_embeds_nothing(minilm, shared_store, table2):
    assert r.missing_embeddings("table2", embedder_key=minilm.key, store=shared_store) == 0
    assert len(shared_store.get_embeddings(minilm.key, r.experiment_texts("table2"))) == 160
    # MiniLM has nothing to embed for any experiment (its vectors ship, the cvd answers' too)
    assert r.missing_embeddings("fig1", embedder_key=minilm.key, store=shared_store) == 0
    assert r.missing_embeddings("fig1", embedder_key="openai:text-embedding-3-small", store=shared_store) > 7000
    assert r.missing_embeddings("sample_size", embedder_key=minilm.key, store=shared_store) == 0


def test_bad_settings_name_the_parameter():
    with pytest.raises(ValueError, match="`n_resamples`"):
        r.persona_table(n_resamples=0)
    with pytest.raises(ValueError, match="`seed`"):
        r.persona_table(seed=-1)
    with pytest.raises(ValueError, match="`discrepancy`"):
        r.paraphrase_study(discrepancy="cosine")
    with pytest.raises(ValueError, match="`models`"):
        r.paraphrase_study([])
    with pytest.raises(ValueError, match="`models` must name some of the recording's models"):
        r.cvd_study(["gpt-5"])
    with pytest.raises(ValueError, match="`seeds`"):
        r.cvd_study(seeds=(99,))
    with pytest.raises(ValueError, match="`seed` must be one of the paper's seeds"):
        r.alignment_study(seeds=(1,))
    with pytest.raises(ValueError, match="`experiment`"):
        r.experiment_texts("table3")
    with pytest.raises(ValueError, match="`perturbations`"):
        r.embedding_costs([0])
    with pytest.raises(ValueError, match="`families`"):
        r.sample_size_table([])


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "dbpa_core", "reproduce", *args], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)


def test_command_line_reproduce_json_carries_source_labels(tmp_path, shared_store, table2):
    out = tmp_path / "table2.json"
    completed = run_cli("table2", "--json", str(out), "--seed", "0", "--store", str(shared_store.path))
    assert completed.returncode == 0, completed.stderr
    assert "p · paper (printed)" not in completed.stdout and "stars GPT-4 · paper (printed)" in completed.stdout
    assert "Agreement with the paper:" in completed.stdout
    record = json.loads(out.read_text())
    assert record["experiment"] == "table2" and record["settings"]["seed"] == 0
    assert all(row["source"] in pr.SOURCES for row in record["rows"])
    printed_rows_match_the_transcription(record)
    # the command line and the library give the same numbers for the same seed
    ours = [row["pvalue"] for row in record["rows"] if row["source"] == pr.THIS_PROJECT]
    assert ours == [row.pvalue for row in table2.rows]
    out = tmp_path / "sample_size.json"
    assert run_cli("sample_size", "--json", str(out)).returncode == 0
    assert all(row["source"] in pr.SOURCES for row in json.loads(out.read_text())["rows"])
    bad = run_cli("table2", "--n-resamples", "0", "--store", str(shared_store.path))
    assert bad.returncode == 2 and "--n-resamples" in bad.stderr


def test_the_sample_size_sentence_calls_the_rule_a_z_tests_with_dbpas_measured_power():
    from dbpa_core.present.reproduction import sample_size_agreement
    from dbpa_core.stats.power import RULE_POWER_AT_63

    sentence = sample_size_agreement(r.sample_size_table())
    assert "meets" not in sentence
    assert "It is the paper's z-test approximation, not DBPA's power" in sentence
    assert (f"found a normal shift in {RULE_POWER_AT_63['js_distance', 1] * 100:.0f} % of simulated audits in 1-D and "
            f"{RULE_POWER_AT_63['js_distance', 16] * 100:.0f} % in 16-D") in sentence
    assert "22 %" in sentence and "8 % in 16-D" in sentence
