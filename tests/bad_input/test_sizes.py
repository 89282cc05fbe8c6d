"""Unbounded sizes: every size has a documented upper bound, checked before any work starts.

Library, command line, SPEC and app alike: an absurd k, B, batch size, number of perturbations, token
budget, concurrency, retry count, timeout, context or upload is refused at once (exit 2), and the
message says the bound and why.  A 20 000-row input is refused at once, never embedded.
"""

from __future__ import annotations

import json
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest

import dbpa_core as d
from dbpa_core.data.uploads import MAX_BYTES, MAX_ROWS, read_samples

from .conftest import assert_clean, cli, simulated_spec, snapshot, write_jsonl, write_spec

REPO = Path(__file__).resolve().parents[2]
# The bounds the README documents (section "Bad input").
MAX_SAMPLES, MAX_RESAMPLES, MAX_PERTURBATIONS, MAX_AUDIT_SAMPLES = 5_000, 1_000_000, 1_000, 500_000
MAX_TOKENS, MAX_CONCURRENCY, MAX_RETRIES, MAX_N_CTX, MAX_EMBED_BATCH = 32_768, 256, 20, 8_192, 512
OPENAI = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}


def prompts(m: int) -> dict:
    return {"original": {"prompt": "What causes the seasons?"},
            "perturbations": [{"id": f"p{i}", "prompt": f"Variant {i}: what causes the seasons?"} for i in range(m)]}


# (SPEC overrides, the key named, the bound quoted)
SPEC_CASES = {
    "k of a billion": ({"k": 10**9}, "`k`", f"<= {MAX_SAMPLES:,}"),
    "k just over": ({"k": MAX_SAMPLES + 1}, "`k`", "similarity matrix"),
    "B of ten million": ({"n_resamples": 10**7}, "`n_resamples`", f"<= {MAX_RESAMPLES:,}"),
    "k × B too much work": ({"k": 2000, "n_resamples": 100_000}, "`n_resamples`", "2·10¹⁰"),
    "a 5 000-digit number": ("k: " + "9" * 5000 + "\n", "", "cannot be read"),
    "sequential k_max": ({"k": None, "sequential": {"k_max": 10**8}}, "`sequential.k_max`", f"<= {MAX_SAMPLES:,}"),
    "sequential batch": ({"k": None, "sequential": {"batch_size": 10**8, "k_max": 10**8}},
                         "`sequential.batch_size`", f"<= {MAX_SAMPLES:,}"),
    "sequential work": ({"k": None, "sequential": {"k_max": 5000, "batch_size": 10}, "n_resamples": 1000},
                        "`n_resamples`", "2·10¹⁰"),
    "max_tokens": ({"sampler": {**OPENAI, "max_tokens": 10**9}}, "`sampler.max_tokens`", f"<= {MAX_TOKENS:,}"),
    "max_concurrency": ({"sampler": {**OPENAI, "max_concurrency": 10**6}}, "`sampler.max_concurrency`",
                        f"<= {MAX_CONCURRENCY:,}"),
    "max_retries": ({"sampler": {**OPENAI, "max_retries": 10**9}}, "`sampler.max_retries`", f"<= {MAX_RETRIES:,}"),
    "timeout": ({"sampler": {**OPENAI, "timeout": 1e12}}, "`sampler.timeout`", "<= 3600"),
    "n_ctx": ({"sampler": {"backend": "local", "n_ctx": 10**9}}, "`sampler.n_ctx`", f"<= {MAX_N_CTX:,}"),
    "perturbed max_tokens": ({"perturbed_sampler": {**OPENAI, "max_tokens": 10**6}},
                             "`perturbed_sampler.max_tokens`", f"<= {MAX_TOKENS:,}"),
    "embedder batch": ({"embedder": {"name": "openai", "batch_size": 10**6}}, "`embedder.batch_size`",
                       f"<= {MAX_EMBED_BATCH:,}"),
    "embedder retries": ({"embedder": {"name": "openai", "max_retries": 10**6}}, "`embedder.max_retries`",
                         f"<= {MAX_RETRIES:,}"),
    "too many perturbations": ({"scenario": None, "perturbations": None, "prompts": prompts(MAX_PERTURBATIONS + 1)},
                               "`prompts.perturbations`", f"at most {MAX_PERTURBATIONS:,}"),
    "too many outputs": ({"scenario": None, "perturbations": None, "prompts": prompts(150), "k": 4000,
                          "n_resamples": 100}, "`k`", f"at most {MAX_AUDIT_SAMPLES:,}"),
}


