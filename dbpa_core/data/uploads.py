"""Reading samples that users bring: CSV or JSONL with an arm and a text (or an embedding).

Every problem is reported with the row and the column to fix; nothing is
dropped or converted silently.  An empty text is the user's data and is kept
as an output, with a warning that counts them (a sampler never stores one).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._validation import DIMENSION_WHY, MAX_DIMENSION, MAX_SAMPLES, SAMPLES_WHY, check_completion_text

#: Largest file read (the app's upload limit, ``server.maxUploadSize`` in .streamlit/config.toml, is the same).
MAX_BYTES = 20 * 1024 * 1024
#: Most rows of a file; each arm holds at most :data:`dbpa_core._validation.MAX_SAMPLES` of them.
MAX_ROWS = 20_000


@dataclass(frozen=True, eq=False)
class SampleTable:
    """Outputs grouped by arm, in file order.

    Attributes
    ----------
    texts : dict of arm -> list of str
    embeddings : dict of arm -> (k, dim) array, or None when the file has none
    warnings : tuple of str
        Things kept as they are but worth knowing (e.g. how many texts are empty).
    """

    texts: dict
    embeddings: dict | None = field(default=None, repr=False)
    warnings: tuple[str, ...] = ()
    #: Rows without a `text` (a file of embeddings): their texts are "" placeholders, not outputs.
    missing_texts: int = 0
    filename: str = ""

    @property
    def arms(self) -> list[str]:
        return list(self.texts)

    def require_texts(self, purpose: str) -> None:
        """Refuse a text-only measure (BLEU, ROUGE-L, the themes of --explain) on rows that carry no text:
        it would be computed on empty strings and read as a result."""
        if self.missing_texts:
            raise ValueError(f"{self.filename or 'the file'}: {purpose} needs the output texts, but "
                             f"{self.missing_texts:,} row(s) have only an `embedding`; add a `text` column, or "
                             "choose an embedding similarity (cosine, neg_l1, neg_l2).")


def _parse_embedding(value, where: str) -> list[float]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            raise ValueError(f"{where}: `embedding` must be a JSON list of numbers, e.g. [0.1, -0.2].") from None
    if not isinstance(value, list) or not value or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                                          for v in value):
        raise ValueError(f"{where}: `embedding` must be a non-empty list of numbers.")
    if len(value) > MAX_DIMENSION:
        raise ValueError(f"{where}: `embedding` has {len(value):,} numbers; at most {MAX_DIMENSION:,} "
                         f"({DIMENSION_WHY}).")
    try:
        vector = [float(v) for v in value]
    except OverflowError:
        raise ValueError(f"{where}: `embedding` holds a number too large for a float.") from None
    if not np.all(np.isfinite(vector)):
        raise ValueError(f"{where}: `embedding` contains NaN or infinity.")
    if not any(vector):
        raise ValueError(f"{where}: `embedding` is all zeros: a vector without a direction cannot be compared; "
                         "re-embed that output.")
    return vector


def read_samples(data: bytes, filename: str, *, default_arm: str | None = None) -> SampleTable:
    """Parse an uploaded CSV or JSONL file of outputs.

    Parameters
    ----------
    data : bytes
        File contents (UTF-8).
    filename : str
        Its name; ``.csv`` or ``.jsonl``/``.json``/``.ndjson`` decides the format.
    default_arm : str, optional
        Arm of every row when the file has no ``arm`` column (one file per arm).

    Returns
    -------
    SampleTable
    """
    rows = _table_rows(data, filename, ("arm", "text"), one_of=("text", "embedding"))

    texts: dict[str, list[str]] = {}
    vectors: dict[str, list[list[float]]] = {}
    has_embeddings = any("embedding" in row for _, row in rows)
    if default_arm is None and rows and not any("arm" in row for _, row in rows):
        # The header (or every JSON line) lacks the column: say so, not "row 2" as if one row were at fault.
        lacking = ("the header has no `arm` column" if filename.lower().endswith(".csv")
                   else "no line has an `arm` field")
        found = ", ".join(f"`{key}`" for key in rows[0][1]) or "none"
        raise ValueError(f"{filename}: {lacking} (found: {found}); add an `arm` naming each output's arm "
                         "(e.g. original / perturbed), or rename the column that does.")
    dimension, missing = None, 0
    for where, row in rows:
        arm = row.get("arm", default_arm)
        if arm is None or str(arm).strip() == "":
            raise ValueError(f"{where}: column `arm` is missing or empty; name the arm of every output "
                             "(e.g. original / perturbed).")
        arm = str(arm).strip()
        text = row.get("text")
        if text is None and not has_embeddings:
            raise ValueError(f"{where}: column `text` is missing; each row needs the output text.")
        if text is not None and not isinstance(text, str):
            # A number, boolean or list is not an output text; str() would test "nan" or "True".
            raise ValueError(f"{where}: `text` must be a string; got {type(text).__name__} {text!r:.40}. "
                             "Quote the output text.")
        if text is not None and (problem := check_completion_text(text)):
            raise ValueError(f"{where}: `text`: {problem}.")
        missing += text is None
        texts.setdefault(arm, []).append("" if text is None else text)
        if len(texts[arm]) > MAX_SAMPLES:
            raise ValueError(f"{where}: arm {arm!r} has more than {MAX_SAMPLES:,} outputs, the most a test takes "
                             f"({SAMPLES_WHY}); keep a random subset of each arm.")
        if has_embeddings:
            if "embedding" not in row or row["embedding"] in ("", None):
                raise ValueError(f"{where}: column `embedding` is empty; give every row an embedding or none.")
            vector = _parse_embedding(row["embedding"], where)
            if dimension is None:
                dimension = len(vector)
            elif len(vector) != dimension:
                raise ValueError(f"{where}: `embedding` has {len(vector)} numbers but earlier rows have {dimension}.")
            vectors.setdefault(arm, []).append(vector)
    embeddings = {arm: np.asarray(v, dtype=np.float64) for arm, v in vectors.items()} if has_embeddings else None
    notes = []
    empty = {arm: sum(1 for t in arm_texts if not t.strip()) for arm, arm_texts in texts.items()}
    if not has_embeddings and any(empty.values()):
        counts = ", ".join(f"{n} of {len(texts[arm])} in arm {arm!r}" for arm, n in empty.items() if n)
        notes.append(f"{filename}: {sum(empty.values())} empty text(s) ({counts}) are kept as outputs; remove "
                     "them if they are failed calls rather than answers.")
    return SampleTable(texts, embeddings, tuple(notes), missing, filename)


def read_sample_file(path: str | Path, *, default_arm: str | None = None) -> SampleTable:
    """:func:`read_samples` on a file, read at most :data:`MAX_BYTES` + 1 bytes so that an endless
    or huge file (``/dev/zero``) is refused without filling memory."""
    from .files import check_kind

    path = Path(path)
    check_kind(path, path.name, folder_ok=True)  # type before open: a named pipe or a device is never opened
    if not path.exists():
        raise ValueError(f"{path}: file not found.")
    if path.is_dir():
        raise ValueError(f"{path}: is a folder; give a .jsonl or .csv file.")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror}).") from None
    return read_samples(data, path.name, default_arm=default_arm)


def _decode(data: bytes, filename: str) -> str:
    """The file's text, after the size limit and the UTF-8 check."""
    if len(data) > MAX_BYTES:
        raise ValueError(f"{filename}: the file is larger than the limit of {MAX_BYTES // 2**20} MB. "
                         "Split it or keep only the columns that are needed.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{filename}: not UTF-8 text (byte {error.start}); save the file as UTF-8.") from None


