"""On-disk cache of samples and embeddings (SQLite).

A sample is keyed by everything that determines it — backend, model,
prompt, system prompt, generation settings, seed — plus its index, so k
repeats are k different samples and asking for k = 40 after k = 20 reuses
the first 20.  Each sample is written as soon as it exists, so an
interrupted run resumes where it stopped.  API keys are never part of a key
or a row: :meth:`dbpa_core.samplers.Sampler.identity` leaves them out and
:func:`request_key` refuses settings whose names look like secrets.

Concurrency: WAL journal, a busy timeout, one short-lived connection per
operation, and ``INSERT OR IGNORE`` so that two processes drawing the same
sample cannot corrupt the file or duplicate a row.  The first write wins and
:meth:`SampleStore.put_sample` hands the winner back to the loser, which
uses it instead of its own draw: a server that ignores ``seed`` (OpenAI's is
best-effort) gives two writers different texts for one slot, and both must
report exactly what the store will replay.

A file is only ever written once it is known to be a store: the SQLite header
carries this program's ``application_id`` and schema version, read before any
connection opens it, so another program's database, another schema or a newer
version's store is refused untouched (no journal file either).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import time
from collections.abc import Iterable
from contextlib import closing, contextmanager
from pathlib import Path

import numpy as np

from .._validation import is_secret_name, redact, redact_known
from . import store_rows as rows_
from .store_files import APPLICATION_ID, SCHEMA_VERSION, opens_for_writing, recognise, writable
from .files import check_path_length, file_kind, stat_or_none


_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    request_key TEXT PRIMARY KEY,
    description TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS samples (
    request_key TEXT NOT NULL,
    sample_index INTEGER NOT NULL,
    text TEXT NOT NULL,
    token_logprobs TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (request_key, sample_index)
);
CREATE TABLE IF NOT EXISTS embeddings (
    embedder_key TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (embedder_key, text_hash)
);
CREATE TABLE IF NOT EXISTS batch_requests (
    custom_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    item TEXT NOT NULL
);
"""


# The first write of a slot wins, except over an empty sample (stored by an
# older version): an empty reply is never a sample.
_WRITE_SAMPLE = ("INSERT INTO samples VALUES (?, ?, ?, ?, ?) ON CONFLICT (request_key, sample_index) DO UPDATE "
                 "SET text = excluded.text, token_logprobs = excluded.token_logprobs, created = excluded.created "
                 "WHERE trim(samples.text, ' ' || char(9) || char(10) || char(13)) = ''")


class StoreError(RuntimeError):
    """The store could not be written or read (a full disk, a file locked or damaged); the message names the
    file, the reason and the fix.  Samples stored before stay stored."""


