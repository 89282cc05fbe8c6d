"""Reading a store's rows back: each value checked for the type and shape this program wrote.

A store is an ordinary SQLite file that any program (or a person with ``sqlite3``) can change.  A row
changed outside this program (a text that is not text, log-probabilities that are not JSON, a vector
whose bytes are not whole float32 numbers, or not of one length for one embedder) would otherwise end in
an error that names neither the file nor the fix ("buffer size must be a multiple of element size"), or
in a test run on damaged data.  Each is refused with :class:`DamagedStore` (a ``ValueError``: the command
line's exit 2), naming the store file, the table and what to do.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


class DamagedStore(ValueError):
    """A row of the sample store is not as this program wrote it; the message names the file and the fix."""


def damaged(path: Path, where: str, what: str) -> DamagedStore:
    """The error for a damaged row: which store, which row, what is wrong, and the two ways out."""
    return DamagedStore(f"the sample store {path} has a damaged row ({where}: {what}); it was changed outside "
                        "DBPA Explorer. Move the file away (or give another --store / $DBPA_STORE) and run again: "
                        "samples and embeddings are drawn again into a new store.")


def sample_text(path: Path, where: str, text) -> str:
    """A stored sample's text, which must be text (SQLite keeps whatever type a writer gave)."""
    if not isinstance(text, str):
        raise damaged(path, where, f"the text is {type(text).__name__} data, not text")
    return text


def logprobs(path: Path, where: str, raw) -> list | None:
    """Stored token log-probabilities: None, or a JSON list of numbers."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        raise damaged(path, where, "its log-probabilities are not JSON") from None
    if not isinstance(value, list) or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                              for v in value):
        raise damaged(path, where, "its log-probabilities are not a list of numbers")
    return value


def meta(path: Path, where: str, raw) -> dict:
    """A stored reply's meta (model, fingerprint, usage): a JSON object."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        raise damaged(path, where, "its meta is not JSON") from None
    if not isinstance(value, dict):
        raise damaged(path, where, "its meta is not a JSON object")
    return value


def json_value(path: Path, where: str, raw):
    """A stored JSON value (a batch request's target or item)."""
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        raise damaged(path, where, "it is not JSON") from None


def vectors(path: Path, embedder_key: str, rows) -> dict[str, np.ndarray]:
    """Stored embeddings by text digest: float32 vectors of one length, every value finite."""
    found, lengths = {}, set()
    for digest, blob in rows:
        where = f"embeddings of {embedder_key[:60]}"
        if not isinstance(blob, bytes) or not blob or len(blob) % 4:
            raise damaged(path, where, "a vector is not a whole number of float32 values")
        vector = np.frombuffer(blob, dtype=np.float32)
        if not np.isfinite(vector).all():
            raise damaged(path, where, "a vector holds NaN or infinite values")
        lengths.add(vector.size)
        if len(lengths) > 1:
            raise damaged(path, where, f"vectors of {min(lengths)} and {max(lengths)} dimensions")
        found[digest] = vector
    return found
