"""The store: a file that is not this program's store is refused before anything is written to it (journal
files included); a read-only path and a full disk give different, clear messages; nothing half-written
stays behind (no store file, no partial report)."""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from dbpa_core.data.store import SampleStore

from .conftest import assert_clean, cli, simulated_spec, snapshot, write_spec

REPO = Path(__file__).resolve().parents[2]
APPLICATION_ID, SCHEMA_VERSION = 0x44425041, 1  # "DBPA" in the SQLite header, and the schema this version writes


def sqlite_file(path: Path, *statements: str) -> Path:
    with closing(sqlite3.connect(path)) as connection, connection:
        for statement in statements:
            connection.execute(statement)
    return path


FOREIGN = {
    "another program's database": lambda p: sqlite_file(p, "CREATE TABLE contacts (name TEXT, phone TEXT)",
                                                        "INSERT INTO contacts VALUES ('ada', '555')"),
    "another program's WAL database": lambda p: sqlite_file(p, "PRAGMA journal_mode=WAL",
                                                            "CREATE TABLE t (x)", "INSERT INTO t VALUES (1)"),
    "our table names, other columns": lambda p: sqlite_file(p, "CREATE TABLE samples (id INTEGER, blob BLOB)"),
    "our tables and one more": lambda p: sqlite_file(p, "CREATE TABLE samples (request_key TEXT)",
                                                     "CREATE TABLE secrets (v TEXT)"),
    "a newer schema version": lambda p: sqlite_file(p, f"PRAGMA application_id = {APPLICATION_ID}",
                                                    f"PRAGMA user_version = {SCHEMA_VERSION + 1}",
                                                    "CREATE TABLE samples (request_key TEXT)"),
    "another application id": lambda p: sqlite_file(p, "PRAGMA application_id = 1234", "CREATE TABLE t (x)"),
    "a text file": lambda p: p.write_text("name,phone\nada,555\n"),
    "random bytes": lambda p: p.write_bytes(os.urandom(4096)),
    "an SQLite header and nothing else": lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 20),
}


@pytest.mark.parametrize("case", FOREIGN, ids=FOREIGN)
def test_a_file_that_is_not_our_store_is_refused_untouched(tmp_path, case):
    store = tmp_path / "data" / "other.db"
    store.parent.mkdir()
    FOREIGN[case](store)
    before = snapshot(tmp_path)
    spec = write_spec(tmp_path, simulated_spec())
    outcome = assert_clean(cli("audit", spec, "--store", store, "--out", tmp_path / "o"), 2)
    assert "`store`" in outcome.error and str(store) in outcome.error
    assert snapshot(tmp_path) == {**before, "spec.yaml": snapshot(tmp_path)["spec.yaml"]}  # no -wal, -shm, report


def test_a_store_written_before_the_header_was_stamped_is_still_ours(tmp_path):
    path = tmp_path / "old.sqlite"
    sqlite_file(path, "PRAGMA journal_mode=WAL", "CREATE TABLE requests (request_key TEXT PRIMARY KEY, description "
                "TEXT NOT NULL)", "CREATE TABLE samples (request_key TEXT NOT NULL, sample_index INTEGER NOT NULL, "
                "text TEXT NOT NULL, token_logprobs TEXT, created REAL NOT NULL, PRIMARY KEY (request_key, "
                "sample_index))")
    SampleStore(path).put_sample({"backend": "simulated", "prompt": "p"}, 0, "kept")
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        assert connection.execute("SELECT text FROM samples").fetchall() == [("kept",)]


@contextmanager
def read_only(path: Path):
    """``path`` made read-only for this process: chmod, or the immutable attribute when running as root
    (root ignores permission bits but not `chattr +i`)."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)]).returncode != 0:
        pytest.skip("cannot make a path read-only for root here (no chattr)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_store_file_is_refused_with_its_own_message(tmp_path):
    path = tmp_path / "s.sqlite"
    SampleStore(path)
    before = snapshot(tmp_path)
    spec = write_spec(tmp_path, simulated_spec())
    with read_only(path):
        outcome = assert_clean(cli("audit", spec, "--store", path, "--out", tmp_path / "o"), 2)
    assert f"`store`: {path} is read-only" in outcome.error and "full" not in outcome.error
    assert snapshot(tmp_path) == {**before, "spec.yaml": snapshot(tmp_path)["spec.yaml"]}


def test_a_read_only_folder_is_refused_and_nothing_is_created(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    spec = write_spec(tmp_path, simulated_spec())
    with read_only(folder):
        outcome = assert_clean(cli("audit", spec, "--store", folder / "s.sqlite", "--out", tmp_path / "o"), 2)
        assert "is read-only" in outcome.error
        outcome = assert_clean(cli("audit", spec, "--out", folder / "reports", "--store", tmp_path / "s.sqlite"), 2)
        assert "`--out`" in outcome.error and "read-only" in outcome.error
    assert list(folder.iterdir()) == [] and not (tmp_path / "s.sqlite").exists()


def full_after(pages: int):
    """SampleStore._connect with SQLite's own page limit: writes past it fail with SQLITE_FULL, exactly as
    on a full disk (SQLite reports both as "database or disk is full")."""
    connect = SampleStore._connect

    def connect_limited(self):
        connection = connect(self)
        connection.execute(f"PRAGMA max_page_count = {pages}")
        return connection

    return connect_limited


def test_a_full_disk_at_creation_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(SampleStore, "_connect", full_after(1))
    spec = write_spec(tmp_path, simulated_spec())
    outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "new" / "s.sqlite", "--out", tmp_path / "o"), 3)
    assert "is full" in outcome.error and "read-only" not in outcome.error
    assert not (tmp_path / "new").exists() and not (tmp_path / "o").exists()


def test_a_disk_that_fills_up_mid_run_keeps_what_was_stored(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    SampleStore(path)
    spec = write_spec(tmp_path, simulated_spec(k=40))
    monkeypatch.setattr(SampleStore, "_connect", full_after(8))
    outcome = assert_clean(cli("audit", spec, "--store", path, "--out", tmp_path / "o"), 3)
    assert f"the disk holding the sample store {path} is full" in outcome.error
    assert "samples stored before are kept" in outcome.error and not (tmp_path / "o").exists()
    monkeypatch.undo()
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_json_to_a_full_device_is_exit_3_and_the_device_stays_a_device(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("".join(f'{{"text": "t{i}", "embedding": [1, {i}]}}\n' for i in range(4)))
    outcome = assert_clean(cli("test", a, a, "--json", "/dev/full", "--n-resamples", 20), 3)
    assert "the disk is full: cannot write /dev/full" in outcome.error
    assert Path("/dev/full").is_char_device()


def test_a_report_that_cannot_be_written_whole_is_not_written_at_all(tmp_path):
    """A file-size limit (what a nearly full disk does to the largest file) makes report.html fail: neither
    it nor report.json / results.csv are left, and the temporary files go too."""
    spec = write_spec(tmp_path, simulated_spec())
    out = tmp_path / "o"
    script = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
              f"resource.setrlimit(resource.RLIMIT_FSIZE, ({2 * 2**20}, {resource.RLIM_INFINITY})); "
              "from dbpa_core.__main__ import main; sys.exit(main(sys.argv[1:]))")
    result = subprocess.run([sys.executable, "-c", script, "audit", str(spec), "--out", str(out), "--store",
                             str(tmp_path / "s.sqlite")], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert result.returncode == 3, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "report.html" in result.stderr
    assert not out.exists() or list(out.iterdir()) == []
