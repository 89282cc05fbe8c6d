"""Tests of dbpa_core.data.uploads: uploaded samples, with errors that name the row and the column."""

import json

import numpy as np
import pytest

from dbpa_core.data.uploads import MAX_BYTES, read_samples


def test_csv_and_jsonl():
    csv_bytes = b'arm,text\noriginal,"Stop smoking, take a statin."\nperturbed,A joke.\noriginal,\n'
    table = read_samples(csv_bytes, "s.csv")
    assert table.arms == ["original", "perturbed"]
    assert table.texts["original"] == ["Stop smoking, take a statin.", ""]  # empty output kept
    lines = "\n".join(json.dumps({"arm": a, "text": t}) for a, t in [("x", "a"), ("y", "b"), ("x", "c")])
    assert read_samples(lines.encode(), "s.jsonl").texts == {"x": ["a", "c"], "y": ["b"]}


def test_embeddings_column():
    rows = [{"arm": "a", "embedding": [1, 0]}, {"arm": "b", "embedding": [0, 1]}]
    table = read_samples(json.dumps(rows).encode(), "e.json")
    np.testing.assert_array_equal(table.embeddings["a"], [[1.0, 0.0]])


def test_default_arm():
    assert read_samples(b'{"text": "x"}\n', "a.jsonl", default_arm="A").texts == {"A": ["x"]}


@pytest.mark.parametrize(("data", "name", "match"), [
    (b"arm,text\noriginal,ok\n,missing arm\n", "s.csv", r"s.csv, row 3: column `arm`"),
    (b"arm,words\noriginal,ok\n", "s.csv", "no column `text`"),
    (b'{"arm": "a", "text": "x"}\nnot json\n', "s.jsonl", r"s.jsonl, line 2: not valid JSON"),
    (b'{"arm": "a"}\n', "s.jsonl", r"line 1: column `text` is missing"),
    (b'[1, 2]', "s.json", r"item 1: expected an object"),
    (b'{"arm": "a", "embedding": [1, 2]}\n{"arm": "b", "embedding": [1]}\n', "s.jsonl", "line 2: `embedding` has 1"),
    (b'{"arm": "a", "embedding": "[1, NaN]"}\n', "s.jsonl", "NaN"),
    (b'{"arm": "a", "embedding": "oops"}\n', "s.jsonl", "JSON list of numbers"),
    (b"", "s.csv", "empty CSV"),
    (b"\n", "s.jsonl", "no rows"),
    (b"\xff\xfe", "s.csv", "not UTF-8"),
    (b"x", "s.txt", "upload a .csv or .jsonl"),
    (b"arm,text\na,b,c\n", "s.csv", "more values than column names"),
])
def test_bad_files(data, name, match):
    with pytest.raises(ValueError, match=match):
        read_samples(data, name)


def test_size_limit():
    with pytest.raises(ValueError, match="the limit is"):
        read_samples(b"x" * (MAX_BYTES + 1), "big.csv")


def test_target_responses():
    from dbpa_core.data.uploads import read_target_responses

    data = b'{"prompt": "a", "text": "x"}\n{"prompt": "b", "text": "y"}\n{"prompt": "a", "text": "z"}\n'
    assert read_target_responses(data, "t.jsonl") == {"a": "x", "b": "y"}
    with pytest.raises(ValueError, match="line 1: column `prompt`"):
        read_target_responses(b'{"text": "x"}\n', "t.jsonl")
    with pytest.raises(ValueError, match="at least 2 different prompts"):
        read_target_responses(b'{"prompt": "a", "text": "x"}\n', "t.jsonl")
