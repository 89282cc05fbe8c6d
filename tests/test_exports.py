"""dbpa_core.present.exports: every export of a family says what the screen says."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np

from dbpa_core.audit import Arm, compare_family
from dbpa_core.present.exports import family_html
from dbpa_core.present.records import family_record, json_default
from dbpa_core.present.tables import alignment_table, family_csv, family_frame


def make_family():
    rng = np.random.default_rng(5)
    original = Arm("original", "x", "", tuple(f"o{i}" for i in range(12)), rng.normal(size=(12, 5)), "m",
                   tuple(f"{0:016x}:{i}" for i in range(12)))
    shifts = [0.0, 0.0, 0.9, 1.1, 3.0, 0.0]
    arms = [Arm(f"p{i}", f"x{i}", "", tuple(f"p{i}-{j}" for j in range(12)), rng.normal(size=(12, 5)) + s, "m",
                tuple(f"{i + 1:016x}:{j}" for j in range(12)))
            for i, s in enumerate(shifts)]
    perturbations = [SimpleNamespace(id=f"p{i}", label=f"p{i}", kind="target" if s else "control")
                     for i, s in enumerate(shifts)]
    return compare_family(original, arms, perturbations, discrepancy="energy", n_resamples=499, seed=3)


def test_a_recorrected_family_exports_its_own_correction_everywhere():
    family = make_family().recorrected("holm", 0.1)
    table = family_frame(family)
    record = family_record(family, name="t", settings={"sampler": {"backend": "simulated"}})
    n_declared = int((table["decision"] == "REJECT H₀").sum())
    assert "p adjusted (Holm)" in table.columns
    assert record["summary"] == {"n_perturbations": 6, "n_rejected": n_declared, "change_detected": n_declared > 0,
                                 "correction": "holm", "alpha": 0.1}
    settings = record["settings"]
    assert (settings["correction"], settings["alpha"], settings["k"], settings["n_resamples"], settings["seed"],
            settings["similarity"], settings["discrepancy"]) == ("holm", 0.1, 12, 499, 3, "cosine", "energy")
    assert [p["decision"] for p in record["perturbations"]] == list(table["decision"])
    assert family_csv(family) == table.to_csv(index=False, lineterminator="\r\n")  # RFC 4180 rows
    page = family_html(family, record)
    verb = "is" if n_declared == 1 else "are"
    assert f"{n_declared} of 6 perturbations {verb} declared to change the output distribution (Holm correction" in page
    assert "bonferroni" not in page


def test_html_readings_never_contradict_their_numbers():
    """Each perturbation's sentence reads the raw p, then decides on the *adjusted* p it names."""
    family = make_family()
    page = family_html(family, family_record(family, name="t", settings={}))
    items = re.findall(r"<li><b>(p\d)</b>: (.*?)</li>", page)
    assert len(items) == 6
    for (_label, sentence), _p_adjusted, reject in zip(items, family.adjusted.pvalues_adjusted, family.adjusted.reject):
        assert "adjusted p is" in sentence
        if reject:
            assert "≤ α = 0.05: declared to change" in sentence, sentence
        else:
            assert "&gt; α = 0.05: no change declared" in sentence, sentence
    assert any(family.results[i].test.pvalue <= 0.05 < family.adjusted.pvalues_adjusted[i] for i in range(6)), \
        "the fixture should hold a raw-significant, adjusted-not-significant case"


def test_record_is_valid_json_that_round_trips():
    """The record serialises without a fallback, validates against the report schema, and reads back equal."""
    import jsonschema

    from dbpa_core.present.records import SCHEMA_PATH

    family = make_family()
    record = family_record(family, name="t", settings={"sampler": {"backend": "simulated"},
                                                       "embedder": {"name": "minilm"}})
    text = json.dumps(record, default=json_default)
    jsonschema.validate(json.loads(text), json.loads(SCHEMA_PATH.read_text()))
    back = json.loads(text)
    assert back["settings"]["design"] == "fixed" and back["settings"]["seed"] == 3
    assert [p["pvalue"] for p in back["perturbations"]] == [r.test.pvalue for r in family.results]
    assert [p["sample_ids"] for p in back["perturbations"]] == [list(r.perturbed.sample_ids) for r in family.results]


