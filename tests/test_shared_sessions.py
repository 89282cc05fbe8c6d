"""One server, many sessions (issue 31): results shared, keyed by every input; no first-use race.

1. A second AppTest session of the same settings reuses the first's results
   on every page's default view and main action: no sampling, embedding,
   permutation test, projection or other computation is repeated (counted).
2. A change of any one input of an audit request is a cache miss, and its
   result is the one the command line computes for the changed request
   (one test per input); derived views are keyed by every byte of theirs.
3. A session keeps only what its user chose and a digest of its results.
4. The process is prepared before any page draws (pandas and PIL complete,
   one BLAS thread), and a fresh server opened by several people at once,
   repeatedly, shows no exception on the pages or in its log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------- counting the work
@pytest.fixture
def work(monkeypatch) -> Counter:
    """Calls of everything that costs the server real work, counted by name."""
    import dbpa_core.audit.runner as runner
    import dbpa_core.present.projection as projection
    import dbpa_core.paper.rut as rut_paper
    import dbpa_core.stability.criterion as criterion
    import dbpa_core.stats.permutation as permutation
    import dbpa_core.stats.power as power
    from dbpa_core.embedders.base import Embedder
    from dbpa_core.samplers.base import Sampler

    calls: Counter = Counter()

    def counted(name, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return wrapper

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    for owner in (Sampler, *subclasses(Sampler)):
        if "sample_completions" in vars(owner):
            monkeypatch.setattr(owner, "sample_completions", counted("sampling", vars(owner)["sample_completions"]))
    monkeypatch.setattr(Embedder, "embed", counted("embedding", Embedder.embed))
    monkeypatch.setattr(permutation, "_resample", counted("permutation test", permutation._resample))
    monkeypatch.setattr(runner, "run", counted("audit run", runner.run))
    monkeypatch.setattr(projection, "project", counted("projection", projection.project))
    monkeypatch.setattr(criterion, "stability_criterion", counted("stability criterion",
                                                                  criterion.stability_criterion))
    monkeypatch.setattr(rut_paper, "rut_study", counted("RUT study", rut_paper.rut_study))
    monkeypatch.setattr(power, "simulate_power", counted("power simulation", power.simulate_power))
    return calls


def session(page: str | None = None) -> AppTest:
    """A new session of the running app (the shared caches are left as they are)."""
    at = AppTest.from_file(str(REPO / "dbpa_app" / "app.py"), default_timeout=600)
    if page is not None:  # straight on the page, as its URL opens it (not the home page first: issue 46)
        at.switch_page(f"views/{page}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def press(at: AppTest, key: str) -> AppTest:
    next(b for b in at.button if b.key == key).click().run()
    assert not at.exception, at.exception
    return at


def shown(at: AppTest) -> tuple:
    """What a session shows: every metric, table and caption (the results, with their readings)."""
    return ([(m.label, m.value) for m in at.metric], [d.value.to_json() for d in at.dataframe],
            [t.value.to_json() for t in at.table], [c.value for c in at.caption])


def _live(at, key):
    at.radio(key=key).set_value("live").run()
    return at


#: A class's example file for "Bring your own samples": two arms of eight outputs.
BYO_FILE = "\n".join(
    [json.dumps({"arm": "original", "text": f"Stop smoking and take a statin, option {i}."}) for i in range(8)]
    + [json.dumps({"arm": "perturbed", "text": f"Why did the statin cross the road? Joke {i}."}) for i in range(8)]
).encode()

ACTIONS = {
    "how_it_works": [],
    "audit_one": [lambda at: press(at, "one_run")],
    "many_perturbations": [lambda at: at.number_input(key="many_k").set_value(10).run(),
                           lambda at: press(at, "many_run"), lambda at: press(at, "plan_simulate")],
    "tpr_fpr": [],  # the paper's Figs 1–2
    "tpr_fpr live": [lambda at: _live(at, "roc_source"), lambda at: at.number_input(key="roc_k").set_value(6).run(),
                     lambda at: at.number_input(key="roc_b").set_value(100).run(), lambda at: press(at, "roc_run")],
    "alignment": [],  # the paper's Fig 3
    "alignment live": [lambda at: _live(at, "align_source"), lambda at: at.number_input(key="align_k").set_value(8).run(),
                       lambda at: press(at, "align_run")],
    "persona_study": [],  # the paper's Table 2
    "persona_study live": [lambda at: _live(at, "persona_source"),
                           lambda at: at.number_input(key="persona_k").set_value(6).run(),
                           lambda at: press(at, "persona_run")],
    "reproduce": [],
    "model_audit": [lambda at: at.radio(key="rut_mode").set_value("paper").run()],  # one audit, then the study
    "stability": [],
    "byo_samples": [lambda at: at.file_uploader(key="byo_file").set_value(("class.jsonl", BYO_FILE,
                                                                            "application/json")).run(),
                    lambda at: press(at, "byo_run")],
}


@pytest.mark.parametrize("view", list(ACTIONS))
def test_a_second_session_reuses_the_first_sessions_results(view, tmp_path, monkeypatch, work):
    """The second person opening a view (and pressing its button) costs no sampling, embedding, permutation
    test, projection or simulation: everything comes from the caches the first person filled."""
    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    st.cache_data.clear()
    st.cache_resource.clear()
    page = view.split()[0]
    first = session(page)
    for action in ACTIONS[view]:
        action(first)
    assert sum(work.values()), "the first session computed nothing: the count cannot show sharing"
    work.clear()
    second = session(page)
    for action in ACTIONS[view]:
        action(second)
    assert not +work, f"the second session repeated work: {dict(work)}"
    assert shown(second) == shown(first)


# ----------------------------------------------------------------- cache keys
class FakeEmbedder:
    """A deterministic stand-in for MiniLM (a vector from each text's hash): the keys are under test, not MiniLM."""

    def __init__(self, config):
        self.key = f"fake:{config}"

    def embed(self, texts, store=None, progress=None):
        import hashlib

        rows = [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=16)
                for t in texts]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), 16)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _base():
    from dbpa_core.audit.request import AuditRequest, EmbedderConfig, PerturbedPrompt, Prompt, SamplerConfig

    return AuditRequest(Prompt("What causes the seasons?", "Answer briefly."),
                        (PerturbedPrompt("mars", "Earth → Mars", Prompt("What causes the seasons on Mars?"),
                                         "target", 0.5),),
                        sampler=SamplerConfig("simulated", temperature=1.0, max_tokens=64),
                        embedder=EmbedderConfig("minilm"), k=6, n_resamples=50, seed=3, scenario="seasons")


