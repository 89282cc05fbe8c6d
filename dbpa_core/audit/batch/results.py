"""Importing a batch output file: every successful result into its store slot, every other line reported.

:func:`import_results` stores every successful completion (or embedding) in
its slot and reports every other line (error objects, null content, unknown
or foreign ``custom_id``, duplicates, malformed JSON) without storing it;
``python -m dbpa_core audit SPEC.yaml`` then finds every sample stored.

Output line, the "request output object":
``{"id": str, "custom_id": str, "response": {"status_code": int, "request_id": str, "body": {...}} | null,
"error": {"code": str, "message": str} | null}``; failed requests go to a
separate error file in the same format (OpenAI API reference, "The request
output object").  vLLM's runner reads and writes the same objects
(``BatchRequestInput``, ``BatchResponseData``, ``BatchRequestOutput`` in
``vllm/entrypoints/openai/run_batch.py``; docs "Offline Inference with the
OpenAI Batch file format").  It writes failures inline:
``response.status_code`` 400 with no body and ``error`` a string or an
``ErrorResponse`` object.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...data.store import request_key, text_hash
from ..runner import build_embedder
from .export import describing, spec_request_keys, stored_samples
from .ids import KEY_DIGITS, sample_slot

#: Why a result line was not stored, in plain words (keys of BatchImport.counts).
FAILURE_REASONS = {
    "malformed": "not a valid result line (not JSON, truncated, or without `custom_id` and `response.body`)",
    "error": "the engine reported an error for the request (an error object, or an HTTP status other than 200)",
    "null_content": "the response has no text (`content` null or empty: never a sample) or no embedding",
    "unknown": "a `custom_id` this store never exported (a result for a request that was not exported here)",
    "other_spec": "a request of another SPEC than the one given with --spec",
    "duplicate": "a second result for a `custom_id` already imported from this file",
}


@dataclass(frozen=True)
class LineFailure:
    """A result line that was not stored: its line number, ``custom_id``, reason (a
    key of :data:`FAILURE_REASONS`) and the engine's or parser's message."""

    line: int
    custom_id: str | None
    reason: str
    message: str


@dataclass(frozen=True)
class BatchImport:
    """What an import stored and what it refused.

    Attributes
    ----------
    path : str
    n_lines : int
        Non-blank lines read.
    n_stored : int
        Samples or embeddings newly written.
    n_already_stored : int
        Results for slots that were already filled (a second import of the
        same file lands here); the stored value is kept.
    n_differing : int
        Of those, results whose text differs from the stored one.
    failures : tuple of LineFailure
    """

    path: str
    n_lines: int
    n_stored: int
    n_already_stored: int
    n_differing: int
    failures: tuple[LineFailure, ...]

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(failure.reason for failure in self.failures))

    @property
    def complete(self) -> bool:
        return not self.failures


class _Refused(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


def _error_message(error) -> str:
    """The message of an output line's ``error`` (OpenAI object, vLLM string or ErrorResponse)."""
    if isinstance(error, dict):
        inner = error.get("error") if isinstance(error.get("error"), dict) else error
        code, message = inner.get("code") or inner.get("type"), inner.get("message")
        return f"{code}: {message}" if code and message else str(message or code or inner)
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
        raise _Refused("error", f"HTTP status {status} ({detail}).")
    if not isinstance(body, dict):
        raise _Refused("malformed", "`response.body` is missing.")
    return body


def _completion_text(body: dict) -> str:
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _Refused("malformed", "`response.body` has no `choices[0].message`; is this a chat-completions "
                                    "result?") from None
    if content is not None and not isinstance(content, str):
        raise _Refused("malformed", "`choices[0].message.content` is not a string.")
    if not (content or "").strip():
        # As in a live run (Sampler.sample): an empty reply (content filter, tool call) is not an output.
        raise _Refused("null_content", f"`choices[0].message.content` is {'null' if content is None else 'empty'} "
                                       f"(finish_reason {body['choices'][0].get('finish_reason')!r}).")
    return content


def _embedding_vectors(body: dict, n_texts: int) -> np.ndarray:
    from ...embedders.base import unit_rows
    from ...embedders.openai_compatible import response_vectors

    data = body.get("data")
    if not data:
        raise _Refused("null_content", "`response.body.data` holds no embedding.")
    try:
        vectors = response_vectors(data)
    except (KeyError, TypeError, ValueError):
        raise _Refused("malformed", "`response.body.data` is not a list of {index, embedding}.") from None
    if vectors.ndim != 2 or vectors.shape[0] != n_texts:
        raise _Refused("malformed", f"{vectors.shape[0] if vectors.ndim else 0} embeddings for {n_texts} texts.")
    try:
        return unit_rows(vectors, "the batch output")
    except RuntimeError as problem:
        raise _Refused("malformed", str(problem)) from None


