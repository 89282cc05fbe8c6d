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
    # The header lacks `arm`: the file is named, not "row 2" as if one row were at fault, with the columns found.
    (b"group,text\na,ok\nb,fine\n", "s.csv", r"^s.csv: the header has no `arm` column \(found: `group`, `text`\)"),
    (b'{"group": "a", "text": "x"}\n', "s.jsonl", r"^s.jsonl: no line has an `arm` field"),
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
    with pytest.raises(ValueError, match="larger than the limit of 20 MB"):
        read_samples(b"x" * (MAX_BYTES + 1), "big.csv")


def test_target_responses():
    from dbpa_core.data.uploads import read_target_responses

    data = b'{"prompt": "a", "text": "x"}\n{"prompt": "b", "text": "y"}\n{"prompt": "a", "text": "z"}\n'
    assert read_target_responses(data, "t.jsonl") == {"a": "x", "b": "y"}
    with pytest.raises(ValueError, match="line 1: column `prompt`"):
        read_target_responses(b'{"text": "x"}\n', "t.jsonl")
    with pytest.raises(ValueError, match="at least 2 different prompts"):
        read_target_responses(b'{"prompt": "a", "text": "x"}\n', "t.jsonl")


@pytest.mark.parametrize(("value", "kind"), [(3, "int"), (2.5, "float"), (True, "bool"), (["a"], "list"),
                                             ({"a": 1}, "dict")])
def test_non_string_texts_are_refused_with_the_line(value, kind):
    data = "\n".join(json.dumps({"arm": "a", "text": t}) for t in ["fine", value]).encode()
    with pytest.raises(ValueError, match=f"s.jsonl, line 2: `text` must be a string; got {kind}"):
        read_samples(data, "s.jsonl")


def test_nan_text_is_refused():
    with pytest.raises(ValueError, match="line 1: `text` must be a string; got float nan"):
        read_samples(b'{"arm": "a", "text": NaN}\n', "s.jsonl")


def test_empty_texts_are_kept_and_counted():
    data = b'arm,text\na,one\na,\nb," "\nb,two\nb,\n'
    table = read_samples(data, "s.csv")
    assert table.texts == {"a": ["one", ""], "b": [" ", "two", ""]}
    assert table.warnings == ("s.csv: 3 empty text(s) (1 of 2 in arm 'a', 2 of 3 in arm 'b') are kept as outputs; "
                              "remove them if they are failed calls rather than answers.",)
    assert read_samples(b"arm,text\na,x\n", "s.csv").warnings == ()


def test_read_sample_file_is_bounded(tmp_path):
    import tracemalloc

    from dbpa_core.data.uploads import read_sample_file

    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="/dev/zero is a character device"):  # refused before it is opened
            read_sample_file("/dev/zero")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * MAX_BYTES
    with pytest.raises(ValueError, match="is a folder; give a .jsonl or .csv file"):
        read_sample_file(tmp_path)
    with pytest.raises(ValueError, match="file not found"):
        read_sample_file(tmp_path / "nope.jsonl")
    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "x"}\n')
    assert read_sample_file(path, default_arm="A").texts == {"A": ["x"]}
