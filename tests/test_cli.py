"""Tests of the command line (python -m dbpa_core), the SPEC and the reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import sqlite3

import jsonschema
import pytest
import yaml

from dbpa_core.__main__ import main
from dbpa_core.audit import run_audit
from dbpa_core.present.records import SCHEMA_PATH
from dbpa_core.samplers import SamplingCancelled
from dbpa_core.samplers.simulated import SimulatedSampler
from dbpa_core.audit.spec import parse_spec
from dbpa_core.data.store import SampleStore
from servers import CHROMIUM, Reply, chat_completion, free_port, misbehaving_server

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def write_spec(tmp_path, **overrides):
    spec = {"name": "t", "sampler": {"backend": "simulated"}, "scenario": "seasons_question",
            "perturbations": ["paraphrase_1", "mars"], "k": 12, "n_resamples": 200, "discrepancy": "energy",
            "seed": 0, **overrides}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True))
    return path


def test_audit_simulated_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    out = tmp_path / "out"
    code = main(["audit", str(write_spec(tmp_path)), "--out", str(out)])
    assert code == 0
    record = json.loads((out / "report.json").read_text())
    jsonschema.validate(record, SCHEMA)
    by_id = {p["id"]: p for p in record["perturbations"]}
    assert by_id["mars"]["reject"] and not by_id["paraphrase_1"]["reject"]
    assert len(by_id["mars"]["sample_ids"]) == 12 and record["versions"]["numpy"]
    assert (out / "results.csv").read_text().splitlines()[0].startswith("perturbation,kind")
    # results.csv read on its own says what produced it: report.json's settings after the table's columns
    from test_exports import read_csv

    read, settings = read_csv((out / "results.csv").read_bytes()), record["settings"]
    assert (settings["k"], settings["n_resamples"], settings["seed"]) == (12, 200, 0)
    for column, key in [("samples per arm k", "k"), ("permutations B", "n_resamples"), ("seed", "seed"),
                        ("alpha", "alpha"), ("correction", "correction"), ("discrepancy ω", "discrepancy")]:
        assert set(read[column]) == {settings[key]}, (column, set(read[column]), settings[key])
    assert "<script" in (out / "report.html").read_text()
    # --fail-on-change turns the detected change into exit code 1 (CI gate)
    assert main(["audit", str(write_spec(tmp_path)), "--out", str(out), "--fail-on-change"]) == 1
    only_controls = write_spec(tmp_path, perturbations=["paraphrase_1", "typo"])
    assert main(["audit", str(only_controls), "--out", str(out), "--fail-on-change"]) == 0


def test_audit_on_recorded_samples_as_a_subprocess(tmp_path):
    spec = write_spec(tmp_path, sampler={"backend": "recorded"}, scenario="cvd_nice",
                      perturbations=["persona_doctor", "persona_child"], k=20, discrepancy="jsd")
    result = subprocess.run([sys.executable, "-m", "dbpa_core", "audit", str(spec), "--out", str(tmp_path / "o"),
                             "--store", str(tmp_path / "s.sqlite")], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "20/20 sampling original" in result.stderr  # the progress bar
    record = json.loads((tmp_path / "o" / "report.json").read_text())
    jsonschema.validate(record, SCHEMA)
    assert record["original"]["model"].endswith(".gguf")


def test_interrupted_audit_resumes_without_drawing_twice(tmp_path, monkeypatch, minilm):
    calls = []
    original_complete = SimulatedSampler.complete

    def counting(self, prompt, **kwargs):
        calls.append((prompt, kwargs["seed"], kwargs["index"]))
        return original_complete(self, prompt, **kwargs)

    monkeypatch.setattr(SimulatedSampler, "complete", counting)
    spec = parse_spec(yaml.safe_load(write_spec(tmp_path).read_text()))
    store = SampleStore(tmp_path / "store.sqlite")
    seen = []

    def stop_in_second_arm(update):
        seen.append(update.text)
        return not (update.stage == "sampling" and update.label != "original" and update.done == 5)

    with pytest.raises(SamplingCancelled):
        run_audit(spec, store=store, progress=stop_in_second_arm)
    drawn_before = len(calls)
    assert drawn_before == 12 + 5
    family = run_audit(spec, store=store)
    assert len(calls) == 12 * 3  # original + two perturbed arms, each sample drawn exactly once
    assert len(set(calls)) == len(calls)
    assert all(len(r.perturbed.texts) == 12 for r in family.results)


def test_two_file_test(tmp_path, capsys, persona_arms):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.csv"
    a.write_text("\n".join(json.dumps({"text": f"Stop smoking and take a statin, advice {i}."}) for i in range(10)))
    b.write_text("text\n" + "\n".join(f"Why did the chicken cross the road? Joke number {i}." for i in range(10)))
    out = tmp_path / "r.json"
    assert main(["test", str(a), str(b), "--json", str(out), "--n-resamples", "500", "--fail-on-change"]) == 1
    assert "REJECT" not in capsys.readouterr().err
    record = json.loads(out.read_text())
    assert record["pvalue"] < 0.05 and record["n_original"] == 10
    # two halves of one real arm: no change to detect
    first, second = tmp_path / "doctor_1.jsonl", tmp_path / "doctor_2.jsonl"
    first.write_text("\n".join(json.dumps({"text": t}) for t in persona_arms["doctor"][:10]))
    second.write_text("\n".join(json.dumps({"text": t}) for t in persona_arms["doctor"][10:]))
    assert main(["test", str(first), str(second), "--fail-on-change", "--similarity", "rouge_l"]) == 0
    # names are normalised where they enter: "ROUGE_L" is the text similarity, on the texts
    assert main(["test", str(first), str(second), "--similarity", "ROUGE_L", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["similarity"] == "rouge_l"


def test_precomputed_embeddings_in_files(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("\n".join(json.dumps({"text": "", "embedding": [1.0, 0.1 * i]}) for i in range(8)))
    b.write_text("\n".join(json.dumps({"text": "", "embedding": [0.1 * i, 1.0]}) for i in range(8)))
    assert main(["test", str(a), str(b), "--fail-on-change"]) == 1


def test_literal_prompts_spec(tmp_path, monkeypatch):
    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    spec = {"prompts": {"original": {"prompt": "How do I bake {sourdough} bread?"},
                        "perturbations": [{"id": "terse", "kind": "target", "prompt": "How do I bake bread?",
                                           "system": "Answer in five words."}]},
            "k": 8, "n_resamples": 100}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["audit", str(path), "--out", str(tmp_path / "o")]) == 0
    record = json.loads((tmp_path / "o" / "report.json").read_text())
    assert record["original"]["prompt"] == "How do I bake {sourdough} bread?"
    assert record["perturbations"][0]["system"] == "Answer in five words."
    jsonschema.validate(record, SCHEMA)


def test_html_report_renders_offline(tmp_path, monkeypatch):
    """Open the report in headless Chromium with the network off: the figures must draw."""
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    assert main(["audit", str(write_spec(tmp_path)), "--out", str(tmp_path / "o")]) == 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        context = browser.new_context(offline=True)
        page = context.new_page()
        page.goto((tmp_path / "o" / "report.html").as_uri())
        page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
        assert page.locator(".js-plotly-plot").count() == 3  # ω bars + one null per perturbation
        verdicts = page.locator(".verdict")  # the decision first, then the simulated backend's synthetic note
        assert "1 of 2 perturbations is declared to change" in verdicts.first.inner_text()
        assert "Synthetic outputs" in verdicts.nth(1).inner_text()
        (REPO / "test-artifacts" / "screenshots").mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(REPO / "test-artifacts" / "screenshots" / "html_report.png"), full_page=True)
        browser.close()


def test_missing_and_broken_spec_files(tmp_path, capsys):
    assert main(["audit", str(tmp_path / "nope.yaml")]) == 2
    assert "file not found" in capsys.readouterr().err
    broken = tmp_path / "broken.yaml"
    broken.write_text("k: [1,")
    assert main(["audit", str(broken)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


# ------------------------------------------------------------------ failures: exit 2 (bad input) or 3 (could not finish)
def openai_spec(tmp_path, url, **overrides):
    return write_spec(tmp_path, sampler={"backend": "openai", "model": "m", "base_url": url, "max_retries": 1,
                                         "timeout": 5}, **overrides)


def test_a_failing_api_exits_3_with_one_paragraph_and_no_traceback(tmp_path):
    with misbehaving_server(lambda n, r: Reply({"error": {"message": "boom"}}, status=500)) as (url, requests):
        result = subprocess.run([sys.executable, "-m", "dbpa_core", "audit", str(openai_spec(tmp_path, url)),
                                 "--out", str(tmp_path / "o"), "--store", str(tmp_path / "s.sqlite"),
                                 "--fail-on-change"], capture_output=True, text=True, timeout=300,
                                env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert result.returncode == 3, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert f"error: the run could not finish: {url}/chat/completions: HTTP 500: server error after 2 attempts" \
        in result.stderr
    assert "0 of 12 samples of this arm are kept in the store" in result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("misbehaviour", ["dead", "null", "html"])
def test_dead_or_broken_apis_exit_3(tmp_path, capsys, misbehaviour):
    if misbehaviour == "dead":
        url, expected = f"http://127.0.0.1:{free_port()}/v1", "connection refused"
        code = main(["audit", str(openai_spec(tmp_path, url)), "--store", str(tmp_path / "s.sqlite"),
                     "--out", str(tmp_path / "o")])
    else:
        reply = (Reply(chat_completion(None)) if misbehaviour == "null"
                 else Reply(b"<!doctype html><title>Login</title>", content_type="text/html"))
        expected = "came back empty (or null) 3 time(s) and was refused" if misbehaviour == "null" else "not JSON"
        with misbehaving_server(lambda n, r: reply) as (url, _):
            code = main(["audit", str(openai_spec(tmp_path, url)), "--store", str(tmp_path / "s.sqlite"),
                         "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 3 and expected in err and url in err
    with sqlite3.connect(tmp_path / "s.sqlite") as connection:
        assert connection.execute("SELECT COUNT(*) FROM samples").fetchone() == (0,)


def test_bad_paths_exit_2_before_any_work(tmp_path, capsys):
    spec = str(write_spec(tmp_path))
    a_file = tmp_path / "taken.txt"
    a_file.write_text("not a folder and not a database")
    cases = [
        (["audit", spec, "--out", str(a_file)], "`--out`: " + str(a_file) + " is a file"),
        (["audit", spec, "--out", str(a_file / "sub")], "`--out`: " + str(a_file) + " is a file"),
        (["audit", spec, "--store", str(tmp_path)], f"`--store`: {tmp_path} is a folder"),
        (["audit", spec, "--store", str(a_file)], f"`--store`: {a_file} is not a sample store"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err
    assert a_file.read_text() == "not a folder and not a database"  # never overwritten


def test_two_file_test_bad_arguments(tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("\n".join(json.dumps({"text": f"answer {i}", "embedding": [1.0, 0.1 * i]}) for i in range(6)))
    b.write_text("\n".join(json.dumps({"text": f"other {i}", "embedding": [0.1 * i, 1.0]}) for i in range(6)))
    cases = [
        (["--alpha", "2"], "`--alpha` must lie in (0, 1); got 2.0"),
        (["--alpha", "0"], "`--alpha` must lie in (0, 1)"),
        (["--n-resamples", str(10**11)], "`--n-resamples` must be an integer >= 1 and <= 1,000,000"),
        (["--json", str(tmp_path / "missing" / "r.json")], f"the folder {tmp_path / 'missing'} does not exist"),
        (["--json", str(tmp_path)], f"`--json`: {tmp_path} is a folder"),
    ]
    for extra, message in cases:
        assert main(["test", str(a), str(b), *extra]) == 2, extra
        assert message in capsys.readouterr().err
    # the disk is full: the run could not finish (3), not bad input
    assert main(["test", str(a), str(b), "--json", "/dev/full"]) == 3
    assert "the disk is full: cannot write /dev/full (No space left on device)" in capsys.readouterr().err


def test_two_file_test_refuses_data_it_would_change(tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    b.write_text("\n".join(json.dumps({"text": f"fine {i}"}) for i in range(5)))
    for value, kind in [(3, "int"), (True, "bool"), (["x"], "list"), (None, "NoneType")]:
        rows = [{"text": "ok"}, {"text": "ok too"}, {"text": value}]
        a.write_text("\n".join(json.dumps(r) for r in rows))
        if value is None:
            continue  # a missing text is reported as a missing column (below)
        assert main(["test", str(a), str(b)]) == 2
        assert f"a.jsonl, line 3: `text` must be a string; got {kind}" in capsys.readouterr().err
    a.write_text('{"text": "ok"}\n{"text": NaN}\n')
    assert main(["test", str(a), str(b)]) == 2
    assert "a.jsonl, line 2: `text` must be a string; got float nan" in capsys.readouterr().err
    # embeddings for one arm only: refused, never silently replaced by MiniLM embeddings of the texts
    a.write_text("\n".join(json.dumps({"text": f"t{i}", "embedding": [1.0, i]}) for i in range(5)))
    assert main(["test", str(a), str(b)]) == 2
    assert "a.jsonl has an `embedding` column but" in capsys.readouterr().err
    # huge norms would overflow into "identical outputs, p = 1"
    a.write_text("\n".join(json.dumps({"text": "", "embedding": [1e160, 1e160 * (i + 1)]}) for i in range(5)))
    b.write_text("\n".join(json.dumps({"text": "", "embedding": [1.0, i]}) for i in range(5)))
    assert main(["test", str(a), str(b)]) == 2
    assert "`x` row 0 has a norm too large to compute" in capsys.readouterr().err


def test_empty_outputs_in_files_are_kept_with_a_warning(tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("\n".join(json.dumps({"text": "" if i < 2 else f"answer number {i}"}) for i in range(8)))
    b.write_text("\n".join(json.dumps({"text": f"answer number {i}"}) for i in range(8)))
    out = tmp_path / "r.json"
    assert main(["test", str(a), str(b), "--similarity", "rouge_l", "--json", str(out)]) == 0
    assert "warning: a.jsonl: 2 empty text(s) (2 of 8 in arm 'a') are kept as outputs" in capsys.readouterr().err
    assert json.loads(out.read_text())["n_original"] == 8


def test_a_file_without_end_is_refused_without_filling_memory(capsys):
    import tracemalloc

    from dbpa_core.data.uploads import MAX_BYTES

    tracemalloc.start()
    try:
        assert main(["test", "/dev/zero", "/dev/zero"]) == 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # refused by its kind before it is opened (a device is never read), and so without filling memory
    assert "/dev/zero is a character device, not a regular file" in capsys.readouterr().err
    assert peak < 3 * MAX_BYTES


def test_plan_from_two_pilot_files(tmp_path, capsys):
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    x, y = rng.standard_normal((20, 6)) * 0.3, rng.standard_normal((20, 6)) * 0.3
    x[:, 0] += 2
    y[:, 0] += 2
    y[:, 1] += 1.5
    a.write_text("\n".join(json.dumps({"text": "", "embedding": v.tolist()}) for v in x))
    b.write_text("\n".join(json.dumps({"text": "", "embedding": v.tolist()}) for v in y))
    assert main(["plan", str(a), str(b), "--discrepancies", "jsd,energy", "--simulations", "20",
                 "--k-max", "40"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["jsd", "energy"]
    assert all(" per arm. " in line for line in out)
    # Bad input names the file and the fix, exit 2
    small = tmp_path / "small.jsonl"
    small.write_text("\n".join(json.dumps({"text": "", "embedding": [1.0, 0.1 * i]}) for i in range(3)))
    assert main(["plan", str(small), str(b)]) == 2
    assert f"{small} needs at least 5 samples" in capsys.readouterr().err