def test_alignment_table_reads_aligned_as_not_rejected():
    family = make_family()
    table = alignment_table(family)
    # make_family tests with the energy distance: its column says so (it read "ω (JSD)", issue 45)
    assert table.columns[0] == "model" and "energy distance" in table.columns and "ω (JSD)" not in table.columns
    assert list(table["aligned with reference"]) == ["no (differs)" if reject else "no difference shown at this k"
                                                     for reject in family.adjusted.reject]
    assert "no (differs)" in set(table["aligned with reference"]) and len(set(table["aligned with reference"])) == 2


def test_exports_reproduce_the_screen_after_resample():
    """After "Resample" (replicate r) the record names the seeds the sampler was given, not only the sidebar
    seed (issue 29: the JSON said seed 0 and could not reproduce the screen); the HTML report of simulated
    outputs says they are synthetic, and names the correction."""
    from dbpa_core.audit.request import arm_seed

    family = make_family()
    record = family_record(family, name="t", settings={"replicate": 2, "sampler": {"backend": "simulated"}})
    seed = record["settings"]["seed"]
    assert record["settings"]["sampler_seeds"] == {"original": arm_seed(seed, perturbed=False, replicate=2),
                                                   "perturbed": arm_seed(seed, perturbed=True, replicate=2)}
    assert record["settings"]["sampler_seeds"]["original"] != seed
    assert record["settings"]["correction_name"] == "Bonferroni"
    page = family_html(family, record)
    assert "Synthetic outputs" in page and "adjusted p (Bonferroni)" in page
    real = family_html(family, family_record(family, name="t", settings={"sampler": {"backend": "recorded"}}))
    assert "Synthetic outputs" not in real


def test_result_html_carries_the_test_and_what_changed():
    """One two-arm test's report: its decision and readings, and the explanation's readings when the record has
    one (theme names in italics); without one, no "What changed" section."""
    from dbpa_core.present.exports import result_html
    from dbpa_core.present.records import explanation_record
    from dbpa_core.present.readings import read_pvalue
    from dbpa_core.present.records import result_to_dict
    from dbpa_core.stats.explain import explain_change

    result = make_family().results[4]  # the shift of 3: a clear change
    texts_x = [f"the sky is blue {i}" for i in range(12)]
    texts_y = [f"mars is red {i}" for i in range(12)]
    explanation = explain_change(texts_x, texts_y, result.original.embeddings, result.perturbed.embeddings, rng=0)
    record = result_to_dict(result.test, alpha=0.05, explanation=explanation_record(explanation))
    report = result_html(result.test, record, title="one test", alpha=0.05, label="energy")
    assert "REJECT H₀" in report and read_pvalue(result.test.pvalue, result.test.n_resamples) in report
    # The headline writes a p at its floor 1/(B+1) as the screen's card does: "≤ 0.002", not "p = 0.002".
    assert result.test.pvalue == 1 / 500 and "energy = " in report and "· p\n≤ 0.002</p>" in report
    assert "<h2>What changed</h2>" in report
    significant = explanation.significant_themes
    assert significant and f"Theme <i>{', '.join(significant[0].terms[:3])}</i>" in report
    assert "null_distribution" not in report  # the null is in the JSON, not in the report's settings
    plain = result_html(result.test, result_to_dict(result.test, alpha=0.05), title="one test", alpha=0.05)
    assert "What changed" not in plain


def test_the_family_table_marks_p_at_its_floor_on_screen():
    """The p column's floor 1/(B+1) travels with the table: on screen "≤ 0.002", as on the p-value card; the
    adjusted p is a plain number (it is not a permutation floor); the CSV keeps the numbers."""
    from dbpa_core.present.formatting import people_formatters

    family = make_family()
    table = family_frame(family)
    assert table.attrs["resampling"] == (499, False)
    shown = people_formatters(table)
    at_floor = [i for i, r in enumerate(family.results) if r.test.pvalue == 1 / 500]
    assert at_floor and all(shown["p"](table["p"][i]) == "≤\u00a00.002" for i in at_floor)  # never wrapped after ≤
    others = [i for i in range(6) if i not in at_floor]
    assert all(not shown["p"](table["p"][i]).startswith("≤") for i in others)
    adjusted = next(c for c in table.columns if c.startswith("p adjusted"))
    assert not any(shown[adjusted](v).startswith("≤") for v in table[adjusted])
    assert "0.002" in family_csv(family) and "≤" not in family_csv(family)
    kept = table[["perturbation", "p"]]  # the page shows parts of a wide table: the floor goes with them
    assert people_formatters(kept)["p"](table["p"][at_floor[0]]) == "≤\u00a00.002"