@pytest.mark.parametrize("case", SPEC_CASES, ids=SPEC_CASES)
def test_spec_sizes_are_refused_before_any_work(tmp_path, case):
    overrides, key, bound = SPEC_CASES[case]
    if isinstance(overrides, str):
        spec = write_spec(tmp_path, yaml_text(simulated_spec()) + overrides.replace("k: ", "n_resamples: "))
    else:
        spec = write_spec(tmp_path, {k: v for k, v in {**simulated_spec(), **overrides}.items() if v is not None})
    before = snapshot(tmp_path)
    started = time.monotonic()
    outcome = assert_clean(cli("audit", spec, "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o"), 2)
    assert time.monotonic() - started < 5  # refused at once, not after minutes of work
    assert key in outcome.error and bound in outcome.error
    assert snapshot(tmp_path) == before  # no store, no report


def yaml_text(spec: dict) -> str:
    import yaml

    return yaml.safe_dump({k: v for k, v in spec.items() if k != "n_resamples"})


def test_a_20000_row_file_is_refused_at_once_without_embedding(tmp_path, monkeypatch):
    import dbpa_core.embedders as embedders

    monkeypatch.setattr(embedders, "get_embedder", lambda *a, **k: pytest.fail("embedding started"))
    a = write_jsonl(tmp_path / "a.jsonl", ({"text": f"answer number {i}"} for i in range(20_000)))
    b = write_jsonl(tmp_path / "b.jsonl", ({"text": f"other {i}"} for i in range(10)))
    started = time.monotonic()
    outcome = assert_clean(cli("test", a, b), 2)
    assert time.monotonic() - started < 10
    assert f"more than {MAX_SAMPLES:,} outputs" in outcome.error and "a.jsonl" in outcome.error


def test_two_files_whose_test_would_take_hours_are_refused_before_embedding(tmp_path, monkeypatch):
    import dbpa_core.embedders as embedders

    monkeypatch.setattr(embedders, "get_embedder", lambda *a, **k: pytest.fail("embedding started"))
    a = write_jsonl(tmp_path / "a.jsonl", ({"text": f"answer {i}"} for i in range(3000)))
    b = write_jsonl(tmp_path / "b.jsonl", ({"text": f"other {i}"} for i in range(3000)))
    outcome = assert_clean(cli("test", a, b, "--n-resamples", 100_000), 2)
    assert "`--n-resamples`" in outcome.error and "2·10¹⁰" in outcome.error


@pytest.mark.parametrize(("argv", "match"), [
    (["reproduce", "table2", "--n-resamples", str(10**9)], "`--n-resamples` must be an integer >= 1 and <= 1,000,000"),
    (["reproduce", "table2", "--seed", "-1"], "`--seed` must be an integer >= 0"),
    (["test", "a.jsonl", "b.jsonl", "--n-resamples", str(10**12)], "<= 1,000,000"),
], ids=["reproduce B", "reproduce seed", "test B"])
def test_command_line_sizes(tmp_path, argv, match):
    write_jsonl(tmp_path / "a.jsonl", [{"text": "x"}, {"text": "y"}])
    write_jsonl(tmp_path / "b.jsonl", [{"text": "z"}, {"text": "w"}])
    started = time.monotonic()
    assert match in assert_clean(cli(*argv), 2).error
    assert time.monotonic() - started < 5


def test_batch_export_line_count_is_bounded_by_openai_s_limit(tmp_path):
    spec = write_spec(tmp_path, simulated_spec(sampler=OPENAI))
    outcome = assert_clean(cli("batch", "export", spec, "--out", tmp_path / "r.jsonl", "--max-lines", 10**9,
                               "--store", tmp_path / "s.sqlite"), 2)
    assert "`--max-lines`" in outcome.error and "50,000" in outcome.error
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "r.jsonl").exists()