def _perturbation(**changes):
    def change(request):
        first = dataclasses.replace(request.perturbations[0], **changes)
        return dataclasses.replace(request, perturbations=(first,))
    return change


def _prompt_of_perturbation(**changes):
    def change(request):
        first = request.perturbations[0]
        return dataclasses.replace(request, perturbations=(
            dataclasses.replace(first, prompt=dataclasses.replace(first.prompt, **changes)),))
    return change


def _replace(part=None, **changes):
    def change(request):
        if part is None:
            return dataclasses.replace(request, **changes)
        return dataclasses.replace(request, **{part: dataclasses.replace(getattr(request, part), **changes)})
    return change


def _sequential(request):
    from dbpa_core.audit.request import SequentialPlan

    return dataclasses.replace(request, sequential=SequentialPlan(k_max=6, batch_size=3))


def _other_perturbed_sampler(request):
    from dbpa_core.audit.request import SamplerConfig

    return dataclasses.replace(request, perturbed_sampler=SamplerConfig("simulated", temperature=2.0,
                                                                        max_tokens=64))


def _more_perturbations(request):
    from dbpa_core.audit.request import PerturbedPrompt, Prompt

    extra = PerturbedPrompt("eli5", "ELI5", Prompt("Explain like I'm five: what causes the seasons?"))
    return dataclasses.replace(request, perturbations=(*request.perturbations, extra))


