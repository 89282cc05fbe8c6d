"""The store: a file that is not this program's store is refused before anything is written to it (journal
files included); a read-only path has its own clear message (a full disk: test_full_disk.py)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
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
    assert "`--store`" in outcome.error and str(store) in outcome.error
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
    assert f"`--store`: {path} is read-only" in outcome.error and "full" not in outcome.error
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
