"""Secrets in messages: one redaction function at every boundary (terminal, logs, exports, store, app).

A credential may reach a message by many roads: a URL's user:password@ (any scheme, or none), a query
parameter, a key typed into the wrong SPEC field, a YAML error's excerpt of the line, a server's 401
body that repeats the key's tail, an engine's error in a batch file.  None may come out.
"""

from __future__ import annotations

import json
import logging
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dbpa_core.samplers import EndpointError

from .conftest import SECRET, assert_clean, cli, simulated_spec, snapshot, write_spec

KEY = "Zq8xW2vB7nM4kL1pR6tY"  # a credential without any recognisable shape


def redact(text):
    from dbpa_core import redact as the_one_function  # imported here: each case fails on its own without it

    return the_one_function(text)

# Every form a credential takes in a text that might be shown (the credential is KEY or a shaped key).
FORMS = {
    "https userinfo": f"https://alice:{KEY}@api.example.com/v1",
    "http token-only userinfo": f"http://{KEY}@127.0.0.1:8000/v1",
    "upper-case scheme": f"HTTPS://bob:{KEY}@host/v1",
    "postgres url": f"postgres://user:{KEY}@db:5432/x",
    "redis url, empty user": f"redis://:{KEY}@cache:6379/0",
    "no scheme": f"alice:{KEY}@api.example.com/v1",
    "percent-encoded colon": f"https://alice%3A{KEY}@host/v1",
    "query api_key": f"http://host/v1?api_key={KEY}&model=m",
    "query key": f"https://host/v1?key={KEY}",
    "query access_token": f"https://host/v1?x=1&access_token={KEY}",
    "fragment token": f"https://host/v1#token={KEY}",
    "json api_key": f'{{"api_key": "{KEY}"}}',
    "yaml apiKey": f"apiKey: {KEY}",
    "env assignment": f"OPENAI_API_KEY={KEY}",
    "authorization bearer": f"Authorization: Bearer {KEY}",
    "bare bearer": f"sent Bearer {KEY} to the server",
    "x-api-key header": f"x-api-key: {KEY}",
    "password setting": f"password={KEY}",
    "client_secret": f"client_secret: '{KEY}'",
    "aws signature": f"https://bucket.s3.amazonaws.com/f?X-Amz-Signature={KEY}",
    "openai key in prose": "the key sk-proj-" + KEY + " was refused",
    "openai masked by the server": "Incorrect API key provided: sk-proj-****************" + KEY[-4:] + ".",
    "masked without prefix": "key ab12********" + KEY[-4:] + " is invalid",
    "github token": "ghp_" + KEY + "abcdefghij",
    "hugging face token": "hf_" + KEY + "abcdefghij",
    "aws access key id": "AKIA" + "Q" * 16,
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


@pytest.mark.parametrize("text", FORMS.values(), ids=FORMS.keys())
def test_redact_removes_every_form_of_credential(text):
    shown = redact(f"error: {text} (while calling)")
    for secret in (KEY, KEY[-4:] if "****" in text else KEY, "Q" * 16, "dozjgNryP4J3jVmNHl0w5N"):
        assert secret not in shown, shown
    assert redact(shown) == shown  # idempotent: a message can pass two boundaries


def test_registered_and_environment_secrets_go_whatever_their_form(monkeypatch):
    from dbpa_core._validation import register_secret

    register_secret("plain-words-key-9f8e7d")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "unshaped0value1234")
    text = "a server echoed plain-words-key-9f8e7d and unshaped0value1234, then its tail …e7d and …1234"
    shown = redact(text + " and the end of the first: " + "9f8e7d")
    assert "plain-words-key-9f8e7d" not in shown and "unshaped0value1234" not in shown and "9f8e7d" not in shown


