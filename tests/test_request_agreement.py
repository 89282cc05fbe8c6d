"""Every analysis is a request with one run: the app and the command line agree for every request kind.

For the two-sample test, the RUT audit and the stability audit, the app's ui function (what the page calls)
and ``python -m dbpa_core`` run the same settings, and their statistic, p-value and decision are compared
exactly.  Both go through :data:`dbpa_core.requests.dispatch.RUNNERS` (counted here), every runner seeds its
draws with :func:`dbpa_core.audit.identity.test_seed`, and a seed rule moved in one path only is caught by the
comparison used here.  The sibling audits also run from the shipped SPECs (recorded data: seconds) and from a
SPEC against the packaged local model (small n).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import streamlit as st
import yaml

from dbpa_core.__main__ import main
from dbpa_core.audit import identity
from dbpa_core.requests import dispatch, two_sample
from dbpa_core.requests import rut as rut_audit
from dbpa_core.requests import stability as stability_audit
from dbpa_core.audit.configs import EmbedderConfig, SamplerConfig
from dbpa_core.audit.request import AuditRequest
from dbpa_core.requests.rut import RUTRequest
from dbpa_core.requests.specs import SPECS_DIR
from dbpa_core.requests.stability import StabilityRequest
from dbpa_core.requests.two_sample import TwoSampleRequest

SEED = 3


@pytest.fixture
def settings(tmp_path, monkeypatch):
    """The sidebar's settings of a fresh app process (own store, empty shared caches)."""
    from dbpa_app.ui.settings import Settings

    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "app.sqlite"))
    st.cache_data.clear()
    st.cache_resource.clear()
    yield Settings(sampler=SamplerConfig("simulated"), embedder=EmbedderConfig(), seed=SEED)
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def counted(monkeypatch):
    """Counts, per request kind, the runs that go through the dispatch table."""
    calls = {kind.__name__: 0 for kind in dispatch.RUNNERS}
    for kind, runner in list(dispatch.RUNNERS.items()):
        def counting(request, *, _runner=runner, **kwargs):
            calls[type(request).__name__] += 1
            return _runner(request, **kwargs)

        monkeypatch.setitem(dispatch.RUNNERS, kind, counting)
    return calls


def _arms(tmp_path):
    """Two arms with their own embeddings (no embedder is loaded), shifted apart, and one file holding both."""
    rng = np.random.default_rng(0)
    rows = {"before": rng.normal(size=(12, 4)), "after": rng.normal(size=(12, 4)) + [0.6, 0, 0, 0]}
    paths = {}
    for arm, vectors in rows.items():
        paths[arm] = tmp_path / f"{arm}.jsonl"
        paths[arm].write_text("\n".join(json.dumps({"text": f"{arm} {i}", "embedding": list(v)})
                                        for i, v in enumerate(vectors)))
    both = "\n".join(json.dumps({"arm": arm, "text": f"{arm} {i}", "embedding": list(v)})
                     for arm, vectors in rows.items() for i, v in enumerate(vectors))
    return paths, both.encode()


def _cli_test(tmp_path, paths) -> dict:
    out = tmp_path / "cli.json"
    code = main(["test", str(paths["before"]), str(paths["after"]), "--discrepancy", "energy", "--n-resamples", "199",
                 "--alpha", "0.1", "--seed", str(SEED), "--json", str(out)])
    assert code == 0
    return json.loads(out.read_text())


def _cli_report(tmp_path, command: str, spec: dict, *extra) -> dict:
    path = tmp_path / f"{command}.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / f"{command}-out"
    assert main([command, str(path), "--out", str(out), *extra]) == 0
    assert {p.name for p in out.iterdir()} == {"report.json", "results.csv", "report.html"}
    return json.loads((out / "report.json").read_text())


RUT_SPEC = {"source": "recorded", "substitute": "smollm2-q4_0", "q": 0.3, "n": 40, "m": 30, "score": "log_rank",
            "test": "cvm", "alpha": 0.05, "n_resamples": 199, "seed": SEED}
