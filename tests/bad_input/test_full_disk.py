"""Store or output on a full disk: exit 3 with "is full" (never "read-only"), nothing half-written stays behind
(no store file, no partial report), and what was stored before is kept intact."""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from dbpa_core.data.store import SampleStore

from .conftest import assert_clean, cli, simulated_spec, write_spec

REPO = Path(__file__).resolve().parents[2]


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
