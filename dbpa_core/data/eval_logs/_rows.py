"""What every log reader shares: the row a reader yields, and bounded, checked reading of a log file.

Kept apart from the package's ``__init__`` so that the readers (``_promptfoo``, ``_lm_eval``, ``_inspect``,
``_jsonl``) import these helpers without importing the package that imports them (no import cycle).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..._redact import redact
from ..._validation import check_completion_text

#: Largest log file read (bytes; for an Inspect ``.eval`` zip, also the most its members may unpack to).
#: A log holding transcripts of a thousand samples is a few MB; 64 MB parsed as JSON is already ~1 GB of memory.
MAX_LOG_BYTES = 64 * 2**20


@dataclass(frozen=True)
class Row:
    """One output read by a format's reader: which prompt, which arm, the text or why there is none."""

    where: str             # "results.json, row 7" for messages
    prompt_id: str
    prompt: str
    arm: str
    text: str | None       # None when skipped
    skip: str | None = None  # "error: …" or "empty output"


# --------------------------------------------------------------------------- reading files, bounded
def check_file(path: str | Path) -> Path:
    """``path`` as an existing regular file of at most :data:`MAX_LOG_BYTES` (checked before opening it)."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: file not found; give the path of the log file.")
    if not path.is_file():
        raise ValueError(f"{path}: not a regular file (a folder, a pipe or a device); give the log file itself.")
    size = path.stat().st_size
    if size > MAX_LOG_BYTES:
        raise ValueError(f"{path.name}: {size / 2**20:,.0f} MB, over the limit of {MAX_LOG_BYTES // 2**20} MB; "
                         "split the run into smaller logs (fewer prompts per file).")
    return path


def read_bytes(path: Path) -> bytes:
    """The file's bytes, at most :data:`MAX_LOG_BYTES` (the file may have grown since :func:`check_file`)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_LOG_BYTES + 1)
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror}).") from None
    if len(data) > MAX_LOG_BYTES:
        raise ValueError(f"{path.name}: over the limit of {MAX_LOG_BYTES // 2**20} MB; split the run into "
                         "smaller logs.")
    return data


def decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{name}: not UTF-8 text (byte {error.start}); give the file as the tool wrote it.") from None


def parse_json(text: str, where: str, fix: str):
    """``json.loads`` with a one-line message naming ``where``, the line and ``fix``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
                         f"{fix}") from None
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to be a log; {fix}") from None


def shown(value, limit: int = 60) -> str:
    """A value from a log as it may appear in a message: redacted and cut short."""
    text = redact(value if isinstance(value, str) else json.dumps(value, default=str)[:limit * 2])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def output_text(value, where: str, field: str) -> str | None:
    """An output text as read from a log: a string (checked), or None for a missing output; anything else is
    refused (a number or an object is not an output text)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: `{field}` must be a text; got {type(value).__name__} {shown(value, 30)}. "
                         "Give the file as the tool wrote it (an output transformed into JSON or a number "
                         "cannot be compared as text).")
    if problem := check_completion_text(value):
        raise ValueError(f"{where}: `{field}`: {problem}.")
    return value