#: One change per input of an audit request (every field of the request and of its parts).
INPUTS = {
    "original prompt": _replace("original", prompt="Why is summer warm?"),
    "original system prompt": _replace("original", system="Answer like a pirate."),
    "perturbed prompt": _prompt_of_perturbation(prompt="What causes the tides?"),
    "perturbed system prompt": _prompt_of_perturbation(system="Answer in French."),
    "perturbation id": _perturbation(id="mars2"),
    "perturbation label": _perturbation(label="Earth → Mars (2)"),
    "perturbation kind": _perturbation(kind="control"),
    "perturbation true effect": _perturbation(true_effect=0.0),
    "number of perturbations": _more_perturbations,
    "sampler model": _replace("sampler", model="simulated-v2"),
    "sampler temperature": _replace("sampler", temperature=0.5),
    "sampler max tokens": _replace("sampler", max_tokens=32),
    "perturbed sampler": _other_perturbed_sampler,
    "embedder option": _replace("embedder", options=(("batch_size", 8),)),
    "k": _replace(k=8),
    "sequential plan": _sequential,
    "B": _replace(n_resamples=60),
    "similarity": _replace(similarity="neg_l2"),
    "discrepancy": _replace(discrepancy="energy"),
    "seed": _replace(seed=4),
    "replicate": _replace(replicate=1),
    "scenario name": _replace(scenario="seasons (copy)"),
}


@pytest.fixture
def app_backends(tmp_path, monkeypatch):
    """ui.runs with a fresh store, empty caches and the fake embedder; yields the session settings."""
    from dbpa_app import ui
    from dbpa_core.audit.request import EmbedderConfig, SamplerConfig
    from dbpa_app.ui.settings import Settings

    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "store.sqlite"))
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setattr(ui.runs, "embedder_for", lambda config, key="": FakeEmbedder(config))
    return Settings(SamplerConfig("simulated"), EmbedderConfig("minilm"), 3)


def expected(request):
    """The result the command line's path computes for ``request`` (no cache)."""
    from dbpa_core.audit.runner import build_sampler, run

    return run(request, embedder=FakeEmbedder(request.embedder), sampler_for=build_sampler)


def same_result(a, b) -> bool:
    return all(x.label == y.label and x.original.texts == y.original.texts and x.perturbed.texts == y.perturbed.texts
               and x.test.statistic == y.test.statistic and x.test.pvalue == y.test.pvalue
               and x.original.prompt == y.original.prompt and x.perturbed.system == y.perturbed.system
               for x, y in zip(a.results, b.results, strict=True)) and dict(a.settings) == dict(b.settings)


@pytest.mark.parametrize("name", list(INPUTS))
def test_a_change_of_any_input_never_gets_another_requests_result(name, app_backends, work):
    from dbpa_app.ui.runs import family

    base = _base()
    first = family(app_backends, base)
    changed = INPUTS[name](base)
    assert changed.key != base.key
    runs = work["audit run"]
    result = family(app_backends, changed)
    assert work["audit run"] > runs, f"a change of {name} was served from the cache"
    assert same_result(result, expected(changed))
    runs = work["audit run"]
    assert same_result(family(app_backends, base), first) and work["audit run"] == runs  # each keeps its own


@pytest.mark.parametrize(("name", "value"), [("correction", "holm"), ("alpha", 0.01)])
def test_correction_and_alpha_re_read_the_cached_tests(name, value, app_backends, work):
    """Only the correction of the same p-values changes: no new run, and the result says the new setting."""
    from dbpa_app.ui.runs import family

    base = _base()
    family(app_backends, base)
    runs = work["audit run"]
    result = family(app_backends, dataclasses.replace(base, **{name: value}))
    assert work["audit run"] == runs
    assert result.settings[name] == value and getattr(result.adjusted, "method" if name == "correction" else name) \
        == value
    assert same_result(result, expected(dataclasses.replace(base, **{name: value})))


