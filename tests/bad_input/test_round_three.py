"""Bad input, round three, by class: never touch what is not ours, never print a secret or a raw escape, never
hang or read without bound, parse strictly, and name the flag or field of every refusal (exit 2).

A FIFO never blocks these tests: every case runs under an alarm (``no_hang``), and the paths that must not be
opened are checked by kind before anything opens them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
from contextlib import closing, contextmanager
from pathlib import Path

import numpy as np
import pytest

from servers import Reply, misbehaving_server

from .conftest import SECRET, assert_clean, cli, simulated_spec, snapshot, write_jsonl, write_spec

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_hang():
    """Fail, never hang, when something opens a FIFO it should have refused."""
    def timed_out(*_):
        raise TimeoutError("blocked: a FIFO or device was opened")
    previous = signal.signal(signal.SIGALRM, timed_out)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def device(tmp_path: Path) -> Path:
    """A character device that may be deleted by mistake: a fresh /dev/null node when root, else /dev/null."""
    node = tmp_path / "null-device"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return node
    except (PermissionError, OSError):
        return Path("/dev/null")


def samples(tmp_path: Path, name: str, texts) -> Path:
    return write_jsonl(tmp_path / name, [{"text": t} for t in texts])


# ------------------------------------------------------------------------------------------------ ownership
def sqlite_file(path: Path, *statements: str) -> Path:
    with closing(sqlite3.connect(path)) as connection, connection:
        for statement in statements:
            connection.execute(statement)
    return path


@contextmanager
def tables_only_in_wal(path: Path, *statements: str):
    """A WAL database whose tables are only in its -wal (a writer that has not checkpointed): the files are
    copied while the writer holds them."""
    source = path.parent / "writer" / path.name
    source.parent.mkdir()
    connection = sqlite3.connect(source)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    for suffix in ("", "-wal"):
        shutil.copyfile(f"{source}{suffix}", f"{path}{suffix}")
    try:
        yield path
    finally:
        connection.close()
        shutil.rmtree(source.parent)


FOREIGN = {
    "only a VIEW": lambda p: sqlite_file(p, "CREATE VIEW v AS SELECT 1 AS x"),
    "samples(request_key, text)": lambda p: sqlite_file(p, "CREATE TABLE samples (request_key TEXT, text TEXT)",
                                                        "INSERT INTO samples VALUES ('k', 'theirs')"),
    "a requests table with its own rows": lambda p: sqlite_file(
        p, "CREATE TABLE requests (request_key TEXT PRIMARY KEY, description TEXT NOT NULL)",
        "INSERT INTO requests VALUES ('mine', 'a row of another program')"),
    "our schema plus a trigger": lambda p: sqlite_file(
        p, "CREATE TABLE requests (request_key TEXT PRIMARY KEY, description TEXT NOT NULL)",
        "CREATE TABLE samples (request_key TEXT NOT NULL, sample_index INTEGER NOT NULL, text TEXT NOT NULL, "
        "token_logprobs TEXT, created REAL NOT NULL, PRIMARY KEY (request_key, sample_index))",
        "CREATE TRIGGER t AFTER INSERT ON samples BEGIN DELETE FROM requests; END"),
}


@pytest.mark.parametrize("case", [*FOREIGN, "tables only in its -wal"])
def test_a_foreign_sqlite_file_is_refused_byte_identical(tmp_path, case):
    store = tmp_path / "data" / "other.db"
    store.parent.mkdir()
    spec = write_spec(tmp_path, simulated_spec())
    if case == "tables only in its -wal":
        context = tables_only_in_wal(store, "CREATE TABLE samples (request_key TEXT, text TEXT)",
                                     "INSERT INTO samples VALUES ('k', 'theirs')")
    else:
        FOREIGN[case](store)
        context = contextmanager(lambda: (yield store))()
    with context:
        before = snapshot(store.parent)
        outcome = assert_clean(cli("audit", spec, "--store", store, "--out", tmp_path / "o"), 2)
        assert "`--store`" in outcome.error and str(store) in outcome.error and "left untouched" in outcome.error
        assert snapshot(store.parent) == before  # no stamp, no table, no -shm
    assert not (tmp_path / "o").exists()


def test_our_store_whose_stamp_is_only_in_its_wal_is_still_ours(tmp_path):
    from dbpa_core.data.store import SampleStore

    store = tmp_path / "s.sqlite"
    with tables_only_in_wal(store, f"PRAGMA application_id = {0x44425041}", "PRAGMA user_version = 1",
                            "CREATE TABLE requests (request_key TEXT PRIMARY KEY, description TEXT NOT NULL)"):
        SampleStore(store).put_sample({"backend": "simulated", "prompt": "p"}, 0, "kept")
    with closing(sqlite3.connect(store)) as connection:
        assert connection.execute("SELECT text FROM samples").fetchall() == [("kept",)]


@pytest.mark.parametrize("kind", ["device", "fifo", "folder", "empty file", "new path"])
def test_a_store_path_is_checked_for_its_kind_and_nothing_is_deleted(tmp_path, kind):
    path = {"device": lambda: device(tmp_path), "fifo": lambda: fifo(tmp_path / "pipe"),
            "folder": lambda: (tmp_path / "dir").mkdir() or tmp_path / "dir",
            "empty file": lambda: (tmp_path / "empty").touch() or tmp_path / "empty",
            "new path": lambda: tmp_path / "new" / "s.sqlite"}[kind]()
    spec = write_spec(tmp_path, simulated_spec(k=4, n_resamples=20, perturbations=["mars"]))
    mode = path.stat().st_mode if path.exists() else None
    outcome = cli("audit", spec, "--store", path, "--out", tmp_path / "o")
    if kind in ("empty file", "new path"):
        assert_clean(outcome, 0)
        return
    assert_clean(outcome, 2)
    assert "`--store`" in outcome.error and str(path) in outcome.error
    assert path.exists() and path.stat().st_mode == mode  # still the device, the pipe, the folder
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-journal").exists()


# ------------------------------------------------------------------------------- one output path for text
KEY_FORMS = {
    "whole": SECRET,
    "without its prefix": SECRET[len("sk-proj-"):],
    "spaced out": " ".join(SECRET),
    "cut short": SECRET[:22],
    "middle only": SECRET[9:30],
}


@pytest.mark.parametrize("form", KEY_FORMS)
def test_every_form_of_the_key_in_use_is_redacted(form):
    from dbpa_core._validation import shown

    text = shown(f"the server said: {KEY_FORMS[form]} (quoted)")
    compact = "".join(text.split())
    for start in range(len(SECRET) - 10):
        assert SECRET[start:start + 10] not in compact, text


@pytest.mark.parametrize("text", ["see http://user:hunter2pass@host/v1", "Authorization: Bearer abc.DEF-123_456",
                                  "api_key=Zx81ab77Q2mm", "\x1b]0;owned\x07title", "red \x1b[31mALERT\x1b[0m",
                                  "line\nFAKE: imported 999, refused 0.", "abc\u202edcba", "a\rb\x85c\u2028d"])
def test_the_output_path_redacts_and_escapes(text):
    from dbpa_core._validation import shown

    out = shown(text)
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or c in "\u202e\u2028" for c in out), repr(out)
    for secret in ("hunter2pass", "abc.DEF-123_456", "Zx81ab77Q2mm"):
        assert secret not in out


@pytest.mark.parametrize("field", ["label", "id", "prompt", "system"])
@pytest.mark.parametrize("value", [SECRET, "sk-" + "A1b2C3d4" * 4, "http://me:pa55word@host", "Bearer Abc123Def456"])
def test_a_credential_in_a_label_id_or_prompt_is_refused(tmp_path, field, value):
    item = {"id": "p1", "label": "one", "prompt": "Why is the sky blue, really?", field: value}
    spec = write_spec(tmp_path, {"name": "t", "sampler": {"backend": "simulated"}, "k": 4, "n_resamples": 20,
                                 "prompts": {"original": {"prompt": "Why is the sky blue?"}, "perturbations": [item]}})
    outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o"), 2,
                           secrets=(SECRET, value))
    assert f"perturbations[0].{field}`" in outcome.error
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "o").exists()


def test_escapes_in_a_label_and_a_file_name_are_printed_escaped(tmp_path):
    hostile = "\x1b]0;owned\x07\x1b[2J\u202eevil\nFAKE: imported 999, refused 0."
    spec = write_spec(tmp_path, {"name": "t", "sampler": {"backend": "simulated"}, "k": 4, "n_resamples": 20,
                                 "prompts": {"original": {"prompt": "Why is the sky blue?"},
                                             "perturbations": [{"id": "p1", "label": hostile,
                                                                "prompt": "Why is the sky blue, really?"}]}})
    outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o"), 0)
    bad = samples(tmp_path, "a\x1b[31m\u202e.jsonl", ["x", "y", "z"])
    outcome2 = assert_clean(cli("test", bad, tmp_path / "missing.jsonl"), 2)
    for text in (outcome.text, outcome2.text):
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
        assert not any(line.startswith("FAKE") for line in text.splitlines())


def test_a_completion_quoting_the_key_is_stored_without_it(tmp_path):
    from dbpa_core.data.store import SampleStore

    store = SampleStore(tmp_path / "s.sqlite")
    stored, _ = store.put_sample({"backend": "simulated", "prompt": "p"}, 0, f"your key is {SECRET[3:]} ok")
    store.put_samples([({"backend": "simulated", "prompt": "p"}, 1, f"spaced {' '.join(SECRET)}")])
    assert SECRET[-10:] not in stored
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert SECRET[-10:].encode() not in raw and SECRET[3:13].encode() not in raw


def batch_object(status: str, message: str) -> dict:
    return {"id": "batch_abc", "object": "batch", "endpoint": "/v1/chat/completions", "status": status,
            "input_file_id": "f", "completion_window": "24h", "created_at": 0,
            "errors": {"object": "list", "data": [{"code": "bad", "message": message}]},
            "request_counts": {"total": 1, "completed": 0, "failed": 1}}


@pytest.mark.parametrize("command", [["status", "batch_abc"], ["fetch", "batch_abc", "--out", "r.jsonl"]])
def test_batch_status_and_fetch_print_the_server_s_words_through_the_output_path(tmp_path, command):
    status = "validating\x1b[31m\nFAKE: imported 999, refused 0."
    message = f"Authorization: Bearer {SECRET}\n\x1b]0;owned\x07 FAKE: done"
    with misbehaving_server(lambda n, r: Reply(batch_object(status, message))) as (url, _):
        outcome = cli("batch", *command, "--base-url", url)
    assert outcome.code in (0, 3)
    assert "\x1b" not in outcome.text and SECRET[-10:] not in outcome.text and SECRET[3:13] not in outcome.text
    assert not any(line.startswith("FAKE") for line in outcome.text.splitlines()), outcome.text


# ------------------------------------------------------------------------------------- type before open
def test_a_fifo_or_device_as_input_spec_or_recorded_path_is_refused_without_opening(tmp_path):
    pipe = fifo(tmp_path / "pipe.jsonl")
    good = samples(tmp_path, "good.jsonl", ["a", "b", "c"])
    for outcome in (cli("test", pipe, good), cli("test", good, "/dev/zero"), cli("audit", fifo(tmp_path / "s.yaml")),
                    cli("audit", "/dev/zero")):
        assert_clean(outcome, 2)
        assert "named pipe" in outcome.error or "device" in outcome.error
    for path in (pipe, Path("/dev/zero"), device(tmp_path)):
        spec = write_spec(tmp_path, simulated_spec(sampler={"backend": "recorded", "path": str(path)}))
        outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o"), 2)
        assert "`path`" in outcome.error or "sampler.path" in outcome.error
    assert stat.S_ISFIFO(pipe.stat().st_mode)


def test_dev_zero_as_a_recorded_path_is_refused_under_a_memory_cap():
    script = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))
        from dbpa_core.samplers.recorded import RecordedSampler
        try:
            RecordedSampler("/dev/zero")
        except ValueError as error:
            print("refused:", error)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "refused:" in done.stdout and "character device" in done.stdout, done.stderr


def test_text_measures_are_refused_beforehand_past_their_work_budget(tmp_path):
    from dbpa_core import dbpa_test
    from dbpa_core.stats.similarity import check_text_work

    long = " ".join(f"w{i % 5000}" for i in range(150_000))  # ≈ 900 kB: ROUGE-L ran for over 300 s
    with pytest.raises(ValueError, match=r"`similarity` rouge_l .* ≈40,824 words each fit"):
        dbpa_test([long, long + " a"], [long + " b", long + " c"], similarity="rouge_l", rng=0)
    a, b = (samples(tmp_path, f"{n}.jsonl", [long, long + " x"]) for n in "ab")
    outcome = assert_clean(cli("test", a, b, "--similarity", "rouge_l"), 2)
    assert "words each fit" in outcome.error
    with pytest.raises(ValueError, match="bleu"):
        check_text_work([200_000] * 5_000, "bleu")
    check_text_work([100] * 500, "rouge_l")  # 500 answers of 100 words: within the budget


# ------------------------------------------------------------------------------------------ strict parsing
@pytest.mark.parametrize(("text", "key", "line"), [
    ("name: t\nalpha: 0.05\nk: 4\nalpha: 0.5\n", "alpha", 4),
    ("name: t\nsampler:\n  backend: simulated\n  backend: openai\n", "backend", 4),
    ("name: t\n1: 2\n", "'1'", 2),
    ("name: t\n? [a, b]\n: 1\n", "a sequence", 2),
])
def test_repeated_and_non_text_yaml_keys_are_refused_naming_key_and_line(tmp_path, text, key, line):
    outcome = assert_clean(cli("audit", write_spec(tmp_path, text)), 2)
    assert f"line {line}" in outcome.error and key in outcome.error


@pytest.mark.parametrize(("content", "row"), [
    (b'arm,text\na,one\na,"two\nb,three\nb,four\n', 3),  # a quote never closed
    (b"arm,text\ra,one\ra,two\rb,x\rb,y\r", 1),  # bare carriage returns
    (b"arm,text\r\na,one\na,two\nb,x\nb,y\n", 3),  # mixed line ends
])
def test_a_malformed_csv_is_refused_naming_the_row(content, row):
    from dbpa_core.data.uploads import read_samples

    with pytest.raises(ValueError, match=rf"f\.csv, row {row}:"):
        read_samples(content, "f.csv")


def test_well_formed_files_that_were_refused_are_read():
    from dbpa_core.data.uploads import read_samples

    jsonl = "".join(json.dumps({"arm": arm, "text": f"x\u2028y\x85z {i}"}, ensure_ascii=False) + "\n"
                    for i, arm in enumerate("aabb"))
    assert read_samples(jsonl.encode(), "f.jsonl").texts["a"][0] == "x\u2028y\x85z 0"
    big = "x" * 200_000
    table = read_samples(f'arm,text\na,"{big}"\na,"q ""5"" r"\nb,He is 5" tall\nb,z\n'.encode(), "f.csv")
    assert table.texts["a"] == [big, 'q "5" r'] and table.texts["b"] == ['He is 5" tall', "z"]


@pytest.mark.parametrize(("sampler", "field"), [
    ({"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "logprobs": "no"}, "logprobs"),
    ({"backend": "openai", "model": ["a", "b"], "base_url": "http://127.0.0.1:9/v1"}, "model"),
    ({"backend": "recorded", "path": ["a"]}, "path"),
])
def test_typed_sampler_fields(tmp_path, sampler, field):
    outcome = assert_clean(cli("audit", write_spec(tmp_path, simulated_spec(sampler=sampler))), 2)
    assert f"sampler.{field}`" in outcome.error


@pytest.mark.parametrize("where", ["original", "perturbation"])
def test_a_system_prompt_that_is_a_list_is_refused(tmp_path, where):
    original = {"prompt": "Why?", **({"system": ["a", "b"]} if where == "original" else {})}
    item = {"id": "p1", "prompt": "Why, really?", **({"system": ["a", "b"]} if where == "perturbation" else {})}
    spec = write_spec(tmp_path, {"name": "t", "prompts": {"original": original, "perturbations": [item]}})
    assert "system`" in assert_clean(cli("audit", spec), 2).error


@pytest.mark.parametrize("vector", [[True, 0.5], [[True, False], [0.1, 0.2]]])
def test_booleans_are_not_embedding_values(vector):
    from dbpa_core._validation import check_embeddings
    from dbpa_core.embedders.openai_compatible import response_vectors

    with pytest.raises(ValueError, match="true/false"):
        response_vectors([{"index": 0, "embedding": vector}])
    with pytest.raises(ValueError, match="booleans"):
        check_embeddings(np.array([[True, False], [False, True]]), "x")


def test_max_lines_zero_is_refused(tmp_path):
    spec = write_spec(tmp_path, simulated_spec(sampler={"backend": "openai", "model": "m"}))
    outcome = assert_clean(cli("batch", "export", spec, "--out", tmp_path / "r.jsonl", "--max-lines", "0",
                               "--store", tmp_path / "s.sqlite"), 2)
    assert "`--max-lines`" in outcome.error and not (tmp_path / "s.sqlite").exists()


def test_batch_results_of_another_model_are_refused_per_line(tmp_path):
    spec = write_spec(tmp_path, simulated_spec(sampler={"backend": "openai", "model": "gpt-4o-mini"},
                                               perturbations=["mars"], k=2))
    store = tmp_path / "s.sqlite"
    assert_clean(cli("batch", "export", spec, "--out", tmp_path / "r.jsonl", "--store", store), 0)
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    models = ["gpt-4o-mini-2024-07-18", "gpt-4o", "gpt-4o-mini", "other/model"]
    write_jsonl(tmp_path / "out.jsonl", [
        {"custom_id": line["custom_id"], "response": {"status_code": 200, "body": {
            "model": models[i % 4], "choices": [{"message": {"content": f"answer {i}"}}]}}}
        for i, line in enumerate(lines)])
    outcome = assert_clean(cli("batch", "import", tmp_path / "out.jsonl", "--spec", spec, "--store", store), 3,
                           one_error=False)
    assert "another model" in outcome.out and f"refused {len(lines) // 2}" in outcome.out


# ------------------------------------------------------------------------------- exit codes and messages
@pytest.mark.parametrize(("argv", "flag"), [
    (["--seed", "-1"], "--seed"), (["--alpha", "0"], "--alpha"), (["--n-resamples", "0"], "--n-resamples"),
    (["--fdr", "1.5"], "--fdr"),
])
def test_bad_flags_name_the_flag(tmp_path, argv, flag):
    a, b = samples(tmp_path, "a.jsonl", "abc"), samples(tmp_path, "b.jsonl", "xyz")
    outcome = assert_clean(cli("test", a, b, "--similarity", "rouge_1", *argv), 2)
    assert f"`{flag}`" in outcome.error and "rng" not in outcome.error


def test_checkable_input_is_never_unexpected(tmp_path):
    from dbpa_core import required_sample_size
    from dbpa_core.stats.power import detectable_effect

    a = samples(tmp_path, "a.jsonl", ["the cat sat", "the cat ran", "a dog sat"])
    b = samples(tmp_path, "b.jsonl", ["a dog ran", "the dog ran far", "cats sat"])
    outcome = cli("test", a, b, "--similarity", "rouge_1", "--alpha", "5e-324")
    assert outcome.code in (0, 2) and "unexpected" not in outcome.text
    for call, name in ((lambda: required_sample_size(1e-200), "effect"),
                       (lambda: required_sample_size(0.5, alpha=5e-324), "alpha"),
                       (lambda: detectable_effect(10, alpha=5e-324), "alpha")):
        with pytest.raises(ValueError, match=f"`{name}`"):
            call()
    csv_path = tmp_path / "cr.csv"
    csv_path.write_bytes(b"text\rone\rtwo\rthree\r")
    assert "row 1" in assert_clean(cli("test", csv_path, a), 2).error


def test_batch_fetch_to_a_folder_is_bad_input_before_any_call(tmp_path):
    with misbehaving_server(lambda n, r: Reply(batch_object("completed", "x"))) as (url, received):
        outcome = assert_clean(cli("batch", "fetch", "batch_abc", "--out", tmp_path, "--base-url", url), 2)
    assert "`--out`" in outcome.error and received == []


def test_a_key_with_a_trailing_newline_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET + "\n")
    outcome = assert_clean(cli("batch", "status", "batch_abc", "--base-url", "http://127.0.0.1:9/v1"), 2)
    assert "OPENAI_API_KEY" in outcome.error and "newline" in outcome.error


def test_a_redirect_loop_is_named(tmp_path):
    with misbehaving_server(lambda n, r: Reply(b"", status=307, headers={"Location": "/v1/batches/batch_abc"})) \
            as (url, _):
        outcome = assert_clean(cli("batch", "status", "batch_abc", "--base-url", url), 3)
    assert "redirect" in outcome.error
