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
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path

import numpy as np

from .._validation import is_secret_name


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


def default_store_path() -> Path:
    """``$DBPA_STORE`` or ``~/.cache/dbpa_explorer/store.sqlite``."""
    configured = os.environ.get("DBPA_STORE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "dbpa_explorer" / "store.sqlite"


def _canonical(description: dict) -> str:
    for name in description:
        if is_secret_name(name):
            raise ValueError(f"refusing to store the setting {name!r}: it looks like a secret.")
    return json.dumps(description, sort_keys=True, separators=(",", ":"), default=str)


def request_key(description: dict) -> str:
    """Stable key of a sampling request (sha256 of its canonical JSON)."""
    return hashlib.sha256(_canonical(description).encode()).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SampleStore:
    """SQLite store of samples and embeddings.

    Parameters
    ----------
    path : str or Path, optional
        Database file; created with its folder if missing.  Default
        :func:`default_store_path`.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_store_path()
        if self.path.is_dir():
            raise ValueError(f"`store`: {self.path} is a folder; give a file path such as "
                             f"{self.path / 'store.sqlite'}.")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ValueError(f"`store`: cannot create the folder {self.path.parent} ({error.strerror}); "
                             "give a writable path.") from None
        try:
            with closing(self._connect()) as connection, connection:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.executescript(_SCHEMA)
        except sqlite3.DatabaseError as error:
            # Opening a text file or another program's database must not overwrite it.
            raise ValueError(f"`store`: {self.path} is not a sample store ({error}); give a new file path, "
                             "or delete the file if it is a broken store.") from None

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=60)
        connection.execute("PRAGMA busy_timeout=60000")
        # WAL + NORMAL: a commit survives a crash of the process (the resume
        # case); only an OS crash may lose the last few samples.
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    # ------------------------------------------------------------- samples
    def get_samples(self, description: dict, indices: Iterable[int]) -> dict[int, tuple[str, list | None]]:
        """Stored (text, token_logprobs) of the given indices; missing ones are absent."""
        key = request_key(description)
        indices = list(indices)
        if not indices:
            return {}
        rows = self._select_in("SELECT sample_index, text, token_logprobs FROM samples WHERE request_key = ? "
                               "AND sample_index IN ({})", key, indices)
        return {index: (text, json.loads(logprobs) if logprobs is not None else None)
                for index, text, logprobs in rows}

    def _select_in(self, sql: str, key: str, values: list) -> list[tuple]:
        """Rows of ``sql`` (with one ``IN ({})`` placeholder) for ``key`` and ``values``, in
        chunks of 500 to stay under SQLite's variable limit."""
        rows = []
        with closing(self._connect()) as connection:
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
        key = request_key(description)
        with closing(self._connect()) as connection, connection:
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
        return stored, json.loads(logprobs) if logprobs is not None else None

    def count_samples(self, description: dict) -> int:
        with closing(self._connect()) as connection:
            (count,) = connection.execute(
                "SELECT COUNT(*) FROM samples WHERE request_key = ?", (request_key(description),)
            ).fetchone()
        return int(count)

    # ---------------------------------------------------------- embeddings
    def get_embeddings(self, embedder_key: str, texts: list[str]) -> dict[str, np.ndarray]:
        hashes = sorted({text_hash(t) for t in texts})
        rows = self._select_in("SELECT text_hash, vector FROM embeddings WHERE embedder_key = ? AND text_hash IN ({})",
                               embedder_key, hashes)
        return {digest: np.frombuffer(blob, dtype=np.float32) for digest, blob in rows}

    def put_embeddings(self, embedder_key: str, texts: list[str], vectors: np.ndarray) -> None:
        rows = [(embedder_key, text_hash(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors)]
        with closing(self._connect()) as connection, connection:
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
        with closing(self._connect()) as connection, connection:
            connection.executemany("INSERT OR IGNORE INTO batch_requests VALUES (?, ?, ?, ?)", encoded)

    def batch_requests(self, custom_ids: Iterable[str]) -> dict[str, tuple[str, dict | str, int | list[str]]]:
        """The registered (kind, target, item) of each known custom_id; unknown ones are absent."""
        ids, rows = list(dict.fromkeys(custom_ids)), []
        with closing(self._connect()) as connection:
            for start in range(0, len(ids), 500):  # under SQLite's variable limit
                chunk = ids[start : start + 500]
                rows += connection.execute("SELECT custom_id, kind, target, item FROM batch_requests WHERE "
                                           f"custom_id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
        return {custom_id: (kind, json.loads(target) if kind == "sample" else target, json.loads(item))
                for custom_id, kind, target, item in rows}

    def put_samples(self, rows: Iterable[tuple[dict, int, str]]) -> int:
        """Write many (description, index, text) samples in one transaction; returns how many were new.

        As :meth:`put_sample`, the first text written to a slot is kept (unless it is empty).
        """
        rows = [(request_key(description), _canonical(description), int(index), text)
                for description, index, text in rows]
        now = time.time()
        with closing(self._connect()) as connection, connection:
            connection.executemany("INSERT OR IGNORE INTO requests (request_key, description) VALUES (?, ?)",
                                   [(key, canonical) for key, canonical, _, _ in rows])
            before = connection.total_changes
            connection.executemany(_WRITE_SAMPLE, [(key, index, text, None, now) for key, _, index, text in rows])
            return connection.total_changes - before
