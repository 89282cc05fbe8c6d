"""What a store path is, read without opening it as a database: its kind (a regular file, or a device, a
named pipe, a socket, never opened), its SQLite header (and the one committed to its write-ahead log), its
tables and the schema objects that are not tables, and whether it can be written: :func:`recognise` tells
this program's store from anything else.  Used by :class:`dbpa_core.data.store.SampleStore` before anything is
written."""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
import urllib.parse
from contextlib import closing
from pathlib import Path


def committed_page_one(wal: Path) -> bytes | None:
    """The first 100 bytes of the last committed copy of page 1 in the write-ahead log ``wal`` (its SQLite
    header), None when the log holds none.  Read as bytes (https://sqlite.org/fileformat.html#the_write_ahead_log:
    a 32-byte header, then frames of a 24-byte header and one page; a frame with a non-zero "size after commit"
    ends a transaction; frames whose salts differ from the log's are left over from an earlier one)."""
    try:
        info = os.stat(wal)
        if not stat.S_ISREG(info.st_mode) or info.st_size < 32:
            return None
        with open(wal, "rb") as handle:
            head = handle.read(32)
            if int.from_bytes(head[:4], "big") not in (0x377F0682, 0x377F0683):
                return None
            size = int.from_bytes(head[8:12], "big")
            if size < 512 or size > 65536 or size & (size - 1):
                return None
            found = pending = None
            while len(frame := handle.read(24)) == 24:
                page = handle.read(size)
                if len(page) < size or frame[8:16] != head[16:24]:
                    break
                if int.from_bytes(frame[:4], "big") == 1:
                    pending = page[:100]
                if int.from_bytes(frame[4:8], "big"):  # a commit: what it wrote counts
                    found = pending or found
            return found
    except OSError:
        return None


def others_of(path: Path) -> list[str]:
    """The views, triggers and indexes of an SQLite file other than those its primary keys make."""
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro&immutable=1"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as connection:
            return [row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type != 'table' AND name NOT LIKE 'sqlite_autoindex_%'")]
    except sqlite3.DatabaseError:
        return ["(unreadable schema)"]


#: Written into the SQLite header (``PRAGMA application_id``): the bytes "DBPA".  A file that carries
#: another program's id is never opened for writing.
APPLICATION_ID = 0x44425041


#: The layout of the tables (``PRAGMA user_version``); a file with a larger one was written by a newer
#: version of this program and is refused rather than misread.
SCHEMA_VERSION = 1


# The tables and columns of the schema: a store written before the header was stamped is recognised by them.
_TABLES = {"requests": {"request_key", "description"},
           "samples": {"request_key", "sample_index", "text", "token_logprobs", "created"},
           "embeddings": {"embedder_key", "text_hash", "vector"},
           "batch_requests": {"custom_id", "kind", "target", "item"}}


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _read_header(path: Path) -> bytes | None:
    """The first 100 bytes of ``path`` (the SQLite header), read without opening it as a database."""
    try:
        with open(path, "rb") as handle:
            return handle.read(100)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ValueError(f"`store`: {path} cannot be read ({error.strerror}); give another path.") from None


def _tables_of(path: Path) -> dict[str, set[str]] | None:
    """The tables (and their columns) of an SQLite file, read without writing anything next to it
    (``immutable=1``: no journal, no lock file); None when it cannot be read as a database."""
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro&immutable=1"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as connection:
            names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return {name: {row[1] for row in connection.execute(f'PRAGMA table_info("{name}")')} for name in names}
    except sqlite3.DatabaseError:
        return None


def writable(folder: Path) -> bool:
    """Whether files can be created in ``folder`` (tried, since root ignores permission bits but not a
    read-only mount or an immutable folder)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def opens_for_writing(path: Path) -> bool:
    """Whether ``path`` opens for writing (opened, not written: its bytes stay as they are)."""
    try:
        os.close(os.open(path, os.O_RDWR))
        return True
    except OSError:
        return False


def recognise(path: Path) -> bool:
    """Refuse (ValueError) a file at ``path`` that is not this program's store, reading only; True when the file
    is already stamped as a store of this schema version."""
    header = _read_header(path)
    where = f"`store`: {path}"
    wal = Path(f"{path}-wal")
    if not header:  # no file, or an empty one: a new store, unless a journal beside it belongs to another one
        if wal.exists() and wal.stat().st_size:
            raise ValueError(f"{where} is empty but has a write-ahead log ({wal.name}) of another database "
                             "beside it; both are left untouched: give a new file path.")
        return False
    if not header.startswith(_SQLITE_MAGIC) or len(header) < 100:
        raise ValueError(f"{where} is not a sample store (not an SQLite database); give a new file path, or "
                         "delete the file if it is a broken store.")
    # The header in the file, or a newer one committed to its write-ahead log and not yet copied back (a
    # writer killed before its checkpoint): SQLite reads the log's page 1, and so do we, without opening it.
    header = committed_page_one(wal) or header
    application_id = int.from_bytes(header[68:72], "big")
    version = int.from_bytes(header[60:64], "big")
    if application_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise ValueError(f"{where} was written by a newer version of DBPA Explorer (store schema {version}; "
                             f"this version reads up to {SCHEMA_VERSION}); upgrade, or give another path.")
        return version == SCHEMA_VERSION
    if application_id != 0:
        raise ValueError(f"{where} is another program's SQLite database (application id {application_id:#x}); "
                         "it is left untouched: give a new file path.")
    if wal.exists() and wal.stat().st_size:
        # An unstamped database whose log holds changes: its tables may sit only in the log, which a
        # read-only look at the file cannot see, so it cannot be told from another program's.
        raise ValueError(f"{where} is not a sample store (no DBPA application id, and changes waiting in its "
                         f"write-ahead log {wal.name}); it is left untouched: give a new file path.")
    tables = _tables_of(path)
    if tables is None:
        raise ValueError(f"{where} is not a sample store (a damaged or encrypted SQLite file); give a new file "
                         "path.")
    # A store written before the header was stamped has exactly our tables (requests and samples at least),
    # each with exactly our columns, and nothing else: no view, trigger or index of its own.
    foreign = {name: columns for name, columns in tables.items()
               if name not in _TABLES or columns != _TABLES[name]}
    foreign |= {name: set() for name in others_of(path)}
    foreign |= {name: set() for name in ("requests", "samples") if name not in tables}
    if foreign or version not in (0, SCHEMA_VERSION):
        listed = ", ".join(sorted(foreign)) or f"schema version {version}"
        raise ValueError(f"{where} is not a sample store: it holds other tables or columns ({listed}); it is "
                         "left untouched: give a new file path.")
    return False  # a store written before the header was stamped: stamped now