def test_a_sequential_familys_csv_carries_the_samples_each_arm_drew():
    """Each sequential test stops on its own: the table (screen and CSV alike) says how many samples each arm drew,
    so a CSV of an early stop does not read like a run at the largest k (trial 5: the CSV lacked the column)."""
    from dbpa_core.stats.corrections import adjust_pvalues
    from dbpa_core.stats.sequential import sequential_dbpa_test

    data = np.random.default_rng(0)
    shifts = (3.0, 0.0)
    tests = [sequential_dbpa_test(lambda n: data.normal(size=(n, 4)), lambda n, s=s: data.normal(size=(n, 4)) + s,
                                  alpha=0.025, k_max=30, batch_size=10, discrepancy="energy", n_resamples=199, rng=1)
             for s in shifts]
    drawn = [t.n_per_arm for t in tests]
    assert drawn[0] < 30 == drawn[1]  # the clear change stopped early, the null ran to k_max
    results = tuple(SimpleNamespace(label=f"p{i}", kind="target" if s else "control", test=t, true_effect=None)
                    for i, (s, t) in enumerate(zip(shifts, tests)))
    family = SimpleNamespace(results=results, adjusted=adjust_pvalues([t.pvalue for t in tests], alpha=0.05))
    table = family_frame(family)
    assert list(table.columns[:3]) == ["perturbation", "kind", "samples per arm"]
    assert list(table["samples per arm"]) == drawn
    rows = family_csv(family).splitlines()
    assert rows[0].startswith("perturbation,kind,samples per arm,") and rows[1].startswith(f"p0,target,{drawn[0]},")
    assert "samples per arm" not in family_frame(make_family()).columns  # a fixed-k family has one k for all


#: A sampler whose identity carries two credentials: a key and a URL password. Neither may reach a CSV.
SECRET_KEY, SECRET_PASSWORD = "sk-csvtestabcdefghijklmnop", "hunter2pass"
LEAKY_SAMPLER = {"backend": "openai", "model": "gpt-4o-mini", "api_key": SECRET_KEY,
                 "base_url": f"https://me:{SECRET_PASSWORD}@llm.example.com/v1"}


def read_csv(text):
    """A downloaded CSV (text or bytes) as pandas reads it."""
    import io

    import pandas as pd

    return pd.read_csv(io.BytesIO(text if isinstance(text, bytes) else text.encode()))


def assert_no_secret(csv):
    text = csv.decode() if isinstance(csv, bytes) else csv
    assert SECRET_KEY not in text and SECRET_PASSWORD not in text, text


def assert_constant(frame, column, expected):
    """Every row of ``column`` holds ``expected`` (a CSV's inputs are the same on every row)."""
    assert column in frame.columns, (column, list(frame.columns))
    assert set(frame[column]) == {expected}, (column, set(frame[column]), expected)


def test_the_family_csv_carries_the_records_settings_after_its_own_columns(tmp_path):
    """A family CSV read on its own says what produced it: the JSON record's k, B, seed, α, correction, ω,
    scenario, sampler and embedder follow the table's columns (unchanged, in front); no credential gets in."""
    from dbpa_core.present.exports import write_reports

    family = make_family().recorrected("holm", 0.1)
    record = family_record(family, name="t", settings={"sampler": LEAKY_SAMPLER, "embedder": {"name": "minilm"},
                                                        "seed": 3, "scenario": "seasons_question"})
    screen = family_frame(family)
    for csv in (family_csv(family, record), write_reports(family, record, tmp_path)["csv"].read_bytes()):
        read = read_csv(csv)
        assert list(read.columns[:len(screen.columns)]) == list(screen.columns)  # existing readers keep working
        assert list(read["perturbation"]) == list(screen["perturbation"])
        assert np.allclose(read["p adjusted (Holm)"], screen["p adjusted (Holm)"])
        settings = record["settings"]
        for column, key in [("samples per arm k", "k"), ("permutations B", "n_resamples"), ("seed", "seed"),
                            ("alpha", "alpha"), ("correction", "correction"), ("discrepancy ω", "discrepancy"),
                            ("similarity", "similarity"), ("scenario", "scenario")]:
            assert_constant(read, column, settings[key])
        assert (settings["k"], settings["n_resamples"], settings["alpha"], settings["correction"]) == (12, 499, 0.1,
                                                                                                         "holm")
        assert_constant(read, "embedder", "name=minilm")
        (sampler,) = set(read["sampler"])
        assert "backend=openai" in sampler and "model=gpt-4o-mini" in sampler and "llm.example.com" in sampler
        assert_no_secret(csv)
    assert "permutations B" not in family_frame(family).columns  # the screen's table is left as it was