# ----------------------------------------------------------------------------- the library
@pytest.mark.parametrize(("call", "match"), [
    (lambda: d.dbpa_test(np.ones((MAX_SAMPLES + 1, 2)), np.ones((3, 2))), "`x` holds at most 5,000 outputs"),
    (lambda: d.dbpa_test(np.eye(2000, 4), np.eye(2000, 4), n_resamples=10**6), "`n_resamples` is too large"),
    (lambda: d.dbpa_test_precomputed(np.eye(8), 4, n_resamples=10**7), "<= 1,000,000"),
    (lambda: d.sequential_dbpa_test(lambda n: np.ones((n, 2)), lambda n: np.ones((n, 2)), k_max=5000,
                                    batch_size=2, n_resamples=1000), "`n_resamples` is too large"),
    (lambda: d.explain_change(["a"] * (MAX_SAMPLES + 1), ["b"] * 3, np.eye(MAX_SAMPLES + 1, 3) + 1,
                              np.eye(3), n_resamples=10), "at most 5,000 per arm"),
], ids=["dbpa_test k", "dbpa_test work", "precomputed B", "sequential work", "explain k"])
def test_library_sizes_are_refused_at_once(call, match):
    started = time.monotonic()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("settings", "match"), [
    ({"max_retries": 10**9}, "`max_retries` must be an integer >= 0 and <= 20"),
    ({"max_concurrency": 10**7}, "`max_concurrency` must be an integer >= 1 and <= 256"),
    ({"timeout": 1e300}, "`timeout` must be a positive finite number <= 3600"),
], ids=["retries", "concurrency", "timeout"])
def test_endpoint_settings_are_bounded(settings, match):
    from dbpa_core.embedders import get_embedder
    from dbpa_core.samplers import get_sampler

    with pytest.raises(ValueError, match=match):
        get_sampler("openai", model="m", base_url="http://127.0.0.1:9/v1", **settings)
    if "max_concurrency" not in settings:
        with pytest.raises(ValueError, match=match):
            get_embedder("openai", base_url="http://127.0.0.1:9/v1", **settings)


# ----------------------------------------------------------------------------- the app
@pytest.mark.parametrize(("settings", "match"), [
    ({"k": 10**6}, "`k` must be an integer >= 2 and <= 5,000"),
    ({"k": 500, "n_resamples": 100_000}, "`n_resamples` is too large"),
    ({"sampler": "max_tokens"}, "`sampler.max_tokens` must be an integer >= 1 and <= 32,768"),
], ids=["k", "work", "max_tokens"])
def test_the_app_s_requests_are_bounded_like_the_spec(settings, match):
    from dbpa_core.audit import AuditRequest, PerturbedPrompt, Prompt, SamplerConfig

    if settings.get("sampler") == "max_tokens":
        with pytest.raises(ValueError, match=match):
            SamplerConfig(max_tokens=10**6)
        return
    with pytest.raises(ValueError, match=match):
        AuditRequest(Prompt("x?"), (PerturbedPrompt("p", "p", Prompt("y?")),), **settings)


def test_the_upload_limit_is_the_one_the_page_announces():
    config = tomllib.loads((REPO / "dbpa_app" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 2**20 == MAX_BYTES  # Streamlit's MB are 2²⁰ bytes
    page = (REPO / "dbpa_app" / "views" / "byo_samples.py").read_text()
    assert "Up to {MAX_BYTES // 2**20} MB and" in page and "{MAX_ROWS:,} rows" in page
    assert "at most {MAX_SAMPLES:,} per arm" in page  # the per-arm bound the reader checks, announced too


def test_an_upload_with_an_oversized_arm_is_refused_before_it_is_embedded():
    rows = "".join(json.dumps({"arm": "a" if i % 2 else "b", "text": f"t{i}"}) + "\n" for i in range(MAX_ROWS))
    started = time.monotonic()
    with pytest.raises(ValueError, match=f"more than {MAX_SAMPLES:,} outputs"):
        read_samples(rows.encode(), "big.jsonl")
    assert time.monotonic() - started < 5


def test_the_byo_page_checks_the_test_before_embedding():
    from dbpa_core.audit import uploaded_arms

    class Refuses:
        def embed(self, *args, **kwargs):
            raise AssertionError("embedding started")

    rows = "".join(json.dumps({"arm": "a" if i % 2 else "b", "text": f"t{i}"}) + "\n" for i in range(6000))
    table = read_samples(rows.encode(), "s.jsonl")
    with pytest.raises(ValueError, match="`n_resamples` is too large"):
        uploaded_arms(table, "a", "b", embedder=Refuses(), n_resamples=100_000)


@pytest.mark.parametrize(("text", "says"), [("why? " * 400_000, "at most 1 MB"), ("half \ud800", "lone surrogate")],
                         ids=["2 MB", "lone surrogate"])
def test_a_prompt_too_long_or_not_unicode_is_refused(text, says):
    """A prompt is stored with its samples: the bounds of a completion apply, before anything is drawn."""
    from dbpa_core.audit.request import Prompt

    for field in ("prompt", "system"):
        with pytest.raises(ValueError, match=f"`{field}`: .*{says}"):
            Prompt(**{"prompt": "What causes the seasons?", field: text})
