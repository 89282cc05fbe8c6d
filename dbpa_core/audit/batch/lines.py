"""One line of a batch results file, checked against what the export wrote (never trusted as given).

:func:`validate_line` takes the bytes of one line and either accepts it into
a store slot (:class:`Accepted`) or refuses it with a reason
(:class:`LineFailure`, a key of :data:`FAILURE_REASONS`); it never raises,
whatever the bytes.  What it checks:

* the line: at most :data:`MAX_LINE_BYTES`, valid UTF-8, JSON that is not
  nested beyond the parser's limit, an object with a string ``custom_id``;
* the ``custom_id``: one this store registered at export, or (with
  ``--spec``) ``dbpa-s-<key>-<index>`` naming a request of the SPEC with an
  index in 0 … k − 1, written exactly as the export writes it;
* the response: no ``error``, status 200, a chat completion whose content is
  text of at most 1 MB (valid Unicode, so it can be stored), or one finite,
  non-zero embedding per text, all of the store's dimension for that
  embedder.

Messages quote the engine's error text shortened and redacted
(:func:`dbpa_core._validation.redact`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..._validation import MAX_DIMENSION, check_completion_text, shown
from ...data.store import request_key
from .ids import EMBEDDING_ID, KEY_DIGITS, sample_slot

#: Longest result line read (bytes): a chat result is a few kB, an embeddings line of 512 texts of 3 072
#: dimensions ≈ 33 MB.  A longer line is skipped as it is read, never held in memory.
MAX_LINE_BYTES = 64 * 2**20
#: Longest ``custom_id`` accepted (ours have at most 57 characters; OpenAI allows 64).
MAX_ID_CHARS = 64
#: Why a result line was not stored, in plain words (keys of BatchImport.counts).
FAILURE_REASONS = {
    "malformed": "not a valid result line (not JSON, truncated, nested too deeply, not valid UTF-8, or without "
                 "`custom_id` and `response.body`)",
    "too_large": f"a line longer than {MAX_LINE_BYTES // 2**20} MB, or a completion longer than 1 MB",
    "error": "the engine reported an error for the request (an error object, or an HTTP status other than 200)",
    "null_content": "the response has no text (`content` null or empty: never a sample) or no embedding",
    "unknown": "a `custom_id` this store never exported (a result for a request that was not exported here)",
    "out_of_range": "a `custom_id` naming a sample index outside the SPEC's 0 … k − 1",
    "other_spec": "a request of another SPEC than the one given with --spec",
    "bad_vector": "embeddings that do not fit: another dimension than the store's, NaN, infinite or all-zero "
                  "vectors, or not one per text",
    "duplicate": "a second result for a `custom_id` already imported from this file",
    "other_model": "a result produced by another model than the one its request named",
}


@dataclass(frozen=True)
class LineFailure:
    """A result line that was not stored: its line number, ``custom_id``, reason (a
    key of :data:`FAILURE_REASONS`) and the engine's or parser's message (never a credential)."""

    line: int
    custom_id: str | None
    reason: str
    message: str


@dataclass(frozen=True)
class Accepted:
    """A result line that fits a slot: ``kind`` "sample" (``target`` the request description, ``item`` the
    index, ``value`` the text) or "embedding" (``target`` the embedder key, ``item`` the texts, ``value``
    their unit vectors, float32)."""

    line: int
    custom_id: str
    kind: str
    target: object
    item: object
    value: object = field(repr=False)
    #: What a sample's reply said about itself (served model, fingerprint, usage), as a live call keeps it.
    meta: object = field(default=None, repr=False)


@dataclass
class Expected:
    """What the export wrote, against which :func:`validate_line` checks a line.

    Attributes
    ----------
    registered : mapping of custom_id → (kind, target, item)
        The lines this store exported (:meth:`~dbpa_core.data.store.SampleStore.batch_requests`).
    spec_keys : mapping of request-key prefix → description, or None
        With ``--spec``: the SPEC's requests, whose slots are accepted even if not registered.
    k : int, mapping of request-key prefix → int, or None
        The SPEC's samples per arm (indices 0 … k − 1), or per request (a compare SPEC's per-prompt k).
    spec_embedder : str or None
        The SPEC's embedder key (OpenAI-compatible embedders only).
    dimensions : dict of embedder key → int
        The dimension each embedder's vectors have (the store's, or the first accepted line's).
    """

    registered: Mapping[str, tuple] = field(default_factory=dict)
    spec_keys: Mapping[str, dict] | None = None
    k: int | Mapping[str, int] | None = None
    spec_embedder: str | None = None
    dimensions: dict[str, int] = field(default_factory=dict)


class _Refused(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


def _error_message(error) -> str:
    """The message of an output line's ``error`` (OpenAI object, vLLM string or ErrorResponse)."""
    if isinstance(error, dict):
        inner = error.get("error") if isinstance(error.get("error"), dict) else error
        code, message = inner.get("code") or inner.get("type"), inner.get("message")
        return f"{code}: {message}" if code and message else str(message or code or "no detail")
    return str(error)


