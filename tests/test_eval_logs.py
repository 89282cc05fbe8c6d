"""dbpa_core.data.eval_logs: real logs of promptfoo, lm-evaluation-harness and Inspect AI (tests/fixtures/eval_logs,
made by scripts/make_log_fixtures.py with the tools themselves) read into per-prompt arms; malformed copies refused.

Every expected count below was read off the files by hand and is checked again here by an independent count
(plain json over the file), so a reader that merged, lost or duplicated a sample fails both.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from dbpa_core.data.eval_logs import EvalLog, PromptSamples, load_eval_log

FIXTURES = Path(__file__).parent / "fixtures" / "eval_logs"


def counts(log: EvalLog) -> dict[str, dict[str, int]]:
    return {p.prompt_id: {arm: len(texts) for arm, texts in p.texts.items()} for p in log.prompts}


def test_fixtures_are_small_and_real():
    sizes = {path.name: path.stat().st_size for path in FIXTURES.iterdir()}
    assert sum(sizes.values()) < 300_000, sizes
    versions = (FIXTURES / "README.md").read_text()
    for tool in ("promptfoo 0.123.1", "inspect-ai 0.3.285", "lm-eval 0.4.13"):
        assert tool in versions


# ------------------------------------------------------------------------------------------ promptfoo
def test_promptfoo_two_providers_with_repeats():
    path = FIXTURES / "promptfoo_providers.json"
    log = load_eval_log([path], fmt="promptfoo")
    assert log.source == "promptfoo" and log.arms == ("baseline", "candidate")
    # 3 test cases × --repeat 3 × 2 providers = 18 rows: one empty output (baseline, [terse]) and one HTTP 400
    # (candidate, [flaky]) skipped
    assert [p.prompt for p in log.prompts] == ["Answer briefly: Name a colour of the sky.",
                                               "Answer briefly: Describe rain in a few words. [terse]",
                                               "Answer briefly: What is a good pet? [flaky]"]
    assert [tuple(c.values()) for c in counts(log).values()] == [(3, 3), (2, 3), (3, 2)]
    assert log.skipped == 2
    assert any("empty output" in n and "row 7" in n for n in log.notes)
    assert any("error" in n and "row 14" in n for n in log.notes)
    # independently: the non-empty, error-free outputs of each provider, in file order
    rows = json.loads(path.read_text())["results"]["results"]
    for arm in log.arms:
        expected = [r["response"]["output"] for r in rows if r["provider"]["label"] == arm and not r.get("error")
                    and r["response"]["output"]]
        assert sorted(t for p in log.prompts for t in p.texts[arm]) == sorted(expected)
    # repeats are new testIdx values, one test case: the 9 testIdx of a provider fold into 3 prompts
    assert len({r["testIdx"] for r in rows}) == 9


def test_promptfoo_prompt_ids_are_stable_across_files():
    both = load_eval_log([FIXTURES / "promptfoo_providers.json"], fmt="promptfoo")
    runs = load_eval_log([FIXTURES / "promptfoo_run_a.json", FIXTURES / "promptfoo_run_b.json"], fmt="promptfoo")
    assert runs.arms == ("promptfoo_run_a", "promptfoo_run_b")
    assert counts(runs) == {both.prompts[0].prompt_id: {"promptfoo_run_a": 3, "promptfoo_run_b": 3},
                            both.prompts[2].prompt_id: {"promptfoo_run_a": 3, "promptfoo_run_b": 2}}
    assert runs.skipped == 1 and "promptfoo_run_b.json: skipped 1 error" in runs.notes[0]
    named = load_eval_log([FIXTURES / "promptfoo_run_a.json", FIXTURES / "promptfoo_run_b.json"], fmt="promptfoo",
                          arms=["old", "new"])
    assert named.arms == ("old", "new") and named.prompts[0].texts["old"] == runs.prompts[0].texts["promptfoo_run_a"]


def test_promptfoo_prompt_versions_are_the_arms_of_a_one_provider_file():
    log = load_eval_log([FIXTURES / "promptfoo_prompts.json"], fmt="promptfoo")
    short, poet = "Answer briefly: {{question}}", "You are a poet. Answer in one line: {{question}}"
    assert log.arms == (short, poet)
    # 2 test cases × 2 prompt versions × 3 repeats; the first [terse] call of each version answered ""
    assert [tuple(c.values()) for c in counts(log).values()] == [(3, 3), (2, 2)]
    assert log.skipped == 2
    assert log.prompts[0].prompt == "question: Name a colour of the sky."
    reordered = load_eval_log([FIXTURES / "promptfoo_prompts.json"], fmt="promptfoo", arms=[poet, short])
    assert reordered.arms == (poet, short)


def test_promptfoo_arms_selection_and_unknown_arm():
    path = FIXTURES / "promptfoo_providers.json"
    log = load_eval_log([path], fmt="promptfoo", arms=["candidate", "baseline"])
    assert log.arms == ("candidate", "baseline")
    with pytest.raises(ValueError, match=r"promptfoo_providers\.json: no arm 'gpt-5'.*'baseline', 'candidate'"):
        load_eval_log([path], fmt="promptfoo", arms=["baseline", "gpt-5"])
    with pytest.raises(ValueError, match="1 arm found"):
        load_eval_log([FIXTURES / "promptfoo_run_a.json"], fmt="promptfoo")
    # one arm per file: a file of two providers given with another would pool its providers into one arm
    with pytest.raises(ValueError, match=r"promptfoo_providers\.json: holds 2 providers \(baseline, candidate\)"):
        load_eval_log([path, FIXTURES / "promptfoo_run_b.json"], fmt="promptfoo")


# ------------------------------------------------------------------------------------------ lm-eval
def test_lm_eval_two_runs_with_repeats():
    paths = [FIXTURES / "lm_eval_fake-a.jsonl", FIXTURES / "lm_eval_fake-b.jsonl"]
    log = load_eval_log(paths, fmt="lm-eval", arms=["a", "b"])
    assert log.arms == ("a", "b") and [p.prompt_id for p in log.prompts] == ["0", "1", "2", "3"]
    assert [tuple(c.values()) for c in counts(log).values()] == [(3, 3), (3, 3), (2, 3), (3, 3)]
    assert log.skipped == 1 and "lm_eval_fake-a.jsonl: skipped 1 empty output" in log.notes[0]
    assert log.prompts[0].prompt == "Question: Name a colour of the sky.\nAnswer:"
    for arm, path in zip(log.arms, paths, strict=True):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        expected = [t for line in lines for t in line["resps"][0] if t]
        assert [t for p in log.prompts for t in p.texts[arm]] == expected


def test_lm_eval_a_doc_under_two_filters_is_read_once(tmp_path):
    lines = (FIXTURES / "lm_eval_fake-a.jsonl").read_text().splitlines()
    again = json.loads(lines[0]) | {"filter": "strict-match"}
    (tmp_path / "a.jsonl").write_text("\n".join([*lines, json.dumps(again)]) + "\n")
    shutil.copy(FIXTURES / "lm_eval_fake-b.jsonl", tmp_path / "b.jsonl")
    log = load_eval_log([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], fmt="lm-eval")
    assert counts(log)["0"] == {"a": 3, "b": 3}
    assert any("1 line(s) repeat a doc under another filter" in n for n in log.notes)
    changed = json.loads(lines[0]) | {"resps": [["x", "y", "z"]]}
    (tmp_path / "a.jsonl").write_text("\n".join([*lines, json.dumps(changed)]) + "\n")
    with pytest.raises(ValueError, match=r"a\.jsonl, line 5: doc 0 appears twice with different generations"):
        load_eval_log([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], fmt="lm-eval")


# ------------------------------------------------------------------------------------------ Inspect
def test_inspect_two_eval_logs_with_epochs():
    paths = [FIXTURES / "inspect_fake-a.eval", FIXTURES / "inspect_fake-b.eval"]
    log = load_eval_log(paths, fmt="inspect")
    assert log.arms == ("inspect_fake-a", "inspect_fake-b")
    # 4 samples × 3 epochs per log; fake-a's q3 epoch 1 answered "", fake-b's q4 epoch 1 failed (HTTP 400)
    assert counts(log) == {"q1": {"inspect_fake-a": 3, "inspect_fake-b": 3}, "q2": {"inspect_fake-a": 3,
                           "inspect_fake-b": 3}, "q3": {"inspect_fake-a": 2, "inspect_fake-b": 3},
                           "q4": {"inspect_fake-a": 3, "inspect_fake-b": 2}}
    assert log.skipped == 2
    assert any("inspect_fake-b.eval: skipped 1 error" in n and "q4_epoch_1" in n for n in log.notes)
    assert "inspect_fake-a.eval: arm 'inspect_fake-a' is model openai-api/fake/fake-a, task dbpa_fixture." in log.notes
    with zipfile.ZipFile(paths[1]) as archive:  # independently: epochs in order, each sample's completion
        q1 = [json.loads(archive.read(f"samples/q1_epoch_{e}.json"))["output"]["completion"] for e in (1, 2, 3)]
    assert log.prompts[0].texts["inspect_fake-b"] == tuple(q1)


def test_inspect_json_log_and_missing_prompts_are_noted():
    log = load_eval_log([FIXTURES / "inspect_fake-a.eval", FIXTURES / "inspect_fake-b.json"], fmt="inspect",
                        arms=["a", "b"])
    data = json.loads((FIXTURES / "inspect_fake-b.json").read_text())
    assert Counter(s["id"] for s in data["samples"]) == {"q1": 2, "q2": 2}  # --limit 2 --epochs 2
    assert counts(log) == {"q1": {"a": 3, "b": 2}, "q2": {"a": 3, "b": 2}, "q3": {"a": 2, "b": 0},
                           "q4": {"a": 3, "b": 0}}
    assert any("arm 'b' has no output for 2 prompt(s) (q3, q4)" in n for n in log.notes)


def test_inspect_zstandard_log_is_read_or_refused_with_the_way_out():
    path = FIXTURES / "inspect_zstd.eval"
    try:
        import zstandard  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match=r"inspect_zstd\.eval: compressed with Zstandard.*pip install zstandard"
                                             r".*inspect log convert"):
            load_eval_log([path, FIXTURES / "inspect_fake-b.json"], fmt="inspect")
        return
    log = load_eval_log([path, FIXTURES / "inspect_fake-b.json"], fmt="inspect")
    assert counts(log)["q1"] == {"inspect_zstd": 2, "inspect_fake-b": 2}


# ------------------------------------------------------------------------------------------ plain JSONL
def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_jsonl_one_file_of_two_arms_and_files_per_arm(tmp_path):
    path = write_jsonl(tmp_path / "outputs.jsonl", [
        {"prompt": "p1", "arm": "baseline", "text": "a"}, {"prompt": "p1", "arm": "candidate", "text": "b"},
        {"prompt": "p1", "arm": "baseline", "text": "c"}, {"prompt": "p2", "arm": "candidate", "text": ""},
        {"prompt": "p2", "arm": "baseline", "text": None}, {"prompt": "p2", "arm": "candidate", "text": "d",
                                                            "error": None},
        {"prompt": "p2", "arm": "candidate", "text": None, "error": "timeout"},
        {"prompt": "same words", "prompt_id": 7, "arm": "baseline", "text": "e"}])
    log = load_eval_log([path], fmt="jsonl")
    assert log.arms == ("baseline", "candidate")
    assert counts(log) == {"p1": {"baseline": 2, "candidate": 1}, "p2": {"baseline": 0, "candidate": 1},
                           "7": {"baseline": 1, "candidate": 0}}
    assert log.prompts[0].texts["baseline"] == ("a", "c") and log.skipped == 3
    first = write_jsonl(tmp_path / "before.jsonl", [{"prompt": "p1", "text": "a"}, {"prompt": "p1", "text": "b"}])
    second = write_jsonl(tmp_path / "after.jsonl", [{"prompt": "p1", "text": "c"}])
    assert counts(load_eval_log([first, second], fmt="jsonl")) == {"p1": {"before": 2, "after": 1}}


# ------------------------------------------------------------------------------------------ malformed
def edited(tmp_path: Path, name: str, edit) -> Path:
    data = json.loads((FIXTURES / name).read_text())
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("edit", "match"), [
    (lambda d: [d["results"]["results"][2].pop(key) for key in ("vars", "testCase")], r"row 3 \(results\.results\[2\]\): `vars` is missing"),
    (lambda d: d["results"]["results"][3]["response"].update(output=42),
     r"row 4 \(results\.results\[3\]\): `response\.output` must be a text; got int 42"),
    (lambda d: d["results"]["results"][0]["response"].pop("output"), r"row 1 .*no `response\.output` and no `error`"),
    (lambda d: d["results"].pop("results"), r"no `results\.results` list"),
])
def test_promptfoo_malformed_rows_are_refused_naming_file_and_row(tmp_path, edit, match):
    path = edited(tmp_path, "promptfoo_providers.json", edit)
    with pytest.raises(ValueError, match=r"^promptfoo_providers\.json.*" + match) as error:
        load_eval_log([path], fmt="promptfoo")
    assert "\n" not in str(error.value) and "give the file" in str(error.value).lower()


def test_truncated_files_are_refused(tmp_path):
    text = (FIXTURES / "promptfoo_providers.json").read_text()
    (tmp_path / "results.json").write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"^results\.json: not valid JSON .*unedited"):
        load_eval_log([tmp_path / "results.json"], fmt="promptfoo")
    lines = (FIXTURES / "lm_eval_fake-a.jsonl").read_text().splitlines()
    (tmp_path / "a.jsonl").write_text(lines[0] + "\n" + lines[1][:200] + "\n")
    with pytest.raises(ValueError, match=r"^a\.jsonl, line 2: not valid JSON .*truncated file"):
        load_eval_log([tmp_path / "a.jsonl", FIXTURES / "lm_eval_fake-b.jsonl"], fmt="lm-eval")
    data = (FIXTURES / "inspect_fake-a.eval").read_bytes()
    (tmp_path / "cut.eval").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"^cut\.eval: not a readable \.eval zip"):
        load_eval_log([tmp_path / "cut.eval", FIXTURES / "inspect_fake-b.eval"], fmt="inspect")


def test_lm_eval_wrong_types_are_refused(tmp_path):
    lines = [json.loads(line) for line in (FIXTURES / "lm_eval_fake-a.jsonl").read_text().splitlines()]
    for number, change, match in [(2, {"resps": "not a list"}, "`resps` must be a list of lists"),
                                  (3, {"doc_id": None}, "`doc_id` is missing"),
                                  (1, {"resps": [[["-1.5", "False"]]]}, "is a log-likelihood, not a generation"),
                                  (4, {"resps": [["ok", 3]]}, r"\(resps\[0\]\[1\]\): `resps` must be a text")]:
        rows = [row | change if i == number else row for i, row in enumerate(lines, start=1)]
        write_jsonl(tmp_path / "run.jsonl", rows)
        with pytest.raises(ValueError, match=rf"^run\.jsonl, line {number}.*{match}"):
            load_eval_log([tmp_path / "run.jsonl", FIXTURES / "lm_eval_fake-b.jsonl"], fmt="lm-eval")


def test_inspect_malformed_samples_are_refused(tmp_path):
    with zipfile.ZipFile(FIXTURES / "inspect_fake-a.eval") as source, \
            zipfile.ZipFile(tmp_path / "a.eval", "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == "samples/q2_epoch_2.json":
                content = json.dumps(json.loads(content) | {"output": {"choices": "oops"}}).encode()
            target.writestr(info.filename, content)
    with pytest.raises(ValueError, match=r"^a\.eval, samples/q2_epoch_2\.json \(sample q2, epoch 2\): "
                                         r"`output\.choices` must be a list"):
        load_eval_log([tmp_path / "a.eval", FIXTURES / "inspect_fake-b.eval"], fmt="inspect")
    path = edited(tmp_path, "inspect_fake-b.json", lambda d: d["samples"][1].pop("id"))
    with pytest.raises(ValueError, match=r"^inspect_fake-b\.json, samples\[1\]: `id` is missing"):
        load_eval_log([FIXTURES / "inspect_fake-a.eval", path], fmt="inspect")
    path = edited(tmp_path, "inspect_fake-b.json", lambda d: d["samples"][1].update(id="q1", epoch=1))
    with pytest.raises(ValueError, match=r"samples\[1\] \(sample q1, epoch 1\): appears twice"):
        load_eval_log([FIXTURES / "inspect_fake-a.eval", path], fmt="inspect")
    path = edited(tmp_path, "inspect_fake-b.json", lambda d: d.update(status="cancelled"))
    log = load_eval_log([FIXTURES / "inspect_fake-a.eval", path], fmt="inspect")
    assert any("the eval's status is 'cancelled'" in n for n in log.notes)


def test_jsonl_malformed_lines_and_unknown_arm(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"prompt": "p1", "arm": "baseline", "text": "a"},
                                              {"prompt": "p1", "arm": "candidate", "text": "b"},
                                              {"prompt": "p2", "arm": "candidat", "text": "d"}])
    with pytest.raises(ValueError, match=r"x\.jsonl: no arm 'treated'; the arms found are 'baseline', "
                                         r"'candidate', 'candidat'"):
        load_eval_log([path], fmt="jsonl", arms=["baseline", "treated"])
    log = load_eval_log([path], fmt="jsonl", arms=["baseline", "candidate"])
    assert any("1 row(s) of arms other than baseline, candidate left out" in n for n in log.notes)
    for row, match in [({"arm": "a", "text": "t"}, "line 1: `prompt` is missing"),
                       ({"prompt": "p", "text": "t"}, "line 1: no `arm`"),
                       ({"prompt": "p", "arm": "a"}, "line 1: `text` is missing"),
                       ({"prompt": "p", "arm": "a", "text": ["t"]}, "line 1: `text` must be a text; got list")]:
        write_jsonl(tmp_path / "x.jsonl", [row])
        with pytest.raises(ValueError, match=r"^x\.jsonl, " + match):
            load_eval_log([path], fmt="jsonl")


# ------------------------------------------------------------------------------------------ bounds and arguments
def test_paths_and_sizes_are_checked_before_reading(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="file not found"):
        load_eval_log([tmp_path / "none.json"], fmt="promptfoo")
    with pytest.raises(ValueError, match="not a regular file"):
        load_eval_log([tmp_path], fmt="promptfoo")
    with pytest.raises(ValueError, match="not a regular file"):
        load_eval_log(["/dev/zero"], fmt="jsonl")
    from dbpa_core.data.eval_logs import _rows

    monkeypatch.setattr(_rows, "MAX_LOG_BYTES", 10_000)  # where check_file reads the bound
    with pytest.raises(ValueError, match=r"promptfoo_providers\.json: 0 MB, over the limit.*split the run"):
        load_eval_log([FIXTURES / "promptfoo_providers.json"], fmt="promptfoo")


def test_arguments_are_validated():
    path = FIXTURES / "promptfoo_providers.json"
    with pytest.raises(ValueError, match="`fmt` must be one of promptfoo, lm-eval, inspect, jsonl"):
        load_eval_log([path], fmt="csv")
    with pytest.raises(ValueError, match="`arms` must name at least two arms"):
        load_eval_log([path], fmt="promptfoo", arms=["baseline"])
    with pytest.raises(ValueError, match="`arms` names an arm twice"):
        load_eval_log([path], fmt="promptfoo", arms=["baseline", "baseline"])
    with pytest.raises(ValueError, match="2 files are 2 arms, one per file, but 3 names"):
        load_eval_log([FIXTURES / "lm_eval_fake-a.jsonl", FIXTURES / "lm_eval_fake-b.jsonl"], fmt="lm-eval",
                      arms=["a", "b", "c"])
    with pytest.raises(ValueError, match="names one file twice"):
        load_eval_log([path, path], fmt="promptfoo")


def test_messages_never_show_a_secret(tmp_path):
    secret = "sk-proj-" + "A1b2C3d4" * 4
    path = edited(tmp_path, "promptfoo_providers.json",
                  lambda d: d["results"]["results"][1].update(provider={"id": f"openai:chat?api_key={secret}"}))
    with pytest.raises(ValueError, match="gpt-5") as error:
        load_eval_log([path], fmt="promptfoo", arms=["baseline", "gpt-5"])
    assert secret not in str(error.value) and "REDACTED" in str(error.value)
    path = edited(tmp_path, "promptfoo_providers.json",
                  lambda d: d["results"]["results"][1].update(error=f"401: bad key {secret}"))
    log = load_eval_log([path], fmt="promptfoo")
    assert log.skipped == 3 and secret not in " ".join(log.notes)


def test_results_are_frozen():
    log = load_eval_log([FIXTURES / "promptfoo_providers.json"], fmt="promptfoo")
    assert isinstance(log.prompts[0], PromptSamples)
    with pytest.raises(AttributeError):
        log.skipped = 0