#: The csv module refuses a cell over 131,072 characters; a cell holds at most a completion (1 MB) or an
#: embedding of :data:`MAX_DIMENSION` numbers written out, so the bound is raised to what the file may hold.
CSV_FIELD_LIMIT = 2**21
csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))

_CSV_TOKENS = re.compile(r'""|"|\r\n|\r|\n')


def _check_csv_framing(content: str, filename: str) -> None:
    """Refuse a CSV whose rows cannot be told apart without guessing, naming the row: a quote left open at the
    end of the file (it would swallow every row after it into one text), and line ends that are mixed or bare
    carriage returns outside quotes (\r\n and \n are both fine, one style per file)."""
    quoted, opened_at, row, style = False, 0, 1, None
    for token in _CSV_TOKENS.finditer(content):
        mark, start = token.group(), token.start()
        if mark.startswith('"'):
            # a quote opens a cell only at its start; inside one, "" is a quote and " closes it
            if quoted:
                quoted = mark == '""'
            elif mark == '"' and (start == 0 or content[start - 1] in ",\r\n"):
                quoted, opened_at = True, row
            continue
        if quoted:
            continue
        if mark == "\r":
            raise ValueError(f"{filename}, row {row}: the line ends in a bare carriage return (\\r); save the "
                             "file with \\n or \\r\\n line ends.")
        if style is None:
            style = mark
        elif mark != style and token.end() < len(content):
            raise ValueError(f"{filename}, row {row + 1}: the line ends are mixed (\\r\\n and \\n in one file); "
                             "save the file with one kind of line end.")
        row += 1
    if quoted:
        raise ValueError(f"{filename}, row {opened_at}: a quote (\") opened in this row is never closed, so every "
                         "row after it would be read as one text; close the quote (a quote inside a quoted text is "
                         'written "").')


