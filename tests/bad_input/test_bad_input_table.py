"""The "Bad input" table of the docs (docs/reference/bad-input.md) is kept true: for each row, a case of its class is run, and its exit
code and what the user sees (the row's first quoted snippet) are the table's."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

from .conftest import SECRET, assert_clean, cli, simulated_spec, write_jsonl, write_spec

BAD_INPUT_DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "bad-input.md"


def section() -> str:
    return BAD_INPUT_DOC.read_text(encoding="utf-8")


def table_rows() -> dict[str, tuple[list[str], set[int], int]]:
    """class (the first cell up to its colon or parenthesis) → (the quoted snippets of what the user sees,
    the exit codes, the number of cases)."""
    rows = {}
    for line in section().splitlines():
        if not line.startswith("| ") or line.startswith("| class") or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert len(cells) == 4, line
        name = cells[0].split(":")[0].split(" (")[0].lower()
        snippets = [a or b for a, b in re.findall(r"``\s?(.+?)\s?``|`([^`]+)`", cells[1])]
        rows[name] = (snippets, {int(code) for code in re.findall(r"\b[0-3]\b", cells[2])}, int(cells[3]))
    return rows


#: The file of each row's cases (one file per class).
FILES = {"secrets": "test_secrets.py", "batch import": "test_batch_import.py", "sizes": "test_sizes.py",
         "text-only measures": "test_text_measures.py", "store": "test_store_files.py",
         "store or output": "test_full_disk.py", "server faults": "test_server_faults.py",
         "parsing": "test_parsing.py", "csv exports": "test_csv_injection.py",
         "statistical footguns": "test_footguns.py"}


def collected() -> Counter:
    """File name → the number of tests pytest collects from it (each parametrized case one, a Hypothesis
    test one)."""
    folder = Path(__file__).resolve().parent
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             str(folder)], capture_output=True, text=True, timeout=300, cwd=folder.parents[1])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return Counter(Path(line.split("::")[0]).name for line in result.stdout.splitlines() if "::" in line)


def openai_spec(tmp_path, url, **overrides):
    return write_spec(tmp_path, simulated_spec(sampler={"backend": "openai", "model": "m", "base_url": url,
                                                        "max_retries": 0}, **overrides))


# --------------------------------------------------------------------------- one case per row
def secrets(tmp_path):
    from servers import Reply, misbehaving_server

    spec = write_spec(tmp_path, simulated_spec(sampler={"backend": "openai", "model": SECRET,
                                                        "base_url": "http://127.0.0.1:9/v1"}))
    refused = cli("audit", spec)
    echo = Reply({"error": {"message": f"Incorrect API key provided: {SECRET}"}}, status=401)
    with misbehaving_server(lambda n, r: echo) as (url, _):
        return [refused, cli("audit", openai_spec(tmp_path, url), "--store", tmp_path / "s.sqlite")]


def batch(tmp_path):
    from dbpa_core.audit.batch import export_requests
    from dbpa_core.audit.spec import load_spec
    from dbpa_core.data.store import SampleStore

    spec = openai_spec(tmp_path, "http://127.0.0.1:9/v1", k=2)
    store = SampleStore(tmp_path / "s.sqlite")
    ids = [r.custom_id for r in export_requests(load_spec(spec), store=store).requests]
    line = {"custom_id": None, "error": None, "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "an answer"}}]}}}
    rows = [{**line, "custom_id": ids[0]}, {**line, "custom_id": ids[1]},
            {**line, "custom_id": ids[0].rpartition("-")[0] + "-2"}]
    results = write_jsonl(tmp_path / "results.jsonl", rows)
    return [cli("batch", "import", results, "--spec", spec, "--store", store.path)]


def sizes(tmp_path):
    return [cli("audit", write_spec(tmp_path, simulated_spec(k=10**6)))]


def text(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", ({"embedding": [1.0, 0.1 * i]} for i in range(4)))
    return [cli("test", a, a, "--similarity", "bleu")]


def store(tmp_path):
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as connection, connection:
        connection.execute("CREATE TABLE contacts (name TEXT)")
    return [cli("audit", write_spec(tmp_path, simulated_spec()), "--store", other)]


def store_full(tmp_path, monkeypatch):
    from dbpa_core.data.store import SampleStore

    connect = SampleStore._connect

    def full(self):
        connection = connect(self)
        connection.execute("PRAGMA max_page_count = 1")
        return connection

    monkeypatch.setattr(SampleStore, "_connect", full)
    return [cli("audit", write_spec(tmp_path, simulated_spec()), "--store", tmp_path / "new.sqlite")]


def server(tmp_path):
    from servers import Reply, misbehaving_server

    with misbehaving_server(lambda n, r: Reply(b"<html>proxy login</html>", content_type="text/html")) as (url, _):
        return [cli("audit", openai_spec(tmp_path, url), "--store", tmp_path / "s.sqlite")]


def parsing(tmp_path):
    spec = "scenario: seasons_question\nsampler:\n  backend: simulated\n  temperature: very-hot\n"
    return [cli("audit", write_spec(tmp_path, spec))]


def csv_exports(tmp_path):
    spec = {"name": "t", "sampler": {"backend": "simulated"}, "k": 4, "n_resamples": 20, "discrepancy": "energy",
            "prompts": {"original": {"prompt": "What causes the seasons?"},
                        "perturbations": [{"id": "p", "label": "=1+1", "prompt": "Why seasons?"}]}}
    outcome = cli("audit", write_spec(tmp_path, spec), "--out", tmp_path / "o", "--store", tmp_path / "s.sqlite")
    outcome.out += (tmp_path / "o" / "results.csv").read_text()
    return [outcome]


def footguns(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", ({"text": f"a{i}", "embedding": [1.0, 0.1 * i]} for i in range(8)))
    return [cli("test", a, a, "--n-resamples", 5)]


CASES = {"secrets": secrets, "batch import": batch, "sizes": sizes, "text-only measures": text, "store": store,
         "store or output": store_full, "server faults": server, "parsing": parsing, "csv exports": csv_exports,
         "statistical footguns": footguns}


def test_every_row_has_a_case_and_every_case_a_row():
    assert set(table_rows()) == set(CASES) == set(FILES)


def test_the_counts_of_cases_are_the_suites():
    """Each row's *cases* is what its file holds, and the sentence under the table counts the app's pages."""
    counts = collected()
    assert {name: row[2] for name, row in table_rows().items()} == {name: counts[f] for name, f in FILES.items()}
    app = re.search(r"The app's pages have (\d+) cases", section())
    assert app and int(app.group(1)) == counts["test_app_pages.py"] > 0
    # test_round_three.py: round three's classes (ownership, the output path, type before open, strict parsing,
    # exit codes), counted apart until the table gets their rows
    # test_round_four.py: the damaged store row and the over-long path (docs/reference/bad-input.md, round four)
    assert set(counts) <= {*FILES.values(), "test_app_pages.py", "test_bad_input_table.py", "test_round_three.py",
                           "test_round_four.py"}


@pytest.mark.parametrize("name", CASES, ids=CASES)
def test_the_row_is_what_a_user_sees(tmp_path, monkeypatch, name):
    snippets, codes, _ = table_rows()[name]
    case = CASES[name]
    outcomes = case(tmp_path, monkeypatch) if case is store_full else case(tmp_path)
    assert {outcome.code for outcome in outcomes} <= codes, (name, [o.text[-500:] for o in outcomes])
    for outcome in outcomes:
        assert_clean(outcome, outcome.code, one_error=name != "batch import")
        if name == "server faults":  # the row shows the shape: `error: the run could not finish: URL: reason. fix`
            assert re.search(r"error: the run could not finish: http://127\.0\.0\.1:\d+/v1/chat/completions: .+\. ",
                             outcome.err)
        elif name == "csv exports":
            assert "'=1+1" in outcome.out
        else:
            assert any(snippet in outcome.text for snippet in snippets), (snippets, outcome.text[-2000:])