def test_ordinary_messages_are_left_as_they_are():
    for text in ("`max_tokens` must be an integer >= 1; got 0.", "k: 20, n_resamples: 1000, seed: 0",
                 "http://127.0.0.1:8000/v1/chat/completions: HTTP 500: server error",
                 "the key was refused", "write to me@example.com", "ω = 0.25, p = 0.004"):
        assert redact(text) == text


# ----------------------------------------------------------------------------- property-based
SECRET_TEXT = st.text(string.ascii_letters + string.digits, min_size=12, max_size=40)
NOISE = st.text(string.ascii_letters + string.digits + " .,;()\n", max_size=40)
TEMPLATES = ["https://user:{s}@host.example/v1", "http://{s}@10.0.0.1:8000/v1", "user:{s}@host/v1",
             "http://h/v1?api_key={s}", "http://h/v1?a=1&token={s}", "Authorization: Bearer {s}",
             '"api_key": "{s}"', "secret={s}", "password: {s}", "X-Api-Key: {s}", "sk-proj-{s}", "sk-{s}{s}"]


@settings(max_examples=300, deadline=None)
@given(secret=SECRET_TEXT, before=NOISE, after=NOISE, template=st.sampled_from(TEMPLATES))
def test_property_no_form_survives_redaction(secret, before, after, template):
    assume(secret not in before and secret not in after)  # the secret appears once, in its form
    text = f"{before} {template.format(s=secret)} {after}"
    shown = redact(text)
    assert secret not in shown
    assert redact(shown) == shown


