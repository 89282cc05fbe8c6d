"""The app's pages on bad input (AppTest): never a traceback, always an error that says what is wrong, and
never a secret on the page — a bad upload, a credential in the sidebar's URL, a server that misbehaves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from servers import Reply, misbehaving_server

from .conftest import SECRET

REPO = Path(__file__).resolve().parents[2]
KEY = "hunter2-Pa55w0rd-in-the-url"


def start(tmp_path, monkeypatch, page: str, **sidebar) -> AppTest:
    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(REPO / "dbpa_app" / "app.py"), default_timeout=300)
    for key, value in sidebar.items():
        at.session_state[key] = value
    # straight on the page (app.py and the page only, as its URL opens it): the home page's draw before it cost
    # every case seconds (issue 46)
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, at.exception
    return at


def shown(at: AppTest) -> str:
    """Every message and text the page displays (widgets' own values left out: they are what the user typed)."""
    parts = []
    for kind in ("error", "warning", "info", "success", "caption", "markdown", "text", "code", "exception", "json"):
        parts += [str(element.value) for element in getattr(at, kind)]
    return "\n".join(parts)


def assert_no_traceback_and_no_secret(at: AppTest, *secrets) -> None:
    assert not at.exception, [e.value for e in at.exception]
    text = shown(at)
    assert "Traceback" not in text and 'File "' not in text, text[-2000:]
    for secret in secrets:
        assert secret not in text and secret[-6:] not in text, text[-2000:]


def jsonl(rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def arms(**extra):
    return [{"arm": arm, "text": f"{arm} {i}", **extra} for arm in ("a", "b") for i in range(5)]


BAD_UPLOADS = {  # name → (file name, bytes, what the error says)
    "empty": ("x.jsonl", b"", "no rows"),
    "not UTF-8": ("x.jsonl", b"\xff\xfe\x00garbage\n", "not UTF-8"),
    "binary named .csv": ("x.csv", bytes(range(256)) * 8, "UTF-8"),
    "lone surrogate": ("x.jsonl", b'{"arm": "a", "text": "half \\ud800"}\n{"arm": "b", "text": "x"}\n', "line 1"),
    "nested 100 000 deep": ("x.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested too deeply"),
    "one arm": ("x.jsonl", jsonl({"arm": "a", "text": f"t{i}"} for i in range(6)), "exactly two values"),
    "NaN embedding": ("x.jsonl", b'{"arm": "a", "embedding": [NaN, 1]}\n{"arm": "b", "embedding": [1, 1]}\n',
                      "NaN"),
    "mixed dimensions": ("x.jsonl", jsonl([{"arm": "a", "embedding": [1.0, 0.0]},
                                           {"arm": "b", "embedding": [1.0, 0.0, 2.0]}]), "line 2"),
    "zero vector": ("x.jsonl", jsonl([{"arm": "a", "embedding": [0.0, 0.0]}, {"arm": "b", "embedding": [1.0, 2.0]}]),
                    "line 1"),
    "20 001 rows": ("x.jsonl", jsonl({"arm": "ab"[i % 2], "text": f"t{i}"} for i in range(20_001)), "20,000"),
    "CSV without an arm column": ("x.csv", b"text,label\nhello,1\nworld,2\n", "`arm`"),
    "a key in a cell": ("x.jsonl", jsonl([{"arm": "a", "text": f"Authorization: Bearer {SECRET}"}]), "two values"),
}


@pytest.mark.parametrize("case", BAD_UPLOADS, ids=BAD_UPLOADS)
def test_a_bad_upload_is_an_error_on_the_page(tmp_path, monkeypatch, case):
    name, data, says = BAD_UPLOADS[case]
    at = start(tmp_path, monkeypatch, "byo_samples")
    at.file_uploader(key="byo_file").set_value((name, data, "application/octet-stream")).run()
    assert_no_traceback_and_no_secret(at, SECRET)
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and says in errors[0], errors
    assert not at.get("metric")  # no result from a file that was refused


def test_a_text_measure_on_a_file_without_texts_is_refused_on_the_page(tmp_path, monkeypatch):
    rows = [{"arm": arm, "embedding": [1.0, 0.1 * i + (arm == "b")]} for arm in ("a", "b") for i in range(6)]
    at = start(tmp_path, monkeypatch, "byo_samples")
    at.file_uploader(key="byo_file").set_value(("e.jsonl", jsonl(rows), "application/json")).run()
    at.selectbox(key="byo_similarity").set_value("bleu").run()
    at.button(key="byo_run").click().run()
    assert_no_traceback_and_no_secret(at)
    assert any("needs the output texts" in e.value for e in at.error), [e.value for e in at.error]
    assert not [m for m in at.metric if m.label.startswith("Decision")]


FAULTS = {  # a server that answers every call so → what the page's error says
    "401 repeating the key": (Reply({"error": {"message": f"Incorrect API key provided: {SECRET}"}}, status=401),
                              "401"),
    "500s": (Reply({"error": {"message": "boom"}}, status=500), "HTTP 500"),
    "malformed JSON": (Reply(b'{"choices": [', content_type="application/json"), "not valid JSON"),
    "HTML login page": (Reply(b"<!doctype html><title>Sign in</title>", content_type="text/html"), "not JSON"),
    "cut connection": (Reply(hangup=True), "connection"),
}


@pytest.mark.parametrize("case", FAULTS, ids=FAULTS)
def test_a_misbehaving_server(tmp_path, monkeypatch, case):
    """The key typed into the sidebar: the page says which URL failed and why, without the key."""
    reply, says = FAULTS[case]
    with misbehaving_server(lambda n, r: reply) as (url, requests):
        at = start(tmp_path, monkeypatch, "audit_one", backend="openai", openai_base_url=url, openai_api_key=SECRET)
        at.number_input(key="one_k").set_value(4).run()
        at.button(key="one_run").click().run()
    assert requests  # the server was reached
    assert_no_traceback_and_no_secret(at, SECRET)
    errors = [e.value for e in at.error]
    assert any(says in e and url in e for e in errors), errors
    assert not [m for m in at.metric if m.label.startswith("Decision")]


def test_credentials_in_the_sidebars_url_are_refused_unshown(tmp_path, monkeypatch):
    with misbehaving_server(lambda n, r: Reply({}, status=500)) as (url, requests):
        at = start(tmp_path, monkeypatch, "audit_one", backend="openai",
                   openai_base_url=url.replace("http://", f"http://alice:{KEY}@"), openai_api_key=SECRET)
        at.number_input(key="one_k").set_value(4).run()
        at.button(key="one_run").click().run()
    assert not requests  # refused before any call
    assert_no_traceback_and_no_secret(at, SECRET, KEY)
    assert any("holds a credential" in e.value and url in e.value for e in at.error), [e.value for e in at.error]


@pytest.mark.parametrize("url", ["not a url", "ftp://127.0.0.1/v1", f"http://alice:{KEY}@", "http://[::1/v1"],
                         ids=["words", "ftp", "no host", "broken IPv6"])
def test_a_bad_base_url_in_the_sidebar(tmp_path, monkeypatch, url):
    at = start(tmp_path, monkeypatch, "audit_one", backend="openai", openai_base_url=url, openai_api_key=SECRET)
    at.button(key="one_run").click().run()
    assert_no_traceback_and_no_secret(at, SECRET, KEY)
    assert any("base_url" in e.value or "Base URL" in e.value for e in at.error), [e.value for e in at.error]


TYPED_PROMPTS = {  # what is typed into the perturbed prompt → what the page says
    "only spaces": ("   \n\t ", "Both prompts are needed"),
    "a 2 MB prompt": ("why? " * 400_000, "at most 1 MB"),
    "a key pasted in": (f"Authorization: Bearer {SECRET} what causes the seasons?", "holds a credential"),
}


@pytest.mark.parametrize("case", TYPED_PROMPTS, ids=TYPED_PROMPTS)
def test_a_bad_typed_prompt_is_an_error_on_the_page(tmp_path, monkeypatch, case):
    typed, says = TYPED_PROMPTS[case]
    at = start(tmp_path, monkeypatch, "audit_one")
    at.radio(key="one_source").set_value("Type both prompts").run()
    at.text_area(key="one_x1").set_value(typed).run()
    if [b for b in at.button if b.key == "one_run"]:  # an empty prompt takes the button away
        at.button(key="one_run").click().run()
    assert_no_traceback_and_no_secret(at, SECRET)
    errors = [e.value for e in at.error]
    assert any(says in e for e in errors), errors
    assert not [m for m in at.metric if m.label.startswith("Decision")]
