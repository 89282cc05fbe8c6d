"""AppTest of the 'Is this the claimed model?' page (pages/model_audit.py) and its core helpers."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from test_app import metric, start

from dbpa_core.present.records import rut_record
from dbpa_core.rut.collect import REFERENCE_TEMPERATURE, target_request
from dbpa_core.rut.data import AuditScores
from dbpa_core.rut.scoring import SCORE_NAMES
from dbpa_core.rut.uniformity import rank_uniformity_test


def _pools_file(tmp_path):
    """Small recorded pools with the real substitutes' names: Q8_0 ≈ the reference, Q2_K and DAN far from it."""
    from test_rut_power import synthetic_pools

    from dbpa_core.rut.pools import Arm, save_rut_pools

    pools = synthetic_pools(31, prompts=40, reference=30, answers=6,
                            shifts={"smollm2-q8_0": 0.0, "smollm2-q2_k": 1.0, "dan": 1.5})
    # The real substitutes' kinds and display names: the page must show these, never the ids.
    names = {"smollm2-q8_0": ("quantization", "Q8_0 requantization (8-bit)"),
             "smollm2-q2_k": ("quantization", "Q2_K requantization (2/3-bit mix)"),
             "dan": ("jailbreak", "DAN-style system prompt")}
    substitutes = {n: Arm(n, *names[n], a.tokens, a.scores) for n, a in pools.substitutes.items()}
    return save_rut_pools(type(pools)(pools.prompts, pools.reference, substitutes), tmp_path / "pools.npz")


@pytest.fixture
def page(tmp_path, monkeypatch):
    from dbpa_core.rut import pools

    monkeypatch.setattr(pools, "POOLS_FILE", _pools_file(tmp_path))
    return start(tmp_path, monkeypatch, page="model_audit")


def test_default_view_opens_on_one_recorded_audit(page):
    """One audit's answer first, in plain words (issue 45: the page opened on the power study)."""
    assert page.radio(key="rut_mode").value == "audit" and not page.exception
    headlines = [m.value for m in page.markdown if m.value.startswith("#### ")]
    assert headlines and headlines[0] in ("#### Likely not the claimed model",
                                          "#### Consistent with the claimed model (this does not prove it is)")
    assert metric(page, "Decision") in ("REJECT H₀", "FAIL TO REJECT H₀")  # the technical label, under it


def test_the_papers_experiments_view(page):
    page.radio(key="rut_mode").set_value("paper").run()
    assert page.radio(key="rut_mode").value == "paper"
    text = " ".join(m.value for m in page.markdown) + " ".join(c.value for c in page.caption)
    assert "paper (printed)" in text and "Table 2a" in text
    tables = [t.value for t in page.table]  # static tables: headers and cells wrap at 1024 px, nothing is cut
    auc = tables[0]
    q8, q2 = "Q8_0 requantization (8-bit)", "Q2_K requantization (2/3-bit mix)"
    assert set(auc["substitute"]) == {q8, q2, "DAN-style system prompt"}  # as the charts name them
    assert {"RUT power AUC", "MMD power AUC", "KS power AUC"} <= set(auc.columns)
    assert auc.set_index("substitute").loc[q2, "RUT power AUC"] > auc.set_index("substitute").loc[q8, "RUT power AUC"]
    assert any("(paper (printed))" in column for column in tables[1].columns)
    # No machine name on screen: not the substitutes' ids, the scores' ids or the methods' ids (the downloads
    # keep them in their own columns).
    shown = [str(v) for t in tables for v in [*t.columns, *t.to_numpy().ravel()]]
    shown += [m.value for m in page.markdown] + [c.value for c in page.caption]
    ids = ("smollm2-q8_0", "smollm2-q2_k", "log_rank", "log_likelihood", "mean_rank", "lrr", "rut ≈", "≈ ks",
           "AUC rut", "record_rut.py")
    assert not [(i, text) for text in shown for i in ids if i in text]
    assert set(tables[2]["furthest from 0.5"]) <= set(SCORE_NAMES.values())
    assert {f"AUROC {name}" for name in SCORE_NAMES.values()} <= set(tables[2].columns)
    assert any("Highest power AUC" in m.value for m in page.markdown)  # the findings
    assert any("of answers did not come from the claimed model" in i.value or "no substitution" in i.value
               for i in page.info)  # the share bound on the default audit
    assert metric(page, "Substituted answers (true)").endswith("of 40")
    assert len(page.get("plotly_chart")) == 4  # power curves, power-AUC bars, score selection, share bound