#: Words of the credential patterns, which prose uses too ("basic medical information", "the token budget").
TRIGGERS = ["basic", "bearer", "token", "digest", "authorization", "secret", "password", "key", "api"]
WORD = st.text(string.ascii_lowercase, min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(words=st.lists(WORD | st.sampled_from(TRIGGERS) | WORD.map(str.capitalize) |
                      st.sampled_from(TRIGGERS).map(str.capitalize), max_size=20))
def test_property_plain_prose_is_unchanged(words):
    text = " ".join(words)
    assert redact(text) == text


@pytest.mark.parametrize("text", [
    "I'll need to know some basic medical information about John.",  # a recorded SmolLM2 answer (cvd_nice)
    "Give a basic summary of the seasons.", "Keep the token budget small.", "Send a daily digest email.",
    "Basic Medical Questions", "The bearer bonds were lost."])
def test_prose_with_the_words_of_a_header_is_unchanged(text):
    assert redact(text) == text


@pytest.mark.parametrize("text", ["Authorization: Bearer lowercaseonlykeyvalue", '"authorization": "Basic dXNlcjpw"',
                                  f"Bearer {KEY}", "Basic dXNlcjpwYXNzd29yZA==", "token abcdefgh1"])
def test_an_authorization_value_is_redacted(text):
    shown = redact(text)
    assert "[REDACTED]" in shown and shown.split()[-1].strip('"') == "[REDACTED]", shown


@pytest.mark.parametrize("field", ["prompt", "system"])
@pytest.mark.parametrize("pasted", [f"Authorization: Bearer {SECRET}", f"use http://alice:{KEY}@host/v1",
                                    f"my key is {SECRET}", f"api_key={KEY}"])
def test_a_prompt_holding_a_credential_is_refused_unshown(field, pasted):
    """A prompt is stored with its samples and shown as sent: one holding a key is refused, in the message
    without it (the app and the command line build prompts the same way)."""
    from dbpa_core.audit.request import Prompt

    with pytest.raises(ValueError, match=f"`{field}` looks like it holds a credential") as caught:
        Prompt(**{"prompt": "What causes the seasons?", field: f"{pasted} what causes the seasons?"})
    assert SECRET not in str(caught.value) and KEY not in str(caught.value)


def test_no_shipped_prompt_is_taken_for_a_credential():
    from dbpa_core.audit.configs import SamplerConfig
    from dbpa_core.audit.request import AuditRequest
    from dbpa_core.data.scenarios import load_scenarios

    for scenario in load_scenarios().values():
        AuditRequest.from_scenario(scenario, sampler=SamplerConfig("simulated"))  # raises if one is refused


# ----------------------------------------------------------------------------- the boundaries
def test_endpoint_errors_never_carry_a_credential():
    error = EndpointError(f"http://u:{KEY}@host/v1", f"HTTP 401 (Incorrect API key provided: {SECRET[:8]}****"
                                                      f"{SECRET[-4:]}; you sent Bearer {SECRET})")
    assert KEY not in str(error) and SECRET not in str(error) and SECRET[-4:] not in str(error)
    assert error.url == "http://[REDACTED]@host/v1"


def test_a_key_in_the_spec_is_refused_without_being_shown(tmp_path):
    before = snapshot(tmp_path)
    for sampler in ({"backend": "openai", "model": "m", "api_key": SECRET},
                    {"backend": "openai", "model": "m", "base_url": f"http://u:{SECRET}@127.0.0.1:9/v1"},
                    {"backend": "openai", "model": "m", "base_url": f"http://127.0.0.1:9/v1?api_key={SECRET}"},
                    {"backend": "openai", "model": SECRET, "base_url": "http://127.0.0.1:9/v1"}):
        spec = write_spec(tmp_path, simulated_spec(sampler=sampler))
        outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o"), 2)
        assert "sampler" in outcome.error
    assert snapshot(tmp_path) == {**before, "spec.yaml": snapshot(tmp_path)["spec.yaml"]}  # no store, no report


def test_a_yaml_error_on_a_line_holding_a_key_does_not_quote_the_line(tmp_path):
    spec = write_spec(tmp_path, f"name: t\nsampler:\n  api_key: {SECRET}: oops\n")
    outcome = assert_clean(cli("audit", spec), 2)
    assert "line 3" in outcome.error and "not valid YAML" in outcome.error


def test_a_key_written_into_a_wrong_field_is_not_echoed(tmp_path):
    for spec in (simulated_spec(k=SECRET), simulated_spec(similarity=SECRET), simulated_spec(name=SECRET),
                 simulated_spec(perturbations=[SECRET]), simulated_spec(scenario=SECRET)):
        assert_clean(cli("audit", write_spec(tmp_path, spec)), 2)


def test_a_401_body_repeating_the_key_reaches_no_message_and_no_file(tmp_path):
    from servers import Reply, misbehaving_server

    masked = f"Incorrect API key provided: {SECRET[:8]}{'*' * 20}{SECRET[-4:]}. Your key {SECRET} is invalid."
    with misbehaving_server(lambda n, r: Reply({"error": {"message": masked}}, status=401)) as (url, _):
        spec = write_spec(tmp_path, simulated_spec(sampler={"backend": "openai", "model": "m", "base_url": url,
                                                            "max_retries": 0}))
        outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o"), 3)
    assert "HTTP 401" in outcome.error and "[REDACTED]" in outcome.error
    for file in tmp_path.rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes() and SECRET[-6:].encode() not in file.read_bytes()


def test_an_engine_error_quoting_the_key_is_redacted_in_the_import_report(tmp_path):
    from dbpa_core.audit.batch import export_requests
    from dbpa_core.audit.spec import load_spec
    from dbpa_core.data.store import SampleStore

    spec = write_spec(tmp_path, simulated_spec(sampler={"backend": "openai", "model": "m",
                                                        "base_url": "http://127.0.0.1:9/v1"}, k=2))
    store = SampleStore(tmp_path / "s.sqlite")
    ids = [r.custom_id for r in export_requests(load_spec(spec), store=store).requests]
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"custom_id": ids[0], "response": None, "error": {
        "code": "invalid_api_key", "message": f"Incorrect API key provided: {SECRET}"}}) + "\n")
    outcome = assert_clean(cli("batch", "import", results, "--store", tmp_path / "s.sqlite"), 2, one_error=False)
    assert "invalid_api_key: Incorrect API key provided: [REDACTED]" in outcome.out


