"""Parsing: deeply nested or recursive YAML/JSON is bad input (exit 2, one line), never a crash or a hang;
SPEC errors name the key and its line without echoing the value written there."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import assert_clean, cli, snapshot, write_jsonl, write_spec

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join(['*' + prev] * 10)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi")) + "perturbations: [*i]\n"

SPEC_FILES = {
    "flow nesting 100 000 deep": "[" * 100_000 + "]" * 100_000,
    "block nesting 200 deep": "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n",
    "billion laughs": LAUGHS,
    "recursive alias": "sampler: &s {backend: simulated, extra: *s}\n",
    "merge key": "base: &b {backend: simulated}\nsampler: {<<: *b}\n",
    "2 MB file": "# " + "x" * (2 * 2**20) + "\n",
    "not UTF-8": b"name: \xff\xfe\n",
    "a python tag": "sampler: !!python/object/apply:os.system ['echo hi']\n",
    "a list, not a mapping": "- a\n- b\n",
    "tab indentation": "sampler:\n\tbackend: simulated\n",
}


@pytest.mark.parametrize("case", SPEC_FILES, ids=SPEC_FILES)
def test_malformed_spec_files_are_one_line_errors(tmp_path, case):
    content = SPEC_FILES[case]
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = snapshot(tmp_path)
    started = time.monotonic()
    outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite"), 2)
    assert time.monotonic() - started < 10
    assert "spec.yaml" in outcome.error
    assert snapshot(tmp_path) == before


def test_a_spec_that_is_a_folder(tmp_path):
    (tmp_path / "spec.yaml").mkdir()
    assert "is a folder" in assert_clean(cli("audit", tmp_path / "spec.yaml"), 2).error


# (the SPEC, the key the error names, its line in the file, a value that must not be echoed)
KEY_ERRORS = {
    "wrong type": ("name: t\nscenario: seasons_question\nk: twenty-ish\n", "`k`", 3, "twenty-ish"),
    "nested key": ("scenario: seasons_question\nsampler:\n  backend: simulated\n  temperature: very-hot\n",
                   "`sampler.temperature`", 4, "very-hot"),
    "unknown perturbation": ("scenario: seasons_question\nperturbations:\n  - paraphrase_1\n  - my-own-idea\n",
                             "`perturbations[1]`", 4, "my-own-idea"),
    "list item key": ("prompts:\n  original: {prompt: hi}\n  perturbations:\n    - {id: a, prompt: x, "
                      "kind: bogus-kind}\n", "`prompts.perturbations[0].kind`", 4, "bogus-kind"),
    "name a path": ("name: ../../etc/cron.d/x\nscenario: seasons_question\n", "`name`", 1, "cron"),
    "unknown key": ("scenario: seasons_question\nsamplr: {backend: simulated}\n", "`samplr`", 2, None),
    "base_url scheme": ("scenario: seasons_question\nsampler: {backend: openai, model: m, base_url: "
                        "ftp://files.internal.example/v1}\n", "`sampler.base_url`", 2, "files.internal"),
    "explain": ("scenario: seasons_question\nexplain: sometimes-maybe\n", "`explain`", 2, "sometimes-maybe"),
    "duplicate id": ("prompts:\n  original: {prompt: hi}\n  perturbations:\n    - {id: same-id-here, prompt: x}\n"
                     "    - {id: same-id-here, prompt: y}\n", "`prompts.perturbations[1].id`", 5, "same-id-here"),
}


@pytest.mark.parametrize("case", KEY_ERRORS, ids=KEY_ERRORS)
def test_spec_errors_name_the_key_and_line_without_the_value(tmp_path, case):
    text, key, line, value = KEY_ERRORS[case]
    outcome = assert_clean(cli("audit", write_spec(tmp_path, text)), 2)
    assert f"spec.yaml, line {line}: {key}" in outcome.error
    if value:
        assert value not in outcome.error


def test_a_yaml_syntax_error_names_line_and_column_without_quoting_it(tmp_path):
    outcome = assert_clean(cli("audit", write_spec(tmp_path, "name: t\nscenario: [unclosed, list\nk: 3\n")), 2)
    assert "spec.yaml, line 3, column" in outcome.error and "not valid YAML" in outcome.error
    assert "unclosed" not in outcome.error


# ----------------------------------------------------------------------------- sample files
SAMPLE_FILES = {
    "JSONL nested 100 000 deep": ("a.jsonl", b'{"text": "ok"}\n' + b"[" * 100_000 + b"]" * 100_000 + b"\n",
                                  "line 2: nested too deeply"),
    "JSON array nested deep": ("a.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "embedding string nested deep": ("a.jsonl", (json.dumps({"text": "t", "embedding": "[" * 50_000 + "]" * 50_000})
                                                 + "\n").encode(), "`embedding` must be a JSON list"),
    # the csv module's field limit is raised to 2 MB (a cell holds at most a 1 MB completion); past it, refused
    "CSV field over the csv limit": ("a.csv", b'text\n"' + b"x" * (2**21 + 1) + b'"\n', "row 2: not readable as CSV"),
    "CSV unclosed quote": ("a.csv", b'text\n"never closed\nmore\n' + b"y" * 140_000, "row 2: a quote"),
    "embedding with a 400-digit number": ("a.jsonl", b'{"text": "t", "embedding": [' + b"9" * 400 + b', 1]}\n',
                                          "`embedding`"),
    "embedding of 20 000 numbers": ("a.jsonl", (json.dumps({"text": "t", "embedding": [0.5] * 20_000}) + "\n")
                                    .encode(), "at most 16,384"),
    "text with a lone surrogate": ("a.jsonl", b'{"text": "half \\ud800"}\n{"text": "b"}\n', "lone surrogate"),
    "JSON number text": ("a.jsonl", b'{"text": 12}\n{"text": "b"}\n', "`text` must be a string"),
}


@pytest.mark.parametrize("case", SAMPLE_FILES, ids=SAMPLE_FILES)
def test_malformed_sample_files_are_one_line_errors(tmp_path, case):
    name, content, match = SAMPLE_FILES[case]
    (tmp_path / name).write_bytes(content)
    other = write_jsonl(tmp_path / "b.jsonl", [{"text": "x"}, {"text": "y"}])
    outcome = assert_clean(cli("test", tmp_path / name, other), 2)
    assert match in outcome.error and name in outcome.error


def test_a_scenario_file_is_read_with_the_same_strict_reader(tmp_path):
    from dbpa_core.data.scenarios import ScenarioError, load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(LAUGHS)
    with pytest.raises(ScenarioError, match="anchors and aliases"):
        load_scenario(path)