def test_one_recorded_audit_flags_a_substitute_as_a_warning_with_the_bound(page):
    page.radio(key="rut_mode").set_value("audit").run()
    assert page.selectbox(key="rut_target").value == "smollm2-q2_k"  # the paper view's default audit, not Q8_0
    page.selectbox(key="rut_target").set_value("dan").run()
    page.slider(key="rut_q").set_value(1.0).run()
    assert not page.exception
    assert metric(page, "Decision") == "REJECT H₀" and not page.success
    (box,) = page.warning
    assert "DAN-style system prompt" in box.value and "5 % of audits" in box.value
    assert float(metric(page, "Substituted share").removeprefix("≥ ").removesuffix(" %")) > 20
    captions = " ".join(c.value for c in page.caption)
    assert "40 of 40 target answers actually came from the substitute" in captions and "MMD" in captions
    assert "At α = 0.05 the MMD agrees with the RUT: it flags the target." in captions
    # The MMD's permutation p-value at its floor 1/(B+1) reads as a bound, not "p = 0.000999".
    mmd = next(c.value for c in page.caption if c.value.startswith("MMD"))
    assert re.search(r"p (≤ 0\.001|= 0\.\d{3}|= \d(\.\d)? × 10⁻\d+) \(1000 random within", mmd), mmd
    assert "0.000999" not in mmd
    # Few prompts and answers: every split is enumerated, p is exact and its floor is 1/N (not 1/(N+1))
    page.number_input(key="rut_n").set_value(2).run()
    page.number_input(key="rut_m").set_value(3).run()
    mmd = next(c.value for c in page.caption if c.value.startswith("MMD"))
    assert "(all 16 within-prompt splits, enumerated: p is exact)" in mmd, mmd
    assert re.search(r"p (≤ 0\.063|= 0\.\d+) ", mmd) and "0.0588" not in mmd, mmd


def test_one_recorded_audit_of_the_reference_itself_does_not_reject(page):
    page.radio(key="rut_mode").set_value("audit").run()
    page.selectbox(key="rut_target").set_value("reference").run()
    assert not page.exception
    assert metric(page, "Decision") == "FAIL TO REJECT H₀" and not page.warning
    captions = " ".join(c.value for c in page.caption)
    assert "0 of 40 target answers" in captions
    # its q slider shows 0 (none substituted), not the last q chosen for a substitute (it showed 0.50)
    assert page.slider(key="rut_q_reference").value == 0.0 and page.slider(key="rut_q_reference").disabled
    # the MMD's decision on the same honest audit is read too: agreeing, or a false alarm said to be one
    assert ("At α = 0.05 the MMD agrees with the RUT: it does not flag the target." in captions
            or "None of the answers was substituted, so this is a false alarm of the MMD" in captions), captions


