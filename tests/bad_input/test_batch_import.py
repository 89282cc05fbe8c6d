"""Batch import trusts nothing in its file: each line is checked against what the export wrote.

A bad line is refused on its own, with its number and reason, and the good lines around it are stored;
the summary says "imported N, refused M (reasons)" and the exit code says whether anything was refused
(0 none, 3 some, 2 all).  Property-based tests drive the line validator with arbitrary bytes and with
lines built from every part of a result.
"""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbpa_core.audit.batch import FAILURE_REASONS, LineFailure, export_requests
from dbpa_core.audit.spec import load_spec
from dbpa_core.data.store import SampleStore

from .conftest import assert_clean, cli, simulated_spec, write_spec

NOWHERE = "http://127.0.0.1:9/v1"
K = 3
MAX_LINE_BYTES = 64 * 2**20  # the README's bound on a result line


def validate_line(raw, number, expected):
    from dbpa_core.audit.batch import validate_line as the_validator  # here: each case fails on its own without it

    return the_validator(raw, number, expected)


def Expected(**fields):  # noqa: N802 - stands for the class
    from dbpa_core.audit.batch import Expected as the_class

    return the_class(**fields)


def chat_line(custom_id, content="a good answer"):
    return {"id": "b", "custom_id": custom_id, "error": None, "response": {"status_code": 200, "request_id": "r", "body": {
        "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": content}}]}}}


def embedding_line(custom_id, vectors):
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return {"id": "b", "custom_id": custom_id, "error": None,
            "response": {"status_code": 200, "request_id": "r", "body": {"object": "list", "data": data}}}


@pytest.fixture
def exported(tmp_path):
    """A SPEC of the openai backend (k = 3, 3 arms), its 9 request ids exported from a fresh store."""
    spec = write_spec(tmp_path, simulated_spec(sampler={"backend": "openai", "model": "m", "base_url": NOWHERE},
                                               k=K, embedder={"name": "openai", "model": "e", "base_url": NOWHERE,
                                                              "batch_size": 2}))
    store = SampleStore(tmp_path / "s.sqlite")
    ids = [r.custom_id for r in export_requests(load_spec(spec), store=store).requests]
    assert len(ids) == 3 * K
    return spec, store, ids


def stored_texts(store):
    with sqlite3.connect(store.path) as connection:
        return sorted(text for (text,) in connection.execute("SELECT text FROM samples"))


def run_import(tmp_path, store, lines: list[bytes], *extra):
    results = tmp_path / "results.jsonl"
    results.write_bytes(b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines))
    return cli("batch", "import", results, "--store", store.path, *extra)


def encoded(record) -> bytes:
    return json.dumps(record).encode()


# One bad line among good ones: (the line, the reason it is refused for).
BAD_LINES = {
    "index beyond k (forged)": (lambda ids: encoded(chat_line(ids[0].rpartition("-")[0] + f"-{K}")), "out_of_range"),
    "huge index": (lambda ids: encoded(chat_line(ids[0].rpartition("-")[0] + "-" + "9" * 12)), "unknown"),
    "5 000-digit index": (lambda ids: encoded(chat_line(ids[0].rpartition("-")[0] + "-" + "7" * 5000)), "unknown"),
    "negative index": (lambda ids: encoded(chat_line(ids[0].rpartition("-")[0] + "--1")), "unknown"),
    "leading zero": (lambda ids: encoded(chat_line(ids[0].rpartition("-")[0] + "-01")), "unknown"),
    "arabic-indic digit": (lambda ids: encoded(chat_line(ids[0].rpartition("-")[0] + "-\u0661")), "unknown"),
    "never exported": (lambda ids: encoded(chat_line("dbpa-s-" + "f" * 40 + "-0")), "unknown"),
    "id of 10 000 chars": (lambda ids: encoded(chat_line("dbpa-s-" + "a" * 10_000)), "unknown"),
    "id not a string": (lambda ids: encoded({**chat_line("x"), "custom_id": 7}), "malformed"),
    "invalid UTF-8": (lambda ids: encoded(chat_line(ids[1]))[:-3] + b'\xed\xa0\x80"}}', "malformed"),
    "lone surrogate in the text": (lambda ids: encoded(chat_line(ids[1], "half \ud800 a character")), "malformed"),
    "nested 100 000 deep": (lambda ids: b"[" * 100_000 + b"]" * 100_000, "malformed"),
    "completion of 2 MB": (lambda ids: encoded(chat_line(ids[1], "x" * (2 * 2**20))), "too_large"),
    "truncated": (lambda ids: encoded(chat_line(ids[1]))[:50], "malformed"),
    "content not text": (lambda ids: encoded(chat_line(ids[1], {"text": "nested"})), "malformed"),
    "status 200 without body": (lambda ids: encoded({"custom_id": ids[1], "response": {"status_code": 200}}),
                                "malformed"),
    "status a string": (lambda ids: encoded({"custom_id": ids[1], "response": {"status_code": "200", "body": {}}}),
                        "error"),
    "a request line": (lambda ids: encoded({"custom_id": ids[1], "method": "POST", "url": "/v1/chat/completions",
                                            "body": {}}), "malformed"),
}


