"""What a store path is, read without opening it as a database: its kind (a regular file, or a device, a
named pipe, a socket, never opened), the SQLite header committed to its write-ahead log, and the schema
objects that are not tables.  Used by :class:`dbpa_core.data.store.SampleStore` before anything is written."""

from __future__ import annotations

import os
import sqlite3
import stat
import urllib.parse
from contextlib import closing
from pathlib import Path


def kind_of(path: Path) -> os.stat_result | None:
    """``os.stat`` of ``path`` (links followed), None when nothing is there; an unusable path is a ValueError."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ValueError(f"`store`: {path} cannot be used ({error.strerror}); give another file path.") from None


def non_regular(mode: int) -> str:
    return ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")


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
