"""`dbpa compare SPEC.yaml`: one change across many prompts sampled now (dbpa_core/requests/many.py)."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from dbpa_core.__main__ import EXIT_BAD_INPUT, EXIT_CHANGE, EXIT_OK, main
from dbpa_core.audit.spec import SpecError
from dbpa_core.data.store import SampleStore
from dbpa_core.requests.many import parse_compare_spec, run_compare_spec
from dbpa_core.data.assets import ASSETS

# Beside the log example, not in assets/specs/ (there every SPEC is an audit's or a sibling audit's).
EXAMPLE = ASSETS / "examples" / "compare_simulated.yaml"
LOG = ASSETS / "examples" / "gpt35_vs_gpt4_9_prompts.jsonl"


def test_shipped_spec_end_to_end_and_resumes(tmp_path, capsys):
    """The shipped SPEC offline from the command line: verdict, table, themes, JSON; a rerun samples nothing."""
    store, out = str(tmp_path / "store.sqlite"), tmp_path / "out.json"
    assert main(["compare", str(EXAMPLE), "--store", store, "--json", str(out), "--fail-on-change"]) == EXIT_CHANGE
    captured = capsys.readouterr()
    assert "sampling prompt 8 of 8: sleep" in captured.err
    assert "original → one-line: 8 prompts   ω (energy)" in captured.out
    record = json.loads(out.read_text())
    assert record["settings"]["from"] == "spec" and record["arms"] == ["original", "one-line"]
    assert record["change_detected"] and record["pvalue"] <= 0.05
    assert {row["prompt_id"]: row["k"]["one-line"] for row in record["per_prompt"]}["tides"] == 8  # per-prompt k
    flagged = [row for row in record["per_prompt"] if row["changed"]]
    assert flagged and all("themes" in row for row in flagged)
    # A second run reads every sample from the store and gives the same test.
    again = tmp_path / "again.json"
    assert main(["compare", str(EXAMPLE), "--store", store, "--json", str(again)]) == EXIT_OK
    assert json.loads(again.read_text())["pvalue"] == record["pvalue"]


def test_store_holds_every_sample_before_the_test(tmp_path):
    """Sampling goes through the store as outputs arrive: a rerun calls no model and gives the same outputs."""
    from dbpa_core.audit.runner import build_sampler

    spec = parse_compare_spec({"sampler": {"backend": "simulated"}, "perturbed_system": "Be brief.", "k": 3,
                               "prompts": ["Why is the sky blue?", {"prompt": "Why does bread rise?", "k": 4}]},
                              path=tmp_path / "s.yaml")
    store = SampleStore(tmp_path / "s.sqlite")
    first = run_compare_spec(spec, store=store)

    def no_model(config):
        sampler = build_sampler(config)

        def complete(*args, **kwargs):
            raise AssertionError("a stored sample was drawn again")

        sampler.complete = complete
        return sampler

    second = run_compare_spec(spec, store=store, sampler_for=no_model)
    assert second.test.pvalue == first.test.pvalue
    assert [p.texts for p in second.prompts] == [p.texts for p in first.prompts]
    assert [len(p.texts["perturbed"]) for p in first.prompts] == [3, 4]


def test_prompts_from_a_file_beside_the_spec(tmp_path):
    (tmp_path / "prompts.txt").write_text("What causes the seasons?\n\nWhy is the sky blue?\n", encoding="utf-8")
    spec = parse_compare_spec({"sampler": {"backend": "simulated"}, "perturbed_system": "Be brief.",
                               "prompts": "prompts.txt", "k": 3}, path=tmp_path / "s.yaml")
    assert [(p.prompt_id, p.k) for p in spec.prompts] == [("prompt-1", 3), ("prompt-2", 3)]
    # A JSONL log of outputs names each prompt once per output: its prompts are read once each.
    log = parse_compare_spec({"sampler": {"backend": "simulated"}, "perturbed_system": "x", "prompts": str(LOG)},
                             path=tmp_path / "s.yaml")
    assert len(log.prompts) == 9 and log.prompts[0].prompt_id == "patient"


@pytest.mark.parametrize(("spec", "message"), [
    ({"sampler": {"backend": "simulated"}}, "`prompts` is required"),
    ({"sampler": {"backend": "simulated"}, "prompts": ["a"]}, "`perturbed_sampler` or `perturbed_system` must differ"),
    ({"sampler": {"backend": "gpt"}, "prompts": ["a"]}, "`sampler.backend` must be one of"),
    ({"sampler": {"backend": "simulated"}, "perturbed_system": "x", "prompts": ["a"], "k": 1}, "`k`"),
    ({"sampler": {"backend": "simulated"}, "perturbed_system": "x", "prompts": [{"prompt": "a", "k": 1}]},
     "`prompts[0].k`"),
    ({"sampler": {"backend": "simulated"}, "perturbed_system": "x", "prompts": [{"text": "a"}]},
     "`prompts[0].text` is not a known key"),
    ({"sampler": {"backend": "simulated"}, "perturbed_system": "x", "prompts": "none.txt"}, "`prompts` names no file"),
    ({"sampler": {"backend": "simulated"}, "perturbed_system": "x", "prompts": ["a"], "fdr": 2}, "`fdr`"),
    ({"sampler": {"backend": "simulated"}, "perturbed_system": "x", "prompts": ["a"], "arms": ["a", "a"]}, "`arms`"),
    ({"sampler": {"backend": "openai", "model": "m", "api_key": "sk-abc"}, "prompts": ["a"]},
     "`sampler.api_key` must not be in a SPEC"),
    ({"sampler": {"backend": "simulated"}, "perturbed_system": "x", "prompts": ["a"], "scenario": "cvd"},
     "`scenario` is not a key of a compare SPEC"),
])
def test_bad_spec_names_the_key(tmp_path, spec, message):
    with pytest.raises(SpecError, match="^" + message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(").replace(")", r"\)")):
        parse_compare_spec(spec, path=tmp_path / "s.yaml")


def test_bad_spec_from_the_command_line_exits_2_with_its_line(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("sampler: {backend: simulated}\nperturbed_system: x\nprompts: [a]\nk: 1\n", encoding="utf-8")
    assert main(["compare", str(path), "--store", str(tmp_path / "s.sqlite")]) == EXIT_BAD_INPUT
    assert "bad.yaml, line 4: `k`" in capsys.readouterr().err
    assert main(["compare", str(LOG), "--store", str(tmp_path / "s.sqlite")]) == EXIT_BAD_INPUT
    assert "--from is required for an eval log" in capsys.readouterr().err
    assert main(["compare", str(EXAMPLE), "--arms", "a", "b"]) == EXIT_BAD_INPUT
    assert "--arms" in capsys.readouterr().err


def test_local_model_tiny_k(tmp_path, capsys):
    """SmolLM2 on the CPU through the local sampler: two prompts, k = 2 per arm, 12 tokens (well under 60 s)."""
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump({
        "sampler": {"backend": "local", "temperature": 1.0, "max_tokens": 12},
        "perturbed_system": "Answer like a pirate.", "arms": ["plain", "pirate"],
        "prompts": ["What causes the seasons?", "Why is the sky blue?"], "k": 2, "n_resamples": 50}),
        encoding="utf-8")
    started = time.perf_counter()
    out = tmp_path / "out.json"
    assert main(["compare", str(path), "--store", str(tmp_path / "s.sqlite"), "--json", str(out)]) == EXIT_OK
    seconds = time.perf_counter() - started
    record = json.loads(out.read_text())
    assert record["n_prompts"] == 2 and all(row["k"] == {"plain": 2, "pirate": 2} for row in record["per_prompt"])
    # 2 prompts × 2 outputs per arm: 3 splits each, 9 joint splits ≤ B, so p is exact and at least 1/9.
    assert record["exact"] and record["pvalue"] >= 1 / 9
    assert "No p-value can reach α = 0.05" in capsys.readouterr().out
    assert seconds < 60, seconds
