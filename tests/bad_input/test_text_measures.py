"""Text-only measures on inputs without text: BLEU, ROUGE-L and the themes of --explain read the outputs'
words; on a file that carries only embeddings they are refused (exit 2), never computed on empty strings."""

from __future__ import annotations

import json

import pytest

from dbpa_core.data.uploads import read_samples

from .conftest import assert_clean, cli, write_jsonl


def embedding_files(tmp_path, *, text_in_a: bool = False):
    a = write_jsonl(tmp_path / "a.jsonl", ({"embedding": [1.0, 0.1 * i, 0.0], **({"text": f"a {i}"} if text_in_a
                                                                                 else {})} for i in range(6)))
    b = write_jsonl(tmp_path / "b.jsonl", ({"embedding": [0.1 * i, 1.0, 0.0]} for i in range(6)))
    return a, b


@pytest.mark.parametrize("option", [["--similarity", "bleu"], ["--similarity", "rouge_l"], ["--similarity", "BLEU"],
                                    ["--explain"]], ids=["bleu", "rouge_l", "BLEU", "explain"])
def test_a_text_measure_on_embeddings_only_files_is_refused(tmp_path, option):
    a, b = embedding_files(tmp_path)
    json_out = tmp_path / "r.json"
    outcome = assert_clean(cli("test", a, b, *option, "--json", json_out), 2)
    assert "needs the output texts" in outcome.error and "a.jsonl" in outcome.error
    assert not json_out.exists()


def test_one_arm_with_texts_is_not_enough(tmp_path):
    a, b = embedding_files(tmp_path, text_in_a=True)
    outcome = assert_clean(cli("test", a, b, "--similarity", "rouge_l"), 2)
    assert "b.jsonl" in outcome.error and "6 row(s) have only an `embedding`" in outcome.error


def test_a_file_with_a_few_rows_missing_their_text(tmp_path):
    rows = [{"text": f"answer {i}", "embedding": [1.0, 0.1 * i]} for i in range(5)] + [{"embedding": [1.0, 1.0]}]
    a = write_jsonl(tmp_path / "a.jsonl", rows)
    b = write_jsonl(tmp_path / "b.jsonl", [{"text": f"other {i}", "embedding": [0.1 * i, 1.0]} for i in range(6)])
    assert "1 row(s) have only an `embedding`" in assert_clean(cli("test", a, b, "--similarity", "bleu"), 2).error
    assert_clean(cli("test", a, b, "--similarity", "cosine"), 0)  # the embeddings themselves are fine


def test_with_texts_the_text_measures_run(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", ({"text": f"the seasons come from the tilt {i}"} for i in range(6)))
    b = write_jsonl(tmp_path / "b.jsonl", ({"text": f"mars has seasons too {i}"} for i in range(6)))
    assert_clean(cli("test", a, b, "--similarity", "bleu", "--n-resamples", 100), 0)


def test_the_app_refuses_them_too():
    from dbpa_core.audit import uploaded_arms

    rows = [{"arm": arm, "embedding": [1.0, float(i)]} for arm in ("x", "y") for i in range(4)]
    table = read_samples("".join(json.dumps(r) + "\n" for r in rows).encode(), "e.jsonl")
    with pytest.raises(ValueError, match="e.jsonl: the text similarity 'rouge_l' needs the output texts"):
        uploaded_arms(table, "x", "y", similarity="rouge_l")
    assert uploaded_arms(table, "x", "y", similarity="cosine")[0].embeddings.shape == (4, 2)