def _response_body(record: dict) -> dict:
    """The response body of a successful output line; raises _Refused otherwise."""
    response = record.get("response")
    if record.get("error") is not None:
        raise _Refused("error", _error_message(record["error"]))
    if not isinstance(response, dict):
        raise _Refused("malformed", "`response` is missing and there is no `error`.")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        detail = _error_message(body["error"]) if isinstance(body, dict) and "error" in body else "no detail"
        raise _Refused("error", f"HTTP status {status if isinstance(status, int) else 'missing'} ({detail}).")
    if not isinstance(body, dict):
        raise _Refused("malformed", "`response.body` is missing.")
    return body


def _completion_text(body: dict) -> str:
    try:
        choice = body["choices"][0]
        content = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _Refused("malformed", "`response.body` has no `choices[0].message`; is this a chat-completions "
                                    "result?") from None
    if content is not None and not isinstance(content, str):
        raise _Refused("malformed", "`choices[0].message.content` is not a string.")
    if not (content or "").strip():
        # As in a live run (Sampler.sample): an empty reply (content filter, tool call) is not an output.
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        raise _Refused("null_content", f"`choices[0].message.content` is {'null' if content is None else 'empty'} "
                                       f"(finish_reason {str(reason)[:40]!r}).")
    problem = check_completion_text(content)
    if problem:
        raise _Refused("too_large" if "MB" in problem else "malformed", f"`choices[0].message.content`: {problem}.")
    return content


def _embedding_vectors(body: dict, n_texts: int, dimension: int | None) -> np.ndarray:
    from ...embedders.openai_compatible import response_vectors

    data = body.get("data")
    if not data:
        raise _Refused("null_content", "`response.body.data` holds no embedding.")
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise _Refused("malformed", "`response.body.data` is not a list of {index, embedding}.")
    if len(data) != n_texts:
        raise _Refused("bad_vector", f"{len(data)} embeddings for {n_texts} texts.")
    try:
        vectors = response_vectors(data)
    except (KeyError, TypeError) as problem:
        raise _Refused("malformed", f"`response.body.data` is not a list of {{index, embedding}} ({problem}).") \
            from None
    except ValueError as problem:
        raise _Refused("bad_vector", f"{problem}.") from None
    if dimension is not None and vectors.shape[1] != dimension:
        raise _Refused("bad_vector", f"vectors of dimension {vectors.shape[1]:,}, but this embedder's stored "
                                     f"vectors have {dimension:,} (at most {MAX_DIMENSION:,} in any case).")
    # Scaled to unit length in float64: in float32 the norm of a tiny (subnormal) vector underflows to 0.
    wide = vectors.astype(np.float64)
    unit = wide / np.linalg.norm(wide, axis=1, keepdims=True)
    if not np.all(np.isfinite(unit)):
        raise _Refused("bad_vector", "a vector cannot be scaled to unit length (too small or too large).")
    return unit.astype(np.float32)