def _read_lines(path: Path) -> list[tuple[int, dict | _Refused]]:
    if not path.is_file():
        raise ValueError(f"{path}: file not found; give the results file the batch engine wrote.")
    parsed = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as problem:
                parsed.append((number, _Refused("malformed", f"not valid JSON ({problem.msg}, column "
                                                             f"{problem.colno}; truncated?).")))
                continue
            if not isinstance(record, dict) or not isinstance(record.get("custom_id"), str):
                parsed.append((number, _Refused("malformed", "not an object with a string `custom_id`.")))
            elif "body" in record and "response" not in record:
                parsed.append((number, _Refused("malformed", "a request line, not a result: import the file the "
                                                             "batch engine wrote, not the one `batch export` wrote.")))
            else:
                parsed.append((number, record))
    if not parsed:
        raise ValueError(f"{path}: the file is empty; give the results file the batch engine wrote.")
    return parsed


def import_results(path: str | Path, *, store, spec=None) -> BatchImport:
    """Store the successful results of a batch output file in their slots.

    Parameters
    ----------
    path : str or Path
        An OpenAI Batch API output (or error) file, or vLLM ``run_batch`` output.
    store : SampleStore
        Where the samples go; the ``custom_id`` of each line is looked up
        among the lines this store exported.
    spec : AuditSpec, optional
        Accept only results of this SPEC's requests (others are reported as
        ``other_spec``); its sample slots are recognised even in a store that
        did not export them.

    Returns
    -------
    BatchImport
        Counts and every refused line; nothing refused is stored.  Slots
        already filled keep their value, so importing twice is harmless.
    """
    path = Path(path)
    parsed = _read_lines(path)
    registered = store.batch_requests(record["custom_id"] for _, record in parsed if isinstance(record, dict))
    spec_keys = spec_request_keys(spec) if spec is not None else None
    spec_embedder = describing(spec.request.embedder, build_embedder).key \
        if spec is not None and spec.embedder.get("name") == "openai" else None
    failures, seen = [], set()
    samples: dict[str, list] = defaultdict(list)  # request key → [(description, index, text)]
    vectors: dict[str, list] = defaultdict(list)  # embedder key → [(texts, vectors)]
    for number, record in parsed:
        custom_id = record.get("custom_id") if isinstance(record, dict) else None
        try:
            if isinstance(record, _Refused):
                raise record
            if custom_id in seen:
                raise _Refused("duplicate", f"{custom_id!r} was already imported from an earlier line.")
            kind, target, item = _slot(custom_id, registered, spec_keys, spec_embedder)
            body = _response_body(record)
            if kind == "sample":
                text = _completion_text(body)
                samples[request_key(target)].append((target, item, text))
            else:
                rows = _embedding_vectors(body, len(item))
                vectors[target].append((item, rows))
            seen.add(custom_id)
        except _Refused as refused:
            failures.append(LineFailure(number, custom_id, refused.reason, refused.message))
    stored, already, differing = _store_samples(store, samples)
    for embedder_key, batches in vectors.items():
        new, old = _store_embeddings(store, embedder_key, batches)
        stored, already = stored + new, already + old
    return BatchImport(str(path), len(parsed), stored, already, differing, tuple(failures))


def _slot(custom_id: str, registered: dict, spec_keys: dict | None, spec_embedder: str | None):
    """(kind, target, item) of a ``custom_id``; raises _Refused when it names no slot of this store/SPEC."""
    slot = sample_slot(custom_id) if spec_keys is not None else None
    if slot is not None and slot[0] in spec_keys:
        return "sample", spec_keys[slot[0]], slot[1]
    if custom_id not in registered:
        raise _Refused("unknown", f"{custom_id!r} was never exported from this store"
                                  + (" and names no request of the SPEC." if spec_keys is not None else
                                     "; give --spec to import into another store."))
    kind, target, item = registered[custom_id]
    if spec_keys is not None and (target != spec_embedder if kind == "embedding"
                                  else request_key(target)[:KEY_DIGITS] not in spec_keys):
        raise _Refused("other_spec", f"{custom_id!r} was exported for another SPEC (other prompts, model or "
                                     "settings); import it without --spec or with its own SPEC.")
    return kind, target, item


def _store_samples(store, samples: dict) -> tuple[int, int, int]:
    new_rows, already, differing = [], 0, 0
    for rows in samples.values():
        present = stored_samples(store, rows[0][0], [index for _, index, _ in rows])
        for description, index, text in rows:
            if index in present:
                already += 1
                differing += present[index][0] != text
            else:
                new_rows.append((description, index, text))
    return store.put_samples(new_rows), already, differing


def _store_embeddings(store, embedder_key: str, batches: list) -> tuple[int, int]:
    texts = [text for chunk, _ in batches for text in chunk]
    rows = np.concatenate([chunk_vectors for _, chunk_vectors in batches])
    known = store.get_embeddings(embedder_key, texts)
    new = [i for i, text in enumerate(texts) if text_hash(text) not in known]
    if new:
        store.put_embeddings(embedder_key, [texts[i] for i in new], rows[new])
    return len(new), len(texts) - len(new)
