"""Tests of the command line (python -m dbpa_core), the SPEC and the reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from dbpa_core.__main__ import main
from dbpa_core.audit import run_audit
from dbpa_core.present.exports import SCHEMA_PATH
from dbpa_core.samplers import SamplingCancelled
from dbpa_core.samplers.simulated import SimulatedSampler
from dbpa_core.audit.spec import SpecError, parse_spec
from dbpa_core.data.store import SampleStore

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

    def stop_in_second_arm(stage, done, total):
        seen.append(stage)
        return not (stage.startswith("sampling") and stage != "sampling original" and done == 5)

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


def test_precomputed_embeddings_in_files(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("\n".join(json.dumps({"text": "", "embedding": [1.0, 0.1 * i]}) for i in range(8)))
    b.write_text("\n".join(json.dumps({"text": "", "embedding": [0.1 * i, 1.0]}) for i in range(8)))
    assert main(["test", str(a), str(b), "--fail-on-change"]) == 1


@pytest.mark.parametrize(("overrides", "match"), [
    ({"colour": "red"}, "`colour` is not a SPEC key; allowed:"),
    ({"k": 1}, "`k` must be an integer >= 2"),
    ({"discrepancy": "cosine"}, "`discrepancy` must be one of jsd"),
    ({"correction": "bonf"}, "`correction` must be one of bonferroni"),
    ({"similarity": "dot"}, "`similarity` must be one of"),
    ({"alpha": 2}, r"`alpha` must be a number in \(0, 1\)"),
    ({"sampler": {"backend": "gpt"}}, "`sampler.backend` must be one of simulated, recorded, local, openai"),
    ({"sampler": {"backend": "openai", "model": "m", "api_key": "sk"}}, "`sampler.api_key` must not be in a SPEC; set OPENAI_API_KEY"),
    ({"sampler": {"backend": "openai"}}, "`sampler.model` is required"),
    ({"sampler": {"backend": "simulated", "temperature": 9}}, "`sampler.temperature`"),
    ({"scenario": "mars_mission"}, "`scenario` must be one of"),
    ({"perturbations": ["nope"]}, "`perturbations` must be one of"),
    ({"embedder": {"name": "bert"}}, "`embedder.name` must be one of minilm, openai"),
    ({"prompts": {"original": {"prompt": "x"}, "perturbations": [{"prompt": "y"}]}}, "or `prompts` is required, not both"),
])
def test_bad_specs_name_the_key(tmp_path, overrides, match, capsys):
    with pytest.raises(SpecError, match=match):
        parse_spec(yaml.safe_load(write_spec(tmp_path, **overrides).read_text()))
    assert main(["audit", str(write_spec(tmp_path, **overrides))]) == 2
    assert "error: spec.yaml: `" in capsys.readouterr().err


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
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        context = browser.new_context(offline=True)
        page = context.new_page()
        page.goto((tmp_path / "o" / "report.html").as_uri())
        page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
        assert page.locator(".js-plotly-plot").count() == 3  # ω bars + one null per perturbation
        assert "1 of 2 perturbations changed" in page.locator(".verdict").inner_text()
        (REPO / "test-artifacts" / "screenshots").mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(REPO / "test-artifacts" / "screenshots" / "html_report.png"), full_page=True)
        browser.close()


def test_shipped_specs_are_valid():
    from dbpa_core.audit.spec import load_spec

    specs = list((REPO / "assets" / "specs").glob("*.yaml"))
    assert specs
    for path in specs:
        assert load_spec(path).k >= 2


def test_missing_and_broken_spec_files(tmp_path, capsys):
    assert main(["audit", str(tmp_path / "nope.yaml")]) == 2
    assert "file not found" in capsys.readouterr().err
    broken = tmp_path / "broken.yaml"
    broken.write_text("k: [1,")
    assert main(["audit", str(broken)]) == 2
    assert "not valid YAML" in capsys.readouterr().err