def test_the_mmd_beside_the_rut_is_read_and_a_disagreement_explained():
    """The one-audit view gave the MMD's p = 0.029 under the RUT's FAIL TO REJECT on an honest target, with no
    decision and no word (trial 7); every case now reads."""
    from dbpa_core.present.rut_readings import read_mmd_beside_rut

    assert read_mmd_beside_rut(0.001, 0.002, 0.05) == "At α = 0.05 the MMD agrees with the RUT: it flags the target."
    assert read_mmd_beside_rut(0.4, 0.3, 0.05, substituted=0).endswith("it does not flag the target.")
    honest = read_mmd_beside_rut(0.029, 0.41, 0.05, substituted=0)
    assert honest.startswith("At α = 0.05 the MMD flags the target and the RUT does not. None of the answers was "
                             "substituted, so this is a false alarm of the MMD") and "about 5 % of honest" in honest
    assert "false alarm of the RUT" in read_mmd_beside_rut(0.41, 0.02, 0.05, substituted=0)
    caught = read_mmd_beside_rut(0.41, 0.02, 0.05, substituted=12)
    assert caught.startswith("At α = 0.05 the RUT flags the target and the MMD does not: the two tests see")
    assert "false alarm" not in caught


def test_the_score_choice_reads_plain_names(page):
    page.radio(key="rut_mode").set_value("audit").run()
    box = page.selectbox(key="rut_score")
    assert box.value == "log_rank" and box.options[:2] == ["log-rank", "log-likelihood"]
    assert "log-rank ratio (LRR)" in box.options and not any("_" in o for o in box.options)


def test_live_endpoint_target_takes_no_system_prompt(tmp_path, monkeypatch):
    from dbpa_core.rut import pools

    monkeypatch.setattr(pools, "POOLS_FILE", _pools_file(tmp_path))
    at = start(tmp_path, monkeypatch, page="model_audit")
    at.radio(key="rut_mode").set_value("live").run()
    assert at.text_area(key="rut_system").value.startswith("You are a pirate")  # the local stand-in's default
    # The target and its system prompt on full-width rows: in a third of the width both were cut at 1024 px
    # ("Local SmolLM2 with a", "You are a pirate. Answer lik").
    in_columns = {w.key for column in at.columns for w in [*column.selectbox, *column.text_area, *column.text_input]}
    assert not in_columns & {"rut_source", "rut_system"}
    at.selectbox(key="rut_source").set_value("openai").run()
    assert not any(t.key == "rut_system" for t in [*at.text_input, *at.text_area])
    assert target_request("openai", system="You are a pirate.", temperature=1.3) == (None, REFERENCE_TEMPERATURE)
    assert target_request("upload", system="You are a pirate.", temperature=1.3) == (None, REFERENCE_TEMPERATURE)
    assert target_request("local", system="You are a pirate.", temperature=1.3) == ("You are a pirate.", 1.3)
    with pytest.raises(ValueError, match="`source`"):
        target_request("vllm", system=None, temperature=0.7)


def test_the_paper_views_default_audit_is_the_one_audit_views_audit(page):
    """The paper view's "default audit" (Q2_K at q = 0.5, seed 0) and the one-audit view at the same settings
    are one audit, with the same numbers: they were two draws of one stream at different points (46 and 47 of
    100 substituted on the shipped pools, W² 5.75 and 5.21), and neither view said why."""
    page.radio(key="rut_mode").set_value("paper").run()  # the page opens on one audit (issue 45)
    substituted = metric(page, "Substituted answers (true)")
    bound = metric(page, "Lower bound (95 %)")
    page.radio(key="rut_mode").set_value("audit").run()
    assert (page.selectbox(key="rut_target").value, page.slider(key="rut_q").value) == ("smollm2-q2_k", 0.5)
    captions = " ".join(c.value for c in page.caption)
    assert f"{substituted} target answers actually came from the substitute" in captions, (substituted, captions)
    assert metric(page, "Substituted share") == f"≥ {bound}"