def _csv_rows(content: str, filename: str, columns: tuple[str, ...] = ("arm", "text"),
              one_of: tuple[str, ...] = ("text", "embedding")):
    """CSV rows of a table with ``columns``, at least one of ``one_of`` among them."""
    _check_csv_framing(content, filename)
    reader = csv.DictReader(io.StringIO(content, newline=""))
    try:
        names = reader.fieldnames
    except csv.Error as error:
        raise ValueError(f"{filename}, row 1: not readable as CSV ({error}); check the header.") from None
    if names is None:
        raise ValueError(f"{filename}: empty CSV; the first line must name the columns ({', '.join(columns)}).")
    fields = [f.strip().lower() for f in reader.fieldnames]
    if not set(one_of) & set(fields):
        alternatives = "".join(f" (or `{name}`)" for name in one_of[1:])
        raise ValueError(f"{filename}: no column `{one_of[0]}`{alternatives}; found {', '.join(reader.fieldnames)}.")
    rows = []
    number = 1
    try:
        for number, raw in enumerate(reader, start=2):
            if None in raw:
                raise ValueError(f"{filename}, row {number}: more values than column names; quote texts that "
                                 "contain commas.")
            rows.append((f"{filename}, row {number}", {k.strip().lower(): v for k, v in raw.items()}))
    except csv.Error as error:
        # e.g. a field over the csv module's 131,072-character limit, or an unclosed quote swallowing the file
        raise ValueError(f"{filename}, row {number + 1}: not readable as CSV ({error}); check the quoting of "
                         "that row.") from None
    return rows


def _jsonl_rows(content: str, filename: str):
    stripped = content.strip()
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise ValueError(f"{filename}: not valid JSON ({error.msg} at line {error.lineno}).") from None
        except RecursionError:
            raise ValueError(f"{filename}: nested too deeply to be a list of samples.") from None
        if not isinstance(items, list):
            raise ValueError(f"{filename}: a JSON file must be a list of objects like "
                             '{"arm": "original", "text": "…"}, or one object per line (JSONL).')
        lines = [(f"{filename}, item {i + 1}", item) for i, item in enumerate(items)]
    else:
        lines = []
        # "\n" only: str.splitlines would also split inside a JSON string at U+2028, U+0085 or a form feed
        for number, line in enumerate(content.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                lines.append((f"{filename}, line {number}", json.loads(line)))
            except json.JSONDecodeError as error:
                raise ValueError(f"{filename}, line {number}: not valid JSON ({error.msg}).") from None
            except RecursionError:
                raise ValueError(f"{filename}, line {number}: nested too deeply to be a sample (an object like "
                                 '{"arm": "original", "text": "…"}).') from None
    rows = []
    for where, item in lines:
        if not isinstance(item, dict):
            raise ValueError(f"{where}: expected an object like {{\"arm\": \"original\", \"text\": \"…\"}}.")
        rows.append((where, {str(k).lower(): v for k, v in item.items()}))
    return rows


def read_target_responses(data: bytes, filename: str) -> dict[str, str]:
    """Responses of an audited API: JSONL/CSV rows with `prompt` and `text` → {prompt: text}.

    The first response per prompt is used (the RUT takes one target response per prompt).
    """
    content = _decode(data, filename)
    rows = _csv_rows(content, filename) if filename.lower().endswith(".csv") else _jsonl_rows(content, filename)
    responses: dict[str, str] = {}
    for where, row in rows:
        prompt, text = row.get("prompt"), row.get("text")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"{where}: column `prompt` is missing or empty; give the prompt each response answers.")
        if not isinstance(text, str):
            raise ValueError(f"{where}: column `text` is missing; give the API's response.")
        responses.setdefault(prompt, text)
    if len(responses) < 2:
        raise ValueError(f"{filename}: responses to at least 2 different prompts are needed; found {len(responses)}.")
    return responses


def read_rows(data: bytes, filename: str, *, columns: tuple[str, ...]) -> list[tuple[str, dict]]:
    """Rows of any uploaded CSV or JSONL table, for readers with their own columns (stability items).

    Parameters
    ----------
    columns : tuple of str
        The table's columns, first the one every CSV must have (named in the
        message when it is missing).

    Returns
    -------
    list of (where, row)
        ``where`` names the file and line for messages; ``row`` maps
        lower-case column names to values.
    """
    return _table_rows(data, filename, columns, one_of=columns[:1])


def _table_rows(data: bytes, filename: str, columns: tuple[str, ...], *, one_of: tuple[str, ...]):
    """The rows of an uploaded CSV (with ``columns``, one of ``one_of`` at least) or JSONL file, bounded."""
    content = _decode(data, filename)
    lower = filename.lower()
    if lower.endswith(".csv"):
        rows = _csv_rows(content, filename, columns, one_of=one_of)
    elif lower.endswith((".jsonl", ".ndjson", ".json")):
        rows = _jsonl_rows(content, filename)
    else:
        raise ValueError(f"{filename}: unsupported file type; upload a .csv or .jsonl file.")
    if not rows:
        raise ValueError(f"{filename}: the file has no rows.")
    if len(rows) > MAX_ROWS:
        raise ValueError(f"{filename}: {len(rows):,} rows; the limit is {MAX_ROWS:,}.")
    return rows