def default_store_path() -> Path:
    """``$DBPA_STORE`` or ``~/.cache/dbpa_explorer/store.sqlite``."""
    configured = os.environ.get("DBPA_STORE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "dbpa_explorer" / "store.sqlite"


def _canonical(description: dict) -> str:
    for name, value in description.items():
        if is_secret_name(name):
            raise ValueError(f"refusing to store the setting {name!r}: it looks like a secret.")
        if name in ("backend", "model", "base_url") and isinstance(value, str) and redact(value) != value:
            raise ValueError(f"refusing to store the setting {name!r}: its value holds a credential; pass keys "
                             "separately (OPENAI_API_KEY), never inside a model name or a URL.")
    return json.dumps(description, sort_keys=True, separators=(",", ":"), default=str)


def request_key(description: dict) -> str:
    """Stable key of a sampling request (sha256 of its canonical JSON)."""
    return hashlib.sha256(_canonical(description).encode()).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: Tries to set up a store that another writer is setting up at the same moment (see SampleStore.__init__).
_SETUP_ATTEMPTS = 20


def _is_locked(error: sqlite3.Error) -> bool:
    """Whether ``error`` is SQLite's "database is locked" (another connection holds the lock)."""
    return (getattr(error, "sqlite_errorname", "") or "").startswith("SQLITE_BUSY") or "locked" in str(error)


def store_failure(error: sqlite3.Error, path: Path) -> StoreError:
    """A :class:`StoreError` saying in plain words what a SQLite error means for the store at ``path``."""
    name = getattr(error, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_FULL") or "disk is full" in str(error):
        return StoreError(f"the disk holding the sample store {path} is full: free some space (or give "
                          "--store / $DBPA_STORE on another disk) and run the same command again; samples stored "
                          "before are kept and nothing half-written is left.")
    if name.startswith("SQLITE_READONLY") or "readonly" in str(error):
        return StoreError(f"the sample store {path} has become read-only: give a writable --store path (or fix "
                          "the file's and its folder's permissions) and run again.")
    if _is_locked(error):
        return StoreError(f"the sample store {path} stayed locked by another program for 60 s; close it (a "
                          "database browser?) and run again.")
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return StoreError(f"the sample store {path} is damaged ({error}); move it away and run again to start a "
                          "new one.")
    return StoreError(f"the sample store {path} failed ({error}); check the disk and run again.")


class SampleStore:
    """SQLite store of samples and embeddings.

    Parameters
    ----------
    path : str or Path, optional
        Database file; created with its folder if missing.  Default
        :func:`default_store_path`.

    Raises
    ------
    ValueError
        Before anything is written: the path is a folder; the file is not
        this program's store (another program's SQLite, another schema, a
        newer schema version, not SQLite at all); or it cannot be written
        (a read-only file, folder or disk).
    StoreError
        The store could not be created (a full disk); nothing is left behind.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_store_path()
        # Type before open: a device, a named pipe or a socket is never opened (a FIFO would block, and
        # "an empty file" would otherwise describe /dev/null), and nothing but a regular file is ever written.
        check_path_length(self.path, "store")
        info = stat_or_none(self.path, "store", cannot="cannot be used", fix="give another file path")
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise ValueError(f"`store`: {self.path} is a folder; give a file path such as "
                             f"{self.path / 'store.sqlite'}.")
        if info is not None and not stat.S_ISREG(info.st_mode):
            kind = file_kind(info.st_mode) or "not a regular file"
            raise ValueError(f"`store`: {self.path} is {kind}, not a file; it is left "
                             "untouched: give a file path such as ~/.cache/dbpa_explorer/store.sqlite.")
        stamped = recognise(self.path)
        # Only what this call creates may be removed if setting up fails: never a file that was there before.
        existed = {suffix: Path(f"{self.path}{suffix}").exists() for suffix in ("", "-wal", "-shm", "-journal")}
        folder = self.path.parent
        missing = [parent for parent in (folder, *folder.parents) if not parent.exists()]
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ValueError(f"`store`: cannot create the folder {folder} ({error.strerror}); "
                             "give a writable path.") from None
        if not writable(folder) or (self.path.exists() and not os.access(self.path, os.W_OK)) \
                or (self.path.exists() and not opens_for_writing(self.path)):
            raise ValueError(f"`store`: {self.path} is read-only (no write permission on the file or its folder "
                             f"{folder}, or a read-only disk); give a writable path with --store or $DBPA_STORE.")
        for attempt in range(_SETUP_ATTEMPTS):
            started = time.monotonic()
            try:
                with closing(self._connect()) as connection, connection:
                    if not stamped:  # first, each committed at once: a writer setting up the same file at this
                        # moment sees either an empty file or our header, never an unstamped database
                        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                    connection.execute("PRAGMA journal_mode=WAL")
                    connection.executescript(_SCHEMA)
                return
            except sqlite3.Error as error:
                # Two writers setting up the same new store at once: SQLite refuses one at once ("database is
                # locked" without waiting, as a lock upgrade would deadlock). The other writer is making the
                # store: try again, and never delete what it is writing (tests/test_endpoints.py's two writers).
                locked = _is_locked(error)
                if locked and time.monotonic() - started < 1.0 and attempt + 1 < _SETUP_ATTEMPTS:
                    time.sleep(0.05 * (attempt + 1))
                    continue
                self._fail(error, created=[] if locked else [suffix for suffix, was in existed.items() if not was],
                           missing=missing)

    def _fail(self, error: sqlite3.Error, *, created: list[str], missing: list[Path]):
        """Raise the store's failure; a store this call was making leaves nothing half-made behind, and nothing
        that existed before the call (``created`` lists the suffixes of the files it made) is removed."""
        if "" in created:  # the file (and its journals) and the folders made for it go
            for suffix in created:
                leftover = Path(f"{self.path}{suffix}")
                if leftover.is_file():  # a regular file this call made; never a device put there since
                    leftover.unlink(missing_ok=True)
            for parent in missing:
                try:
                    parent.rmdir()
                except OSError:
                    break
        raise store_failure(error, self.path) from None

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=60)
        connection.execute("PRAGMA busy_timeout=60000")
        # WAL + NORMAL: a commit survives a crash of the process (the resume
        # case); only an OS crash may lose the last few samples.
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    @contextmanager
    def _transaction(self, write: bool = True):
        """One connection (a transaction when ``write``); a SQLite failure becomes a :class:`StoreError`."""
        try:
            with closing(self._connect()) as connection:
                if write:
                    with connection:
                        yield connection
                else:
                    yield connection
        except sqlite3.Error as error:
            raise store_failure(error, self.path) from None

    # ------------------------------------------------------------- samples
    def get_samples(self, description: dict, indices: Iterable[int]) -> dict[int, tuple[str, list | None]]:
        """Stored (text, token_logprobs) of the given indices; missing ones are absent."""
        key = request_key(description)
        indices = list(indices)
        if not indices:
            return {}
        rows = self._select_in("SELECT sample_index, text, token_logprobs FROM samples WHERE request_key = ? "
                               "AND sample_index IN ({})", key, indices)
        where = "samples, index {}"
        return {index: (rows_.sample_text(self.path, where.format(index), text),
                        rows_.logprobs(self.path, where.format(index), logprobs))
                for index, text, logprobs in rows}

    def _select_in(self, sql: str, key: str, values: list) -> list[tuple]:
        """Rows of ``sql`` (with one ``IN ({})`` placeholder) for ``key`` and ``values``, in
        chunks of 500 to stay under SQLite's variable limit."""
        rows = []
        with self._transaction(write=False) as connection:
            for start in range(0, len(values), 500):
                chunk = values[start : start + 500]
                rows += connection.execute(sql.format(",".join("?" * len(chunk))), [key, *chunk]).fetchall()
        return rows

    def put_sample(self, description: dict, index: int, text: str, token_logprobs=None
                   ) -> tuple[str, list | None]:
        """Write one sample at once (so an interrupted run loses nothing drawn).

        Returns
        -------
        (text, token_logprobs)
            What the store holds for this slot afterwards: ``text`` unless
            another writer stored the slot first, in which case its sample,
            which the caller must use instead of its own.
        """
        key, text = request_key(description), redact_known(text)  # a reply quoting the key in use: never stored
        with self._transaction() as connection:
            # BEGIN IMMEDIATE: the insert and the read-back see one state of the file.
            connection.execute("BEGIN IMMEDIATE")
            connection.execute(
                "INSERT OR IGNORE INTO requests (request_key, description) VALUES (?, ?)",
                (key, _canonical(description)),
            )
            connection.execute(
                _WRITE_SAMPLE,
                (key, int(index), text, json.dumps(token_logprobs) if token_logprobs is not None else None,
                 time.time()),
            )
            stored, logprobs = connection.execute(
                "SELECT text, token_logprobs FROM samples WHERE request_key = ? AND sample_index = ?",
                (key, int(index))).fetchone()
        where = f"samples, index {int(index)}"
        return rows_.sample_text(self.path, where, stored), rows_.logprobs(self.path, where, logprobs)

    def count_samples(self, description: dict) -> int:
        with self._transaction(write=False) as connection:
            (count,) = connection.execute(
                "SELECT COUNT(*) FROM samples WHERE request_key = ?", (request_key(description),)
            ).fetchone()
        return int(count)

    # ---------------------------------------------------------- embeddings
    def get_embeddings(self, embedder_key: str, texts: list[str]) -> dict[str, np.ndarray]:
        hashes = sorted({text_hash(t) for t in texts})
        rows = self._select_in("SELECT text_hash, vector FROM embeddings WHERE embedder_key = ? AND text_hash IN ({})",
                               embedder_key, hashes)
        return rows_.vectors(self.path, embedder_key, rows)

    def embedding_dimension(self, embedder_key: str) -> int | None:
        """The dimension of the vectors stored for ``embedder_key`` (None when there are none)."""
        with self._transaction(write=False) as connection:
            row = connection.execute("SELECT length(vector) FROM embeddings WHERE embedder_key = ? LIMIT 1",
                                     (embedder_key,)).fetchone()
        return None if row is None else int(row[0]) // 4  # float32

    def put_embeddings(self, embedder_key: str, texts: list[str], vectors: np.ndarray) -> None:
        rows = [(embedder_key, text_hash(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors)]
        with self._transaction() as connection:
            connection.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?)", rows)

    # ------------------------------------------------------- batch files
    # A batch-file export (dbpa_core.audit.batch) registers each line's
    # custom_id with the slot it fills, so that an import needs only the
    # results file.  kind "sample": target = the request description, item =
    # the sample index; kind "embedding": target = the embedder key, item =
    # the JSON list of texts embedded by that line.
    def register_batch_requests(self, rows: Iterable[tuple[str, str, dict | str, int | list[str]]]) -> None:
        """Remember (custom_id, kind, target, item) of exported lines; re-registering is harmless."""
        encoded = [(custom_id, kind, _canonical(target) if isinstance(target, dict) else target,
                    json.dumps(item, ensure_ascii=False)) for custom_id, kind, target, item in rows]
        with self._transaction() as connection:
            connection.executemany("INSERT OR IGNORE INTO batch_requests VALUES (?, ?, ?, ?)", encoded)

    def batch_requests(self, custom_ids: Iterable[str]) -> dict[str, tuple[str, dict | str, int | list[str]]]:
        """The registered (kind, target, item) of each known custom_id; unknown ones are absent."""
        ids, rows = list(dict.fromkeys(custom_ids)), []
        with self._transaction(write=False) as connection:
            for start in range(0, len(ids), 500):  # under SQLite's variable limit
                chunk = ids[start : start + 500]
                rows += connection.execute("SELECT custom_id, kind, target, item FROM batch_requests WHERE "
                                           f"custom_id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
        found = {}
        for custom_id, kind, target, item in rows:
            where = f"batch_requests, custom_id {str(custom_id)[:40]}"
            found[custom_id] = (kind, rows_.json_value(self.path, where, target) if kind == "sample" else target,
                                rows_.json_value(self.path, where, item))
        return found

    def put_samples(self, rows: Iterable[tuple[dict, int, str]]) -> int:
        """Write many (description, index, text) samples in one transaction; returns how many were new.

        As :meth:`put_sample`, the first text written to a slot is kept (unless it is empty).
        """
        rows = [(request_key(description), _canonical(description), int(index), redact_known(text))
                for description, index, text in rows]
        now = time.time()
        with self._transaction() as connection:
            connection.executemany("INSERT OR IGNORE INTO requests (request_key, description) VALUES (?, ?)",
                                   [(key, canonical) for key, canonical, _, _ in rows])
            before = connection.total_changes
            connection.executemany(_WRITE_SAMPLE, [(key, index, text, None, now) for key, _, index, text in rows])
            return connection.total_changes - before