def test_the_rut_csv_carries_the_audits_inputs_as_its_json_says_them(page, monkeypatch):
    """The RUT result CSV read on its own says which audit produced it: the test, target, score, α and the
    run's settings (target choice, q, n, m, seed) follow the ranks, equal to the JSON beside it."""
    from test_app import capture_downloads
    from test_exports import read_csv

    sent = capture_downloads(monkeypatch)
    page.radio(key="rut_mode").set_value("audit").run()
    page.slider(key="rut_q").set_value(0.3).run()
    assert not page.exception
    record = json.loads(sent["rut_result.json"])
    read = read_csv(sent["rut_result.csv"])
    assert list(read.columns[:3]) == ["prompt", "rank", "target_score"]  # as before, in front
    assert list(read["rank"]) == record["ranks"] and list(read["prompt"]) == record["prompts"]
    settings = record["settings"]
    expected = {"test": record["method"], "target": record["target"], "score": record["score"],
                "alpha": record["alpha"], "target choice": settings["target"], "substituted share q": settings["q"],
                "prompts n": settings["n_prompts"], "reference answers m": settings["m"], "seed": settings["seed"]}
    assert (expected["target choice"], expected["substituted share q"], expected["alpha"]) == ("smollm2-q2_k", 0.3,
                                                                                               0.05)
    for column, value in expected.items():
        assert set(read[column]) == {value}, (column, set(read[column]), value)
    # the MMD on the same audit is a result beside the RUT's, not a setting (it sat in "settings")
    assert "mmd_pvalue" not in settings and not [c for c in read.columns if "mmd" in c.lower()]
    mmd = record["mmd"]
    assert mmd["decision"] == ("REJECT H₀" if mmd["pvalue"] <= 0.05 else "FAIL TO REJECT H₀")
    assert mmd["reading"].startswith("At α = 0.05 ") and mmd["reading"] in " ".join(c.value for c in page.caption)
    shown = re.search(r"(\d+) of \d+ target answers actually came from the substitute",
                      " ".join(c.value for c in page.caption))
    assert record["substituted_answers"] == int(shown.group(1))


def test_a_rut_csv_and_record_never_carry_the_endpoints_credentials():
    """An endpoint named with its URL (the live audit's target label) loses its password in the JSON and the CSV;
    a secret-named setting never reaches a cell."""
    import pandas as pd
    from test_exports import SECRET_KEY, SECRET_PASSWORD, assert_no_secret, read_csv

    from dbpa_core.present.csv_inputs import rut_inputs, with_inputs
    from dbpa_core.present.tables import frame_csv

    rng = np.random.default_rng(0)
    scores = AuditScores(("a", "b", "c"), rng.normal(size=3), rng.normal(size=(3, 4)))
    result = rank_uniformity_test(scores.target_scores, scores.reference_scores, rng=0)
    record = rut_record(result, scores, alpha=0.05, score="log_rank",
                        target=f"gpt-4o-mini at https://me:{SECRET_PASSWORD}@llm.example.com/v1",
                        settings={"mode": "live", "n_prompts": 3, "m": 4, "seed": 0, "api_key": SECRET_KEY})
    assert_no_secret(json.dumps(record))
    csv = frame_csv(with_inputs(pd.DataFrame({"prompt": scores.prompts}), rut_inputs(record)))
    assert_no_secret(csv)
    read = read_csv(csv)
    assert "api key" not in read.columns and set(read["target"]) == {record["target"]}
    assert "llm.example.com" in record["target"]


def test_the_paper_experiments_csv_carries_the_studys_settings(page, monkeypatch):
    """The paper view's power-curve CSV says which study produced it: the JSON's n, m, trials, B, seed, α."""
    from test_app import capture_downloads
    from test_exports import read_csv

    sent = capture_downloads(monkeypatch)
    page.radio(key="rut_mode").set_value("paper").run()  # the page opens on one audit (issue 45)
    settings = json.loads(sent["rut_paper_experiments.json"])["settings"]
    read = read_csv(sent["rut_paper_experiments.csv"])
    assert list(read.columns[:2]) == ["substitute", "q"]
    for column, key in [("prompts n", "n_prompts"), ("reference answers m", "m"), ("n trials", "n_trials"),
                        ("permutations B", "n_resamples"), ("seed", "seed"), ("alpha", "alpha"),
                        ("score", "score")]:
        assert set(read[column]) == {settings[key]}, (column, set(read[column]), settings[key])