STABILITY_SPEC = {"source": "recorded", "cost": "cosine_length", "r": 0.4, "theta": 3.0, "n_resamples": 20,
                  "seed": SEED}


def test_two_sample_app_and_cli_agree(tmp_path, settings, counted):
    from dbpa_app.ui.requests import uploaded_test
    from dbpa_core.data.uploads import read_samples
    from dbpa_core.present.readings import decision

    paths, both = _arms(tmp_path)
    cli = _cli_test(tmp_path, paths)
    table = read_samples(both, "both.jsonl")
    app = uploaded_test(settings, table, "before", "after", similarity="cosine", discrepancy="energy",
                        n_resamples=199).test
    assert (app.statistic, app.pvalue) == (cli["statistic"], cli["pvalue"])
    assert decision(app.pvalue, 0.1) == decision(cli["pvalue"], 0.1)
    # a mid-range p (neither 1 nor the floor 1/(B + 1)): another seed moves it (last test)
    assert 0.01 < app.pvalue < 0.9
    assert counted["TwoSampleRequest"] == 2  # the app and the command line, each through the table
    # the same request again is the shared cache's (no second run)
    uploaded_test(settings, table, "before", "after", similarity="cosine", discrepancy="energy", n_resamples=199)
    assert counted["TwoSampleRequest"] == 2


def test_rut_app_and_cli_agree(tmp_path, settings, counted):
    from dbpa_app.ui.requests import rut_audit as app_rut

    from dbpa_core.present.readings import decision

    cli = _cli_report(tmp_path, "rut", RUT_SPEC)
    app = app_rut(settings, RUTRequest(**RUT_SPEC))
    assert (app.statistic, app.pvalue) == (cli["statistic"], cli["pvalue"])
    assert decision(app.pvalue, RUT_SPEC["alpha"]) == cli["decision"]
    assert app.mmd.pvalue == cli["mmd"]["pvalue"] and app.n_substituted == cli["substituted_answers"]
    assert cli["request"] == RUTRequest(**RUT_SPEC).key
    assert counted["RUTRequest"] == 2


def test_stability_app_and_cli_agree(tmp_path, settings, counted):
    from dbpa_app.ui.stability import recorded_study, stability_result

    cli = _cli_report(tmp_path, "stability", STABILITY_SPEC)
    app = stability_result(settings, StabilityRequest(**STABILITY_SPEC))
    values = {(row["task"], row["model"]): row["R"] for row in cli["criterion"]["rows"]}
    assert values == {key: (None if value == float("inf") else value) for key, value in app.statistic.items()}
    assert cli["criterion"]["order"] == {task: app.order(task) for task in app.study.tasks}
    # The page's recorded view (Table 1, Figure 1, the bootstrap's rank support) is the same study.
    study = recorded_study("cosine_length", 20, SEED)
    assert [r["R_headline"] for r in cli["rows"]] == [r.headline for r in study.rows]
    assert [r["rank_support"] for r in cli["rows"]] == [r.rank_support for r in study.rows]
    assert counted["StabilityRequest"] == 3


def test_every_runner_seeds_through_one_function_and_keys_through_one_digest():
    for module in (two_sample, rut_audit, stability_audit):
        assert module.test_seed is identity.test_seed
    # One key for every kind: the shared base's, never overridden (AuditRequest keeps only its own describe()).
    for kind in (AuditRequest, two_sample.TwoSampleRequest, RUTRequest, StabilityRequest):
        assert issubclass(kind, identity.Identified) and "key" not in vars(kind)
    requests = [AuditRequest.from_scenario(__import__("dbpa_core.data.scenarios", fromlist=["x"]).load_scenarios()
                                           ["customer_support"], sampler=SamplerConfig()),
                RUTRequest(), StabilityRequest()]
    for request in requests:
        assert request.key == identity.request_digest(request.describe())
        assert dispatch.RUNNERS[type(request)] is not None
        json.dumps(request.settings())  # reports can record it