@pytest.mark.parametrize("case", BAD_LINES, ids=BAD_LINES)
def test_one_bad_line_never_costs_the_others(tmp_path, exported, case):
    spec, store, ids = exported
    make, reason = BAD_LINES[case]
    good = [encoded(chat_line(custom_id, f"good {n}")) for n, custom_id in enumerate(ids[2:], start=2)]
    outcome = assert_clean(run_import(tmp_path, store, [good[0], make(ids), *good[1:]], "--spec", spec), 3,
                           one_error=False)
    assert f"imported {len(good)}, refused 1 (1 {reason})." in outcome.out
    assert f"1 × {FAILURE_REASONS[reason]}: line 2;" in outcome.out
    assert stored_texts(store) == sorted(f"good {n}" for n in range(2, 3 * K))


def test_a_line_longer_than_the_cap_is_skipped_without_holding_it(tmp_path, exported):
    import tracemalloc

    _, store, ids = exported
    results = tmp_path / "results.jsonl"
    with results.open("wb") as out:
        out.write(encoded(chat_line(ids[0], "y" * (MAX_LINE_BYTES + 2**20))) + b"\n")
        out.write(encoded(chat_line(ids[1], "fine")) + b"\n")
    tracemalloc.start()
    try:
        outcome = assert_clean(cli("batch", "import", results, "--store", store.path), 3, one_error=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "imported 1, refused 1 (1 too_large)." in outcome.out and stored_texts(store) == ["fine"]
    assert peak < 1.5 * MAX_LINE_BYTES  # the line was read up to the cap, never whole


def test_exit_codes_say_whether_anything_was_refused(tmp_path, exported):
    _, store, ids = exported
    assert assert_clean(run_import(tmp_path, store, [encoded(chat_line(ids[0]))]), 0).out.startswith(
        "results.jsonl: imported 1, refused 0.")
    outcome = assert_clean(run_import(tmp_path, store, [b"not json", b"{}"]), 2, one_error=False)
    assert "imported 0, refused 2 (2 malformed)." in outcome.out


@pytest.mark.parametrize("what", ["a folder", "empty", "blank lines only", "missing"])
def test_a_results_path_that_is_not_a_results_file(tmp_path, exported, what):
    _, store, _ = exported
    path = tmp_path / "results.jsonl"
    if what == "a folder":
        path.mkdir()
    elif what != "missing":
        path.write_text("" if what == "empty" else "\n \n\n")
    outcome = assert_clean(cli("batch", "import", path, "--store", store.path), 2)
    assert "results.jsonl" in outcome.error


# ----------------------------------------------------------------------------- embeddings
@pytest.fixture
def embedding_export(tmp_path, exported):
    """The samples imported, then the /v1/embeddings lines exported (texts in lines of 2)."""
    spec, store, ids = exported
    run_import(tmp_path, store, [encoded(chat_line(c, f"text {n}")) for n, c in enumerate(ids)])
    requests = export_requests(load_spec(spec), store=store, embeddings=True).requests
    assert [len(r.body["input"]) for r in requests] == [2, 1] * 3
    return spec, store, requests


BAD_VECTORS = {
    "mixed dimension in a line": [[1.0, 0.0, 0.0], [1.0, 0.0]],
    "NaN": [[float("nan"), 1.0, 0.0], [1.0, 0.0, 0.0]],
    "infinity": [[float("inf"), 1.0, 0.0], [1.0, 0.0, 0.0]],
    "all zeros": [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]],
    "one vector for two texts": [[1.0, 0.0, 0.0]],
    "numbers as strings": [["1", "0", "0"], [1.0, 0.0, 0.0]],
    "another dimension than the store's": [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]],
}