def test_exported_settings_are_redacted(tmp_path):
    from dbpa_core.audit import AuditRequest, Prompt, PerturbedPrompt, run
    from dbpa_core.present.exports import write_reports
    from dbpa_core.present.records import family_record

    request = AuditRequest(Prompt("What causes the seasons?"), (PerturbedPrompt("p", "p", Prompt("Why seasons?")),),
                           k=4, n_resamples=20)
    family = run(request)
    record = family_record(family, name="t", settings={"note": f"called http://u:{SECRET}@h/v1?token={KEY}"})
    write_reports(family, record, tmp_path / "out")
    for file in (tmp_path / "out").iterdir():
        assert SECRET not in file.read_text() and KEY not in file.read_text()


@pytest.mark.unexpected_page_error
def test_the_app_shows_and_logs_errors_without_the_key(caplog):
    from dbpa_app.ui.components import guard

    with caplog.at_level(logging.ERROR, logger="dbpa_explorer"), guard():
        raise RuntimeError(f"boom while calling http://u:{SECRET}@h/v1 with Bearer {SECRET}")
    assert "boom" in caplog.text and SECRET not in caplog.text and SECRET[-6:] not in caplog.text


def test_the_http_clients_logs_never_hold_a_credential(caplog):
    """The openai client logs requests at debug level: once a client is made, those records are redacted."""
    from dbpa_core.samplers.endpoint_calls import make_client

    make_client(f"http://alice:{KEY}@127.0.0.1:9/v1", SECRET, 5.0)
    with caplog.at_level(logging.DEBUG, logger="openai"):
        logging.getLogger("openai").debug("Request options: %s", {"url": f"http://alice:{KEY}@h/v1",
                                                                   "headers": {"Authorization": f"Bearer {SECRET}"}})
        try:
            raise RuntimeError(f"failed with key {SECRET}")
        except RuntimeError:
            logging.getLogger("openai").exception("call failed")
    assert "Request options" in caplog.text and "call failed" in caplog.text
    assert KEY not in caplog.text and SECRET not in caplog.text


@pytest.mark.parametrize("url", [f"http://alice:{KEY}@[::1/v1", f"https://{KEY}@[fe80::1/v1?x=1", f"alice:{KEY}@[::1"])
def test_a_url_the_parser_cannot_read_is_still_redacted(url):
    """An unclosed IPv6 bracket makes urlsplit raise: the redaction must not (nor leak what precedes the "@")."""
    from dbpa_core._validation import check_base_url, has_credentials, redact_url

    assert KEY not in redact_url(url) and has_credentials(url)
    with pytest.raises(ValueError, match="`base_url`") as caught:
        check_base_url(url)
    assert KEY not in str(caught.value)


@pytest.mark.parametrize("where", ["original", "perturbed", "system"])
def test_a_key_in_a_spec_prompt_is_refused_with_its_key_and_line(tmp_path, where):
    pasted = f"What causes the seasons? Authorization: Bearer {SECRET}"
    original = {"prompt": pasted if where == "original" else "What causes the seasons?"}
    perturbed = {"id": "p", "label": "p", "prompt": pasted if where == "perturbed" else "Why seasons?"}
    if where == "system":
        perturbed["system"] = pasted
    spec = write_spec(tmp_path, {"name": "t", "sampler": {"backend": "simulated"}, "k": 4, "n_resamples": 20,
                                 "prompts": {"original": original, "perturbations": [perturbed]}})
    before = snapshot(tmp_path)
    outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o"), 2)
    key = {"original": "prompts.original.prompt", "perturbed": "prompts.perturbations[0].prompt",
           "system": "prompts.perturbations[0].system"}[where]
    assert f"`{key}` looks like it holds a credential" in outcome.error and ", line " in outcome.error
    assert snapshot(tmp_path) == before
