"""Tests of dbpa_core.audit.compare and `dbpa compare` (one perturbation across many prompts, from a log)."""

from __future__ import annotations

import json

import pytest

import dbpa_core
from dbpa_core.__main__ import EXIT_BAD_INPUT, EXIT_CHANGE, EXIT_OK, main
from dbpa_core.audit.compare import COMPARE_DISCREPANCY, CompareRequest, run_compare
from dbpa_core.present.compare import compare_record
from dbpa_core.data.assets import ASSETS
from dbpa_core.paper.embeddings import load_shipped_embeddings

EXAMPLE = ASSETS / "examples" / "gpt35_vs_gpt4_9_prompts.jsonl"
ARMS = ["--arms", "GPT-3.5", "GPT-4"]
SHIPPED = {"known_vectors": load_shipped_embeddings}  # the example's outputs are the paper's: vectors ship


@pytest.fixture
def rows():
    return [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def compare(tmp_path, *args):
    return main(["compare", *args, "--from", "jsonl", "--store", str(tmp_path / "store.sqlite"),
                 "--n-resamples", "500"])


def test_example_json_and_table(tmp_path, capsys):
    out = tmp_path / "out.json"
    assert compare(tmp_path, str(EXAMPLE), *ARMS, "--json", str(out)) == EXIT_OK
    printed = capsys.readouterr().out
    assert "GPT-3.5 → GPT-4: 9 prompts" in printed and "a change is declared" in printed
    record = json.loads(out.read_text())
    assert record["version"] == dbpa_core.__version__
    assert record["pvalue"] <= 0.01 and record["statistic"] > 0 and record["change_detected"]
    assert record["settings"]["discrepancy"] == "Energy()" and COMPARE_DISCREPANCY == "energy"
    assert len(record["per_prompt"]) == 9
    first = record["per_prompt"][0]
    assert set(first) >= {"prompt", "prompt_id", "pvalue", "qvalue", "k"}
    assert first["k"] == {"GPT-3.5": 5, "GPT-4": 5}
    qs = [row["qvalue"] for row in record["per_prompt"]]
    assert qs == sorted(qs)


def test_fail_on_change(tmp_path):
    assert compare(tmp_path, str(EXAMPLE), *ARMS, "--fail-on-change") == EXIT_CHANGE


def test_two_files_give_the_same_test(tmp_path, rows):
    one = run_compare(CompareRequest((str(EXAMPLE),), "jsonl", ("GPT-3.5", "GPT-4"), n_resamples=300), **SHIPPED)
    a = write(tmp_path / "a.jsonl", [{k: v for k, v in r.items() if k != "arm"} for r in rows if r["arm"] == "GPT-3.5"])
    b = write(tmp_path / "b.jsonl", [{k: v for k, v in r.items() if k != "arm"} for r in rows if r["arm"] == "GPT-4"])
    two = run_compare(CompareRequest((a, b), "jsonl", ("GPT-3.5", "GPT-4"), n_resamples=300), **SHIPPED)
    assert two.test.pvalue == one.test.pvalue and two.test.statistic == one.test.statistic


def test_no_change_between_halves_of_one_model(tmp_path, rows):
    """GPT-4 against itself (two disjoint answers of 5 split 3 / 2 by prompt): no change, exit 0."""
    halves = []
    for prompt_id in dict.fromkeys(r["prompt_id"] for r in rows):
        answers = [r for r in rows if r["prompt_id"] == prompt_id and r["arm"] == "GPT-4"]
        halves += [dict(r, arm="first") for r in answers[:3]] + [dict(r, arm="second") for r in answers[3:]]
    path = write(tmp_path / "halves.jsonl", halves)
    result = run_compare(CompareRequest((path,), "jsonl", n_resamples=300), **SHIPPED)
    assert not result.change and result.test.n_prompts == 9


def test_prompts_with_one_output_are_left_out(tmp_path, rows):
    kept = [r for r in rows if not (r["prompt_id"] == "patient" and r["arm"] == "GPT-4")]
    kept.append(next(r for r in rows if r["prompt_id"] == "patient" and r["arm"] == "GPT-4"))
    result = run_compare(CompareRequest((write(tmp_path / "log.jsonl", kept),), "jsonl", n_resamples=200), **SHIPPED)
    assert result.left_out == ("patient",) and result.test.n_prompts == 8
    assert "1 prompt(s) left out" in compare_record(result)["readings"][-1]


@pytest.mark.parametrize(("args", "message"), [
    (["missing.jsonl"], "missing.jsonl"),
    ([str(EXAMPLE), "--arms", "GPT-3.5", "GPT-5"], "GPT-5"),
    ([str(EXAMPLE), *ARMS, "--alpha", "2"], "alpha"),
    ([str(EXAMPLE), *ARMS, "--fdr", "0"], "fdr"),
])
def test_bad_input_exits_2(tmp_path, capsys, args, message):
    assert compare(tmp_path, *args) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def test_bad_resamples_and_malformed_line(tmp_path, capsys):
    assert main(["compare", str(EXAMPLE), "--from", "jsonl", *ARMS, "--n-resamples", "0"]) == EXIT_BAD_INPUT
    assert "--n-resamples" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "p", "arm": "a", "text": "x"}\nnot json\n', encoding="utf-8")
    assert compare(tmp_path, str(bad)) == EXIT_BAD_INPUT
    assert "line 2" in capsys.readouterr().err


