"""Bad input, round four (issue 44's leftovers), by class, several inputs each:

- a store whose rows were changed outside this program: exit 2, a message naming the store file and the fix
  (never "buffer size must be a multiple of element size", never exit 3 "unexpected");
- a path too long for the system (a name over 255 bytes, or the whole over 4 096) given to ``--out``,
  ``--store`` or ``--json``: exit 2 naming the flag, before anything is computed or written.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dbpa_core.data.files import check_path_length
from dbpa_core.data.store import SampleStore
from dbpa_core.data.store_rows import DamagedStore

from .conftest import assert_clean, cli, simulated_spec, write_jsonl, write_spec

# ------------------------------------------------------------------ tampered rows
#: How each case changes one row, as a person with the sqlite3 shell might.
TAMPERED = {
    "a text that is binary": "UPDATE samples SET text = x'00ff41' WHERE rowid = 1",
    "log-probabilities that are not JSON": "UPDATE samples SET token_logprobs = '[1,' WHERE rowid = 1",
    "log-probabilities that are not a list": "UPDATE samples SET token_logprobs = '{\"a\": 1}' WHERE rowid = 1",
    "a vector of 5 bytes": "UPDATE embeddings SET vector = x'0102030405' WHERE rowid = 1",
    "a vector of 2 dimensions among 384": "UPDATE embeddings SET vector = x'0000803f0000803f' WHERE rowid = 1",
    "a vector stored as text": "UPDATE embeddings SET vector = 'abcd' WHERE rowid = 1",
    "a vector of NaN": "UPDATE embeddings SET vector = zeroblob(1536) | x'' WHERE rowid = 1",
}


@pytest.fixture(scope="module")
def good_store(tmp_path_factory):
    """A store holding every sample and embedding of one small simulated audit (drawn once per module)."""
    folder = tmp_path_factory.mktemp("good")
    spec = write_spec(folder, simulated_spec(perturbations=["mars"]))
    outcome = cli("audit", spec, "--store", folder / "store.sqlite", "--out", folder / "out")
    assert outcome.code == 0, outcome.text[-2000:]
    return spec, folder / "store.sqlite"


def tampered_copy(good: Path, folder: Path, sql: str) -> Path:
    path = folder / "tampered.sqlite"
    shutil.copy(good, path)
    with sqlite3.connect(path) as connection:
        if "zeroblob" in sql:  # NaN is not a literal of SQLite: its float32 bytes, written as a parameter
            dimension = connection.execute("SELECT length(vector) FROM embeddings LIMIT 1").fetchone()[0] // 4
            connection.execute("UPDATE embeddings SET vector = ? WHERE rowid = 1",
                               (np.full(dimension, np.nan, np.float32).tobytes(),))
        else:
            connection.execute(sql)
    connection.close()
    return path


@pytest.mark.parametrize("case", TAMPERED)
def test_a_tampered_row_is_reported_naming_the_store_and_the_fix(good_store, tmp_path, case):
    spec, good = good_store
    store = tampered_copy(good, tmp_path, TAMPERED[case])
    outcome = assert_clean(cli("audit", spec, "--store", store, "--out", tmp_path / "out"), 2)
    assert str(store) in outcome.error and "damaged row" in outcome.error, outcome.error
    assert "Move the file away" in outcome.error and "--store" in outcome.error
    assert not (tmp_path / "out").exists()  # no report of a run on damaged data


def test_the_store_api_raises_a_value_error_naming_the_file(good_store, tmp_path):
    """The Python API says the same (a ValueError), for samples and for vectors."""
    _, good = good_store
    with sqlite3.connect(good) as connection:
        description = json.loads(connection.execute("SELECT description FROM requests LIMIT 1").fetchone()[0])
        texts = [row[0] for row in connection.execute("SELECT text FROM samples")]
        (embedder_key,) = connection.execute("SELECT embedder_key FROM embeddings LIMIT 1").fetchone()
    connection.close()
    reads = {"a text that is binary": lambda store: store.get_samples(description, range(50)),
             "a vector of 5 bytes": lambda store: store.get_embeddings(embedder_key, texts),
             "a vector of NaN": lambda store: store.get_embeddings(embedder_key, texts)}
    for case, read in reads.items():
        store = SampleStore(tampered_copy(good, tmp_path, TAMPERED[case]))
        with pytest.raises(DamagedStore, match="damaged row") as raised:
            read(store)
        assert str(store.path) in str(raised.value) and isinstance(raised.value, ValueError)


# ------------------------------------------------------------------ paths too long
NAME = "n" * 300  # one name over NAME_MAX (255 bytes)
DEEP = "/".join(["d" * 200] * 25)  # a path over PATH_MAX (4 096 bytes), every name allowed


@pytest.fixture
def arms(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [{"text": t} for t in ("a b c", "a b d", "x y", "p q")])
    b = write_jsonl(tmp_path / "b.jsonl", [{"text": t} for t in ("m n", "o p", "q r s", "t u")])
    return a, b


@pytest.mark.parametrize("too_long", [NAME, DEEP, f"sub/{NAME}/x"], ids=["a name", "the whole", "a folder's name"])
def test_an_over_long_out_folder_is_bad_input_naming_the_flag(tmp_path, too_long):
    spec = write_spec(tmp_path, simulated_spec())
    before = sorted(p.name for p in tmp_path.iterdir())
    outcome = assert_clean(cli("audit", spec, "--out", too_long), 2)
    assert outcome.error.startswith("error: `--out`: the path is too long") and "shorter" in outcome.error
    assert len(outcome.error) < 300  # the length is said, the path is not echoed whole
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, no folder made


@pytest.mark.parametrize("too_long", [NAME + ".sqlite", DEEP], ids=["a name", "the whole"])
def test_an_over_long_store_is_bad_input_naming_the_flag(tmp_path, too_long):
    spec = write_spec(tmp_path, simulated_spec())
    outcome = assert_clean(cli("audit", spec, "--store", too_long, "--out", tmp_path / "out"), 2)
    assert outcome.error.startswith("error: `--store`: the path is too long"), outcome.error
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["test", "compare"])
@pytest.mark.parametrize("too_long", [NAME + ".json", DEEP], ids=["a name", "the whole"])
def test_an_over_long_json_is_bad_input_naming_the_flag(tmp_path, arms, command, too_long):
    a, b = arms
    argv = ["test", a, b] if command == "test" else ["compare", a, b, "--from", "jsonl"]
    outcome = assert_clean(cli(*argv, "--json", too_long), 2)
    assert outcome.error.startswith("error: `--json`: the path is too long"), outcome.error


@pytest.mark.parametrize("argv", [
    ["rut", "RUT_SPEC", "--out", NAME],
    ["batch", "export", "SPEC", "--out", NAME + ".jsonl"],
    ["batch", "fetch", "batch_abc", "--out", DEEP],
], ids=["rut --out", "batch export --out", "batch fetch --out"])
def test_every_command_names_its_own_over_long_out(tmp_path, argv):
    from dbpa_core.data.assets import ASSETS

    spec = write_spec(tmp_path, simulated_spec())
    argv = [str(ASSETS / "specs" / "rut_recorded.yaml") if a == "RUT_SPEC" else spec if a == "SPEC" else a
            for a in argv]
    outcome = assert_clean(cli(*argv), 2)
    assert outcome.error.startswith("error: `--out`: the path is too long"), outcome.error


def test_the_length_check_passes_paths_that_fit_and_names_its_parameter(tmp_path):
    fits = tmp_path / ("f" * 255) / "report.json"
    assert check_path_length(fits, "--out") == fits
    for too_long in (tmp_path / ("f" * 256), Path(DEEP)):
        with pytest.raises(ValueError, match="^`out`: the path is too long"):
            check_path_length(too_long, "out")
    with pytest.raises(ValueError, match="^`store`: the path is too long"):
        SampleStore(tmp_path / NAME)
    assert NAME not in [p.name for p in tmp_path.iterdir()]  # nothing made (exists() itself raises here)