def test_a_changed_seed_rule_in_one_path_is_caught(tmp_path, settings, monkeypatch):
    """The comparisons above can fail: the CLI with the seed rule moved by one disagrees with the app."""
    from dbpa_app.ui.requests import rut_audit as app_rut, uploaded_test
    from dbpa_core.data.uploads import read_samples

    paths, both = _arms(tmp_path)
    with monkeypatch.context() as patched:
        for module in (two_sample, rut_audit):
            patched.setattr(module, "test_seed", lambda request: int(request.seed) + 1)
        cli_test = _cli_test(tmp_path, paths)
        cli_rut = _cli_report(tmp_path, "rut", RUT_SPEC)
    app_test = uploaded_test(settings, read_samples(both, "both.jsonl"), "before", "after", similarity="cosine",
                             discrepancy="energy", n_resamples=199).test
    app_rut_result = app_rut(settings, RUTRequest(**RUT_SPEC))
    assert app_test.pvalue != cli_test["pvalue"]
    assert (app_rut_result.statistic, app_rut_result.pvalue) != (cli_rut["statistic"], cli_rut["pvalue"])


def test_explain_is_a_field_that_run_honours(tmp_path):
    paths, _ = _arms(tmp_path)
    arms = [two_sample.SampleArm(str(p), tuple(f"word{i % 3} output {i}" for i in range(12)),
                                 np.array([json.loads(line)["embedding"] for line in p.read_text().splitlines()]))
            for p in paths.values()]
    plain = dispatch.run(TwoSampleRequest(*arms, n_resamples=99, seed=SEED))
    explained = dispatch.run(TwoSampleRequest(*arms, n_resamples=99, seed=SEED, explain=True, fdr=0.2))
    assert plain.explanation is None and explained.explanation is not None
    assert explained.pvalue == plain.pvalue


def test_requests_name_the_bad_field():
    cases = [(lambda: RUTRequest(q=2), "`q`"), (lambda: RUTRequest(test="t"), "`test`"),
             (lambda: RUTRequest(source="live"), "`target` is missing"),
             (lambda: RUTRequest(source="live", target=SamplerConfig("openai", model="m"), target_system="pirate"),
              "`target_system`"),
             (lambda: StabilityRequest(theta=-1), "`theta`"), (lambda: StabilityRequest(source="live"), "`task`"),
             (lambda: StabilityRequest(task="qa"), "`task` is for a live search")]
    for build, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            build()


def test_shipped_specs_run_offline_and_fail_on_change(tmp_path, capsys):
    out = tmp_path / "rut"
    assert main(["rut", str(SPECS_DIR / "rut_recorded.yaml"), "--out", str(out), "--fail-on-change"]) == 1
    record = json.loads((out / "report.json").read_text())
    assert record["pvalue"] <= 0.05 and record["decision"] == "REJECT H₀"
    assert main(["stability", str(SPECS_DIR / "stability_recorded.yaml"), "--out", str(tmp_path / "st")]) == 0
    assert "most stable first" in capsys.readouterr().out
    # bad input: the key and its line, exit 2, nothing written
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: recorded\nsubstitue: smollm2-q2_k\n")
    assert main(["rut", str(bad), "--out", str(tmp_path / "bad")]) == 2
    assert "bad.yaml, line 2: `substitue` is not a key of this SPEC" in capsys.readouterr().err
    bad.write_text("source: recorded\nq: 7\n")
    assert main(["stability", str(bad)]) == 2
    assert "`q` is not a key" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow  # 9 generations and their scoring on the CPU: about half a minute on a shared 2-core machine
