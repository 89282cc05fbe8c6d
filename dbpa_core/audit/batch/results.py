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

The file is not trusted: every line goes through :func:`validate_line`, which
checks it against what the export wrote — its ``custom_id`` must be one this
store registered, or name a request of the given SPEC with an index in
0 … k − 1; a completion must be valid text of at most 1 MB; embeddings must
match their texts in number, the store's dimension, and be finite and
non-zero — and a line longer than :data:`MAX_LINE_BYTES` is skipped without
being held in memory.  A bad line is refused on its own, with its number and
reason; the good lines around it are stored, in chunks, so that memory stays
bounded whatever the file's length.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...data.provenance import put_samples_meta
from ...data.store import request_key, text_hash
from ..runner import build_embedder
from .export import describing, spec_request_keys, spec_request_ks, stored_samples
from .lines import MAX_LINE_BYTES, Accepted, Expected, LineFailure, check_record, parse_line

#: Lines validated and stored together (one store transaction); a chunk also ends at 64 MB of lines.
CHUNK_LINES, CHUNK_BYTES = 500, 64 * 2**20


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

    @property
    def n_imported(self) -> int:
        """Lines whose result is in the store now (newly or already)."""
        return self.n_stored + self.n_already_stored


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes | None]]:
    """(number, bytes) of each non-blank line; None for a line over :data:`MAX_LINE_BYTES`, which is read past
    in pieces of 1 MB and never held whole."""
    with open(path, "rb") as handle:
        number = 0
        while piece := handle.readline(2**20):
            number += 1
            line = bytearray(piece)
            while not line.endswith(b"\n") and len(line) <= MAX_LINE_BYTES and (piece := handle.readline(2**20)):
                line += piece
            if len(line) > MAX_LINE_BYTES:
                del line  # what was read of it goes at once; the rest is skipped
                while not piece.endswith(b"\n") and (piece := handle.readline(2**20)):
                    pass
                yield number, None
            elif line.strip():
                yield number, bytes(line)


def _chunks(path: Path) -> Iterator[list[tuple[int, dict | LineFailure]]]:
    chunk, size = [], 0
    for number, raw in _raw_lines(path):
        chunk.append((number, parse_line(raw, number)))
        size += len(raw or b"")
        if len(chunk) >= CHUNK_LINES or size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def import_results(path: str | Path, *, store, spec=None) -> BatchImport:
    """Store the successful results of a batch output file in their slots.

    Parameters
    ----------
    path : str or Path
        An OpenAI Batch API output (or error) file, or vLLM ``run_batch`` output.
    store : SampleStore
        Where the samples go; the ``custom_id`` of each line is looked up
        among the lines this store exported.
    spec : AuditSpec or CompareBatchSpec, optional
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
    if not path.exists():
        raise ValueError(f"{path}: file not found; give the results file the batch engine wrote.")
    if not path.is_file():
        raise ValueError(f"{path}: not a regular file; give the results file the batch engine wrote.")
    expected = Expected(spec_keys=spec_request_keys(spec) if spec is not None else None,
                        k=spec_request_ks(spec) if spec is not None else None,
                        spec_embedder=describing(spec.request.embedder, build_embedder).key
                        if spec is not None and spec.embedder.get("name") == "openai" else None)
    failures, seen = [], set()
    n_lines = stored = already = differing = 0
    for chunk in _chunks(path):
        n_lines += len(chunk)
        expected.registered = store.batch_requests(record["custom_id"] for _, record in chunk
                                                   if isinstance(record, dict))
        accepted = []
        for number, record in chunk:
            outcome = record if isinstance(record, LineFailure) else _checked(record, number, expected, store)
            if isinstance(outcome, Accepted) and outcome.custom_id in seen:
                outcome = LineFailure(number, outcome.custom_id, "duplicate",
                                      f"{outcome.custom_id!r} was already imported from an earlier line.")
            if isinstance(outcome, LineFailure):
                failures.append(outcome)
                continue
            seen.add(outcome.custom_id)
            accepted.append(outcome)
            if outcome.kind == "embedding":  # later lines must match the first one's dimension
                expected.dimensions.setdefault(outcome.target, outcome.value.shape[1])
        new, old, changed = _store(store, accepted)
        stored, already, differing = stored + new, already + old, differing + changed
    if not n_lines:
        raise ValueError(f"{path}: the file is empty; give the results file the batch engine wrote.")
    return BatchImport(str(path), n_lines, stored, already, differing, tuple(failures))


def _checked(record: dict, number: int, expected: Expected, store) -> Accepted | LineFailure:
    """:func:`check_record`, with the dimension of an embedder's stored vectors looked up on first use."""
    registered = expected.registered.get(record["custom_id"])
    if registered is not None and registered[0] == "embedding" and registered[1] not in expected.dimensions:
        dimension = store.embedding_dimension(registered[1])
        if dimension is not None:
            expected.dimensions[registered[1]] = dimension
    return check_record(record, number, expected)


def _store(store, accepted: list[Accepted]) -> tuple[int, int, int]:
    """Store one chunk's accepted lines; (new, already stored, already stored with another text)."""
    samples: dict[str, list] = {}
    for line in accepted:
        if line.kind == "sample":
            samples.setdefault(request_key(line.target), []).append((line.target, line.item, line.value, line.meta))
    new_rows, new_meta, already, differing = [], [], 0, 0
    for rows in samples.values():
        present = stored_samples(store, rows[0][0], [index for _, index, _, _ in rows])
        for description, index, text, meta in rows:
            if index in present:
                already += 1
                differing += present[index][0] != text
            else:
                new_rows.append((description, index, text))
                new_meta.append((description, index, meta))
    stored = store.put_samples(new_rows) if new_rows else 0
    put_samples_meta(store, new_meta)  # beside the samples, as a live call keeps them
    by_embedder: dict[str, list[Accepted]] = {}
    for line in accepted:
        if line.kind == "embedding":
            by_embedder.setdefault(line.target, []).append(line)
    for embedder_key, lines in by_embedder.items():
        texts = [text for line in lines for text in line.item]
        rows = np.concatenate([line.value for line in lines])
        known = store.get_embeddings(embedder_key, texts)
        fresh = [i for i, text in enumerate(texts) if text_hash(text) not in known]
        if fresh:
            store.put_embeddings(embedder_key, [texts[i] for i in fresh], rows[fresh])
        stored, already = stored + len(fresh), already + len(texts) - len(fresh)
    return stored, already, differing