def test_a_room_pressing_the_same_button_at_once_samples_once(app_backends, monkeypatch):
    """Two sessions ask for the same uncached request at the same moment: one runs it live, the other waits for
    it and takes its result from the cache (without the wait, both would sample and embed everything)."""
    import threading
    import time

    import dbpa_core.audit.runner as runner
    from dbpa_app import ui

    class SlowEmbedder(FakeEmbedder):
        def embed(self, texts, store=None, progress=None):
            time.sleep(0.5)  # long enough for the second session to arrive while the first runs
            return super().embed(texts, store=store, progress=progress)

    monkeypatch.setattr(ui.runs, "embedder_for", lambda config, key="": SlowEmbedder(config))
    live = []
    real_run = runner.run

    def counting_run(request, **kwargs):
        if not kwargs.get("offline"):
            live.append(request.key)
        return real_run(request, **kwargs)

    monkeypatch.setattr(runner, "run", counting_run)
    results = []

    def person():
        results.append(ui.runs.family(app_backends, _base()))

    people = [threading.Thread(target=person) for _ in range(2)]
    for started in people:
        started.start()
        time.sleep(0.1)
    for started in people:
        started.join()
    assert len(live) == 1
    assert len(results) == 2 and same_result(results[0], results[1]) and same_result(results[0], expected(_base()))


def test_derived_views_are_keyed_by_every_byte(app_backends):
    """Projections, self-comparisons and figures are shared only for equal inputs — even large arrays that
    differ in one number (Streamlit's own hash samples arrays of ≥ 500 000 numbers)."""
    from dbpa_core.present.figures import null_histogram
    from dbpa_app.ui.runs import digest, projection, self_comparison, shared_call, shared_figure

    big = np.zeros(600_000)
    other = big.copy()
    other[123_457] = 1e-9
    assert digest(big) != digest(other) and digest(big) == digest(big.copy())
    assert shared_call(np.sum, big) == 0 and shared_call(np.sum, other) == pytest.approx(1e-9)
    assert shared_call(np.round, 1.26, 1) == 1.3 and shared_call(np.round, 1.26, decimals=0) == 1.0

    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(10, 5))
    moved = embeddings.copy()
    moved[9, 4] += 1.0
    assert not np.allclose(projection(embeddings, "pca"), projection(moved, "pca"))

    request = _base()
    family = expected(request)
    arm = family.results[0].original
    same = self_comparison(arm, request)
    assert same.test.pvalue == self_comparison(arm, dataclasses.replace(request, alpha=0.01)).test.pvalue
    other_arm = family.results[0].perturbed
    assert self_comparison(other_arm, request).original.texts != same.original.texts
    assert self_comparison(arm, dataclasses.replace(request, discrepancy="energy")).test.discrepancy \
        != same.test.discrepancy

    test = family.results[0].test
    figure = shared_figure(null_histogram, test, label="JSD")
    assert shared_figure(null_histogram, test, label="JSD") is figure  # one object for every session
    assert shared_figure(null_histogram, test, label="energy") is not figure


# ----------------------------------------------------------------- per-session state
def _keeping_app():
    import streamlit as st

    from dbpa_app.ui.freshness import keep, result_area

    value = st.text_input("value", key="value")
    inputs = {"value": value}
    if st.button("Run", key="run"):
        keep("thing", inputs, {"result for": value, "payload": list(range(1000))})
    with result_area("thing", inputs) as shown:
        if shown.result is not None:
            st.metric("result for", shown.result["result for"])
            st.metric("current", str(shown.current))


def test_a_session_keeps_a_digest_not_the_result():
    """Two sessions keep results under the same page name: each gets back its own, and session state holds only
    the inputs and a digest (the result lives once in the shared cache)."""
    from dbpa_app.ui.freshness import Kept

    st.cache_resource.clear()
    sessions = []
    for value in ("A", "B"):
        at = AppTest.from_function(_keeping_app)
        at.run()
        at.text_input(key="value").set_value(value).run()
        at.button(key="run").click().run()
        sessions.append(at)
    for at, value in zip(sessions, ("A", "B")):
        at.run()
        assert [(m.label, m.value) for m in at.metric] == [("result for", value), ("current", "True")]
        kept = at.session_state["_kept_thing"]
        assert isinstance(kept, Kept) and isinstance(kept.key, str) and len(kept.key) == 64
        assert [field.name for field in dataclasses.fields(kept)] == ["inputs", "key"]
    sessions[0].text_input(key="value").set_value("C").run()  # an input changed: the kept result is out of date
    assert ("current", "False") in [(m.label, m.value) for m in sessions[0].metric]
    st.cache_resource.clear()  # the shared cache dropped it: the page says so and shows nothing stale
    sessions[1].run()
    assert not sessions[1].metric
    assert any("dropped from the server's memory" in c.value for c in sessions[1].caption)