@pytest.mark.parametrize("case", BAD_VECTORS, ids=BAD_VECTORS)
def test_embedding_lines_that_would_poison_the_store(tmp_path, embedding_export, case):
    _, store, requests = embedding_export
    good = embedding_line(requests[0].custom_id, [[1.0, 2.0, 0.0], [0.0, 1.0, 2.0]])
    lines = [encoded(good), encoded(embedding_line(requests[2].custom_id, BAD_VECTORS[case]))]
    outcome = assert_clean(run_import(tmp_path, store, lines), 3, one_error=False)
    assert "refused 1 (1 bad_vector)" in outcome.out and "line 2" in outcome.out
    vectors = store.get_embeddings(f"openai:{NOWHERE}:e", requests[0].body["input"] + requests[2].body["input"])
    assert len(vectors) == 2 and all(v.shape == (3,) and abs(float(v @ v) - 1) < 1e-5 for v in vectors.values())


def test_embedding_index_values_must_be_each_text_once(tmp_path, embedding_export):
    _, store, requests = embedding_export
    line = embedding_line(requests[0].custom_id, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    line["response"]["body"]["data"][1]["index"] = 0
    outcome = assert_clean(run_import(tmp_path, store, [encoded(line)]), 2, one_error=False)
    assert "1 bad_vector" in outcome.out and "index" in outcome.out


# ----------------------------------------------------------------------------- property-based
def expected_for(ids, spec_keys=None) -> Expected:
    registered = {custom_id: ("sample", {"backend": "openai", "model": "m", "prompt": "p", "n": n}, n % K)
                  for n, custom_id in enumerate(ids)}
    return Expected(registered=registered, spec_keys=spec_keys, k=K if spec_keys is not None else None)


IDS = [f"dbpa-s-{'ab' * 20}-{n}" for n in range(K)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.binary(max_size=300))
def test_property_arbitrary_bytes_never_raise(raw):
    outcome = validate_line(raw, 1, expected_for(IDS))
    assert isinstance(outcome, LineFailure) and outcome.reason in FAILURE_REASONS and outcome.line == 1


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=4), max_leaves=12)
CUSTOM_IDS = st.one_of(st.sampled_from(IDS), st.text(max_size=70), st.integers(),
                       st.builds(lambda i: f"dbpa-s-{'ab' * 20}-{i}", st.integers(-10, 10**12)),
                       st.builds(lambda i: f"dbpa-s-{'cd' * 20}-{i}", st.integers(0, 5)))
CONTENTS = st.one_of(st.text(max_size=50), st.none(), JSON_VALUES, st.just("x" * (2**20 + 1)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(custom_id=CUSTOM_IDS, content=CONTENTS, status=st.sampled_from([200, 200, 400, 500, "200", None]),
       error=st.one_of(st.none(), JSON_VALUES), with_spec=st.booleans())
def test_property_an_accepted_line_names_an_exported_slot_and_holds_storable_text(custom_id, content, status,
                                                                                     error, with_spec):
    spec_keys = {"cd" * 20: {"backend": "openai", "model": "m", "prompt": "other"}} if with_spec else None
    record = {"custom_id": custom_id, "error": error, "response": {"status_code": status, "body": {
        "choices": [{"message": {"content": content}}]}}}
    try:
        raw = json.dumps(record).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return
    outcome = validate_line(raw, 7, expected_for(IDS, spec_keys))
    if isinstance(outcome, LineFailure):
        assert outcome.reason in FAILURE_REASONS and outcome.line == 7
        return
    assert type(outcome).__name__ == "Accepted" and outcome.kind == "sample"
    assert error is None and status == 200
    assert custom_id in IDS or (with_spec and custom_id.startswith("dbpa-s-" + "cd" * 20))
    assert 0 <= outcome.item < K and isinstance(outcome.value, str) and outcome.value.strip()
    assert len(outcome.value.encode("utf-8")) <= 2**20


@settings(max_examples=300, deadline=None)
@given(vectors=st.lists(st.lists(st.floats(width=32) | st.integers(-5, 5), min_size=1, max_size=5), min_size=1,
                        max_size=3))
def test_property_accepted_vectors_are_finite_unit_and_of_one_dimension(vectors):
    custom_id = "dbpa-e-" + "0" * 40
    expected = Expected(registered={custom_id: ("embedding", "openai:x:e", [f"t{i}" for i in range(len(vectors))])},
                        dimensions={"openai:x:e": 3})
    outcome = validate_line(json.dumps(embedding_line(custom_id, vectors)).encode(), 1, expected)
    if isinstance(outcome, LineFailure):
        assert outcome.reason in FAILURE_REASONS
        return
    rows = np.asarray(outcome.value)
    assert rows.shape == (len(vectors), 3) and np.all(np.isfinite(rows))
    assert all(math.isclose(float(row @ row), 1.0, rel_tol=1e-5) for row in rows)