def test_rut_and_stability_specs_against_the_local_model(tmp_path, capsys):
    pytest.importorskip("llama_cpp")
    store = str(tmp_path / "store.sqlite")
    rut = yaml.safe_load((SPECS_DIR / "rut_local.yaml").read_text())
    rut.update(n=2, m=2)
    record = _cli_report(tmp_path, "rut", rut, "--store", store)
    assert record["n_prompts"] == 2 and record["n_reference"] == 2 and 0 <= record["pvalue"] <= 1
    again = _cli_report(tmp_path, "rut", rut, "--store", store)  # resumed from the store: the same answers
    assert again["pvalue"] == record["pvalue"]
    stability = yaml.safe_load((SPECS_DIR / "stability_local.yaml").read_text())
    record = _cli_report(tmp_path, "stability", stability, "--store", store)
    assert [row["n_items"] for row in record["rows"]] == [1]
    assert record["criterion"]["rows"][0]["model"] == "local SmolLM2 (sidebar)"


def test_the_null_chart_counts_the_p_values_numerator_on_ties():
    """Mirror splits equal T_obs up to rounding: the chart's "n of B ≥ the observed" is p's numerator."""
    from dbpa_core.present.figures import null_histogram
    from dbpa_core.stats.permutation import DBPAResult, _pvalue

    observed = 0.3
    null = np.array([observed * (1 - 1e-15)] * 2 + [0.1] * 798)  # two re-splits tie with T_obs up to rounding
    assert np.count_nonzero(null >= observed) == 0  # the naive count the chart used to show
    pvalue = _pvalue(observed, null, "greater", exact=False)
    assert pvalue == 3 / 801
    result = DBPAResult(statistic=observed, pvalue=pvalue, null_distribution=null, effect_size=0.2,
                        standardized_effect=1.0, n_original=20, n_perturbed=20, n_resamples=800, exact=False,
                        similarity="cosine", discrepancy="jsd", alternative="greater",
                        within_similarities=np.zeros(190), across_similarities=np.zeros(400))
    title = null_histogram(result).layout.title.text
    # the title wraps (<br>) to fit at 1024 px
    assert title.replace("<br>", " ").startswith(f"ω null: {round(pvalue * 801) - 1:,} of 800 re-splits ≥ the observed"), title


def _session_with_a_typed_key():
    import builtins
    import weakref

    import streamlit as st

    from dbpa_app.ui.resources import sampler_for
    from dbpa_core.audit.configs import SamplerConfig

    config = SamplerConfig("openai", model="audited-model", base_url="http://127.0.0.1:9/v1")
    sampler = sampler_for(config, st.session_state["typed_key"])
    assert sampler is sampler_for(config, st.session_state["typed_key"])  # one client per session and key
    builtins._dbpa_probe.append(weakref.ref(sampler))
    del sampler  # the script's own globals outlive its run: only the session may hold the client


def test_a_typed_key_is_not_held_after_its_session_ends(monkeypatch):
    """A client built from a key typed in the sidebar lives in its session: gone when the session is."""
    import builtins
    import gc
    import uuid

    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(builtins, "_dbpa_probe", [], raising=False)
    st.cache_resource.clear()
    at = AppTest.from_function(_session_with_a_typed_key, default_timeout=300)
    at.session_state["typed_key"] = f"sk-{uuid.uuid4().hex}"
    at.run()
    assert not at.exception, at.exception
    (client,) = builtins._dbpa_probe
    assert client() is not None  # alive while its session is
    # The session ends: its state goes (what Streamlit drops with a closed session; AppTest keeps its runner).
    for name in ("typed_key", "_keyed_clients"):
        del at.session_state[name]
    del at
    gc.collect()
    assert client() is None  # nothing shared (st.cache_resource) holds the key's client
    st.cache_resource.clear()


def test_two_sessions_pressing_the_same_button_compute_once(tmp_path, settings, counted):
    """Two sessions asking for the same request at once: one run, the other waits and reads its result."""
    import threading

    from dbpa_app.ui.requests import rut_audit as app_rut

    request = RUTRequest(**{**RUT_SPEC, "n_resamples": 999})
    results, start = [], threading.Barrier(2)

    def press():
        start.wait()
        results.append(app_rut(settings, request))

    threads = [threading.Thread(target=press) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counted["RUTRequest"] == 1
    assert len(results) == 2 and results[0].pvalue == results[1].pvalue