# ----------------------------------------------------------------- the process and the first use
def test_importing_ui_prepares_the_process():
    """After `import dbpa_app.ui` (the first thing app.py and every page do) BLAS runs one thread; a thread count
    set by whoever starts the server is kept.  pandas and PIL are not imported there (the home page draws its
    verdict first, issue 45) but by `import_figure_libraries`, which every script run calls before its first
    figure: after it both are complete (plotly looks them up in sys.modules, issue 31's race)."""
    check = ("import sys, threadpoolctl, dbpa_app.ui; "
             "assert 'pandas' not in sys.modules and 'PIL.Image' not in sys.modules, 'imported before the verdict'; "
             "from dbpa_app.ui.resources import import_figure_libraries; import_figure_libraries(); "
             "assert sys.modules['pandas'].Series and sys.modules['PIL.Image'].open; "
             "print(sorted({i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'}))")
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", check], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[1]", out.stderr[-2000:]
    env["OPENBLAS_NUM_THREADS"] = "2"
    out = subprocess.run([sys.executable, "-c", check], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[2]", out.stderr[-2000:]


def test_server_options_exist_and_match_the_pages():
    """Every option in dbpa_app/config.toml is one Streamlit knows, and the upload limit is the pages' own."""
    import tomllib

    from streamlit import config

    from dbpa_core.data.uploads import MAX_BYTES

    options = tomllib.loads((REPO / "dbpa_app" / "config.toml").read_text())
    known = config.get_config_options()
    for section, values in options.items():
        for name in values:
            assert f"{section}.{name}" in known, f"{section}.{name} is not a Streamlit option"
    assert options["server"]["maxUploadSize"] * 2**20 == MAX_BYTES  # Streamlit counts MB of 2**20 bytes


async def _open_at_once(url: str, views: list[tuple[str, str]]) -> list[int]:
    """Open every (path, text of its result) in its own browser context at once; the exception boxes each shows."""
    from playwright.async_api import async_playwright

    from servers import CHROMIUM, CHROMIUM_ARGS

    async def one(browser, path, ready):
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await context.new_page()
        await page.goto(url + path, wait_until="commit")
        await page.get_by_text(ready).first.wait_for(timeout=240_000)
        # the script has ended (the app's script state, as Streamlit's own browser tests read it): an exception it
        # met is on the page by now
        await page.wait_for_function(
            "() => document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState === 'notRunning'",
            timeout=240_000)
        return await page.locator("[data-testid='stException']").count()

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            return await asyncio.gather(*(one(browser, path, ready) for path, ready in views))
        finally:
            await browser.close()


@pytest.mark.parametrize("attempt", range(3))
def test_a_fresh_server_opened_by_several_people_at_once(attempt, tmp_path):
    """Four people open a freshly started server at the same moment (three on the home page, one on a case
    study): every page draws its result, with no exception on a page or in the server's log.  Before the
    process was prepared at import, about one cold start in three crashed with `partially initialized
    module 'pandas'`."""
    import os

    from servers import CHROMIUM, streamlit_app

    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is not installed (scripts/install.sh installs it)")
        pytest.skip("chromium not installed")
    with streamlit_app(tmp_path) as url:
        home = ("/", "REJECT H₀")
        errors = asyncio.run(_open_at_once(url, [home, home, home, ("/persona_study", "Read one row")]))
    log = (tmp_path / "streamlit.log").read_text()
    assert errors == [0, 0, 0, 0]
    assert "Traceback" not in log and "Error" not in log, log[-3000:]