def test_too_few_resamples_for_alpha_is_said(tmp_path, capsys):
    assert main(["compare", str(EXAMPLE), "--from", "jsonl", *ARMS, "--n-resamples", "10", "--store",
                 str(tmp_path / "s.sqlite")]) == EXIT_OK
    assert "No p-value can reach α = 0.05" in capsys.readouterr().out


def test_request_validation_names_the_field():
    with pytest.raises(ValueError, match="`discrepancy`"):
        run_compare(CompareRequest((str(EXAMPLE),), "jsonl", discrepancy="nope"))
    with pytest.raises(ValueError, match="`paths`"):
        run_compare(CompareRequest((), "jsonl"))


def test_themes_of_the_flagged_prompts(tmp_path, capsys):
    """What changed, per flagged prompt: explain_change's themes, only those significant at FDR, in JSON and text."""
    out = tmp_path / "out.json"
    assert compare(tmp_path, str(EXAMPLE), *ARMS, "--json", str(out)) == EXIT_OK
    printed = capsys.readouterr().out
    record = json.loads(out.read_text())
    flagged = [row for row in record["per_prompt"] if row["changed"]]
    assert len(flagged) == 6 and all("themes" in row for row in flagged)
    assert not any("themes" in row for row in record["per_prompt"] if not row["changed"])
    found = [row for row in flagged if row["themes"]]
    assert len(found) == 1 and found[0]["prompt_id"] == "paraphrase-6"
    for theme in found[0]["themes"]:
        assert theme["qvalue"] <= 0.1 and theme["terms"] and theme["example"]
        assert set(theme["share"]) == {"GPT-3.5", "GPT-4"}
    assert sorted(t["share"]["GPT-4"] for t in found[0]["themes"]) == [0.2, 0.8]
    assert "What changed — themes in the 6 flagged prompt(s) (1 with a theme" in printed
    assert "Theme cvd, risk, john — 20 % of GPT-4 outputs vs 100 % of GPT-3.5, q = 0.048." in printed
    assert printed.count("the change is spread over its outputs") == 5
    assert any("looked for in the 6 flagged prompt(s) only" in r for r in record["readings"])


def test_themes_follow_explain_change_exactly():
    """A flagged prompt's account is explain_change on that prompt's own outputs, seeded by (seed, index)."""
    import numpy as np

    from dbpa_core import explain_change

    result = run_compare(CompareRequest((str(EXAMPLE),), "jsonl", ("GPT-3.5", "GPT-4"), n_resamples=300), **SHIPPED)
    index, prompt = next((i, p) for i, p in enumerate(result.prompts) if p.prompt_id == "paraphrase-6")
    x, y = result.vectors[prompt.prompt_id]
    again = explain_change(list(prompt.texts["GPT-3.5"]), list(prompt.texts["GPT-4"]), x, y, fdr=0.1,
                           n_resamples=300, rng=np.random.default_rng(np.random.SeedSequence([0, index])))
    mine = result.themes["paraphrase-6"]
    assert [t.qvalue for t in mine.themes] == [t.qvalue for t in again.themes]
    assert list(mine.labels) == list(again.labels)
    assert set(result.themes) == {p.prompt_id for p, c in zip(result.prompts, result.test.changed) if c}


def test_no_flagged_prompt_no_themes(tmp_path, rows):
    halves = []
    for prompt_id in dict.fromkeys(r["prompt_id"] for r in rows):
        answers = [r for r in rows if r["prompt_id"] == prompt_id and r["arm"] == "GPT-4"]
        halves += [dict(r, arm="first") for r in answers[:3]] + [dict(r, arm="second") for r in answers[3:]]
    result = run_compare(CompareRequest((write(tmp_path / "h.jsonl", halves),), "jsonl", n_resamples=300), **SHIPPED)
    assert not result.test.changed.any() and result.themes == {}
    assert not any("themes" in row for row in compare_record(result)["per_prompt"])