def parse_line(raw: bytes | None, number: int) -> dict | LineFailure:
    """One line of a results file as a JSON object with a string ``custom_id``, or why it is not one.

    ``raw`` None stands for a line longer than :data:`MAX_LINE_BYTES` (skipped while reading).
    """
    def refuse(reason, message, custom_id=None):
        return LineFailure(number, custom_id, reason, message)

    if raw is None:
        return refuse("too_large", f"longer than {MAX_LINE_BYTES // 2**20} MB; skipped without reading it.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as problem:
        return refuse("malformed", f"not valid UTF-8 (byte {problem.start} of the line).")
    try:
        record = json.loads(text)
    except json.JSONDecodeError as problem:
        return refuse("malformed", f"not valid JSON ({problem.msg}, column {problem.colno}; truncated?).")
    except RecursionError:
        return refuse("malformed", "nested too deeply to be a result line.")
    if not isinstance(record, dict) or not isinstance(record.get("custom_id"), str):
        return refuse("malformed", "not an object with a string `custom_id`.")
    custom_id = record["custom_id"]
    if len(custom_id) > MAX_ID_CHARS or check_completion_text(custom_id):
        return refuse("unknown", f"a `custom_id` of {len(custom_id):,} characters names no exported request.")
    if "body" in record and "response" not in record:
        return refuse("malformed", "a request line, not a result: import the file the batch engine wrote, not "
                                   "the one `batch export` wrote.", custom_id)
    return record


def check_record(record: dict, number: int, expected: Expected) -> Accepted | LineFailure:
    """A parsed line (:func:`parse_line`) checked against what the export wrote (:class:`Expected`)."""
    custom_id = record["custom_id"]
    try:
        kind, target, item = _slot(custom_id, expected)
        body = _response_body(record)
        if kind == "sample":
            from ...samplers.openai_models import reply_meta

            _same_model(body, target)
            return Accepted(number, custom_id, kind, target, item, _completion_text(body), reply_meta(body))
        vectors = _embedding_vectors(body, len(item), expected.dimensions.get(target))
        return Accepted(number, custom_id, kind, target, item, vectors)
    except _Refused as refused:
        # An engine's message may quote the request's credentials; it is shortened and redacted.
        return LineFailure(number, custom_id, refused.reason, shown(refused.message[:300]))


def validate_line(raw: bytes | None, number: int, expected: Expected) -> Accepted | LineFailure:
    """One line of a results file, accepted into a slot or refused with a reason; never raises.

    Parameters
    ----------
    raw : bytes or None
        The line as read (None: longer than :data:`MAX_LINE_BYTES`).
    number : int
        Its 1-based line number, for the report.
    expected : Expected
        What the export wrote.

    Returns
    -------
    Accepted or LineFailure
    """
    record = parse_line(raw, number)
    return record if isinstance(record, LineFailure) else check_record(record, number, expected)


def _same_model(body: dict, target: dict) -> None:
    """Refuse a result whose ``model`` is not the one its request named: stored under the request's key, it
    would be replayed as that model's answer.  A dated snapshot of the model (``gpt-4o-mini-2024-07-18`` for
    ``gpt-4o-mini``) and a path ending in the name (a vLLM server) are the same model."""
    asked, answered = target.get("model") if isinstance(target, dict) else None, body.get("model")
    if not isinstance(asked, str) or answered is None:
        return
    if not isinstance(answered, str) or not (answered == asked or answered.startswith(f"{asked}-")
                                             or answered.endswith(f"/{asked}") or asked.endswith(f"/{answered}")):
        raise _Refused("other_model", f"the result was produced by {shown(str(answered)[:80])!r}, but the request "
                                      f"asked {asked!r}; it is not stored under that model.")


def _slot(custom_id: str, expected: Expected):
    """(kind, target, item) of a ``custom_id``; raises _Refused when it names no slot of this store/SPEC."""
    slot = sample_slot(custom_id)
    if slot is not None and expected.spec_keys is not None and slot[0] in expected.spec_keys:
        k = expected.k.get(slot[0]) if isinstance(expected.k, Mapping) else expected.k
        if k is not None and slot[1] >= k:
            raise _Refused("out_of_range", f"{custom_id!r} names sample {slot[1]:,}, but the SPEC has k = "
                                           f"{k} (indices 0 … {k - 1}).")
        return "sample", expected.spec_keys[slot[0]], slot[1]
    registered = expected.registered.get(custom_id)
    if registered is None or (slot is None and not EMBEDDING_ID.fullmatch(custom_id)):
        raise _Refused("unknown", f"{custom_id!r} was never exported from this store"
                                  + (" and names no request of the SPEC." if expected.spec_keys is not None else
                                     "; give --spec to import into another store."))
    kind, target, item = registered
    if expected.spec_keys is not None and (target != expected.spec_embedder if kind == "embedding"
                                           else request_key(target)[:KEY_DIGITS] not in expected.spec_keys):
        raise _Refused("other_spec", f"{custom_id!r} was exported for another SPEC (other prompts, model or "
                                     "settings); import it without --spec or with its own SPEC.")
    return kind, target, item