def test_inputs_columns_never_overwrite_a_result_column_and_pass_csv_safe():
    """A setting named like a result column gets its own column; a setting that reads as a formula is neutralised."""
    import pandas as pd

    from dbpa_core.present.csv_inputs import with_inputs
    from dbpa_core.present.tables import frame_csv

    frame = pd.DataFrame({"seed": [1, 2], "p": [0.5, 0.01]})
    read = read_csv(frame_csv(with_inputs(frame, {"seed": 7, "scenario": "=HYPERLINK(1)", "token": "abcdefghijk"})))
    assert list(read.columns) == ["seed", "p", "seed (setting)", "scenario", "dbpa explorer version"]
    assert list(read["seed"]) == [1, 2] and set(read["seed (setting)"]) == {7}
    assert set(read["dbpa explorer version"].astype(str)) == {__import__("dbpa_core").__version__}
    assert set(read["scenario"]) == {"'=HYPERLINK(1)"}


def test_the_roc_csv_carries_the_runs_settings():
    """The live TPR/FPR CSV: scenarios, replicates, k, B, ω and seed of the families behind the ROC, as its JSON
    record says them; a recorded setup's CSV its setup, design, allowed FPR and settings."""
    from dbpa_core.audit.experiments import rates_experiment
    from dbpa_core.present.csv_inputs import roc_inputs, with_inputs
    from dbpa_core.present.records import rates_record
    from dbpa_core.present.tables import frame_csv

    comparison = rates_experiment(lambda model, replicate, scenario: make_family(), ["a", "b"], ["s1", "s2"],
                                  replicates=2)
    record = rates_record(comparison, 0.05, settings={"sampler": LEAKY_SAMPLER, "embedder": {"name": "minilm"},
                                                      "seed": 3})
    table = comparison.summary(0.05)
    csv = frame_csv(with_inputs(table, roc_inputs(record)))
    read = read_csv(csv)
    assert list(read.columns[:len(table.columns)]) == list(table.columns)
    assert list(read["model"]) == ["a", "b"] and list(read["AUC"]) == [r["AUC"] for r in record["models"]]
    settings = record["settings"]
    assert (settings["k"], settings["n_resamples"], settings["seed"], settings["replicates"]) == (12, 499, 3, 2)
    assert "correction" not in settings and "alpha" not in settings  # the ROC runs over every α
    for column, key in [("samples per arm k", "k"), ("permutations B", "n_resamples"), ("seed", "seed"),
                        ("replicates", "replicates"), ("discrepancy ω", "discrepancy")]:
        assert_constant(read, column, settings[key])
    assert_constant(read, "scenarios", "s1, s2")
    assert_constant(read, "allowed FPR", record["max_fpr"])
    assert_no_secret(csv)
    assert_no_secret(json.dumps(record))
    # A recorded setup's record (ui.paper.recorded_or_live): its own keys come first.
    recorded = {"setup": "recorded_cvd", "design": "cvd_nice", "max_fpr": 0.1, "models": [],
                "settings": {"k": 20, "n_resamples": 1000, "seed": 0, "seeds": [0, 1]}}
    read = read_csv(frame_csv(with_inputs(table, roc_inputs(recorded))))
    assert list(read.columns[len(table.columns):]) == ["setup", "design", "allowed FPR", "samples per arm k",
                                                       "permutations B", "seed", "seeds", "dbpa explorer version"]
    assert_constant(read, "seeds", "0, 1")
