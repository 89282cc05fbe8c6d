"""The home page's default verdict, shipped with the app, so that a fresh server decides within seconds (issue 45).

The home page opens on a deterministic view: the simulated backend at its
defaults, sidebar seed 0, the factual-question scenario, its first
intervention, k = 40, α = 0.05, JSD, B = 800.  Its verdict strip's numbers
are computed once through the real pipeline by
``scripts/precompute_first_verdict.py`` and shipped as
:data:`FIRST_VERDICT_FILE`, keyed by that request's
:attr:`~dbpa_core.audit.request.AuditRequest.key` and the package version.
The page draws the strip from it first (:func:`draw_first_verdict`),
before the sidebar, numba, pandas and the tests are imported, drawn or run (≈ 3 s of a fresh
server's first view), then computes as always and redraws the strip with
its own result: the same numbers (tests/test_first_view_verdict.py recomputes
them and fails when the file is stale).

Never a wrong number: the shipped strip is drawn only when every input the
page reads (sidebar included) is its default and the request the page is about
to run has the file's key; in any other case the strip says "Testing …"
until the page's own result is in.  Before a session's sidebar is first drawn
its settings are the defaults it will draw: no key the sidebar stores is in the
session yet (tests/test_first_view_verdict.py checks every key it stores).
Nothing here imports the statistics stack.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache

from dbpa_core.audit.configs import EmbedderConfig, SamplerConfig
from dbpa_core.data.assets import ASSETS
from dbpa_core.samplers import DEFAULT_TEMPERATURE

from .exposition import FIRST_VIEW_SCENARIO, STATISTICS, home_request
from .lesson import LESSON_K, StripNumbers, lesson_k, strip_html
from .settings import Settings

#: The shipped numbers of the home page's default verdict (``scripts/precompute_first_verdict.py``).
FIRST_VERDICT_FILE = ASSETS / "first_view" / "home_verdict.json"

#: The home page's controls as it opens (its widgets take their defaults from here); the intervention's
#: default is the scenario's first.  The simulated backend allows k up to 200.
HOME_DEFAULTS = {"home_scenario": FIRST_VIEW_SCENARIO, "home_k": LESSON_K, "home_alpha": 0.05,
                 "home_statistic": "jsd", "home_b": 800, "home_resample": 0}
SIMULATED_K_LIMIT = 200
#: Seconds between the shipped strip and the sidebar (see :func:`draw_first_verdict`).  Fresh starts on this
#: 2-core machine, 8 each: no pause, the strip showed 2.08-3.22 s after the start; 0.05 s, 1.76-2.50 s;
#: 0.15 s, 1.62-1.83 s; 0.3 s, 1.64-1.92 s (issue 45, bench/bench_first_decision.py).
STRIP_ALONE_SECONDS = 0.15


def default_settings() -> Settings:
    """The sidebar as it opens: the simulated backend at its default temperature and length, MiniLM, seed 0."""
    return Settings(SamplerConfig("simulated", temperature=DEFAULT_TEMPERATURE["simulated"], max_tokens=128),
                    EmbedderConfig("minilm"), 0)


def page_inputs(state, scenarios) -> dict:
    """The home page's inputs as its next run will use them (``state``: the session state; defaults where
    a widget has not been drawn yet), with ``home_perturbation`` the intervention shown."""
    inputs = {name: state.get(name, default) for name, default in HOME_DEFAULTS.items()}
    scenario = scenarios.get(inputs["home_scenario"])
    ids = [p.id for p in scenario.perturbations] if scenario is not None else []
    chosen = state.get("home_perturbation")
    inputs["home_perturbation"] = chosen if chosen in ids else (ids[0] if ids else None)
    # What the page's own k rule gives (a k left at another backend's cap returns to the lesson's).
    inputs["home_k"] = lesson_k(state.get("home_k"), state.get("home_k_limit"), SIMULATED_K_LIMIT)
    return inputs


@lru_cache(maxsize=1)
def shipped_file() -> dict | None:
    """The shipped verdict (None when the file is missing or unreadable: the page then waits for its result)."""
    try:
        return json.loads(FIRST_VERDICT_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def shipped_verdict(settings: Settings, state, scenarios, *, shipped: dict | None = None) -> dict | None:
    """The strip's numbers and words for this run when they may come from the shipped file, else None.

    ``shipped``: the file's content (default :func:`shipped_file`).  Returns
    ``numbers`` (:class:`~ui.lesson.StripNumbers`), ``alpha``,
    ``intervention`` and ``label``, as the page draws them.
    """
    import dbpa_core

    shipped = shipped_file() if shipped is None else shipped
    if shipped is None or shipped.get("version") != dbpa_core.__version__ or settings != default_settings():
        return None
    inputs = page_inputs(state, scenarios)
    scenario = scenarios.get(inputs["home_scenario"])
    if scenario is None or inputs != {**HOME_DEFAULTS, "home_perturbation": scenario.perturbations[0].id}:
        return None
    request = home_request(settings, scenario, k=inputs["home_k"], resample=inputs["home_resample"],
                           statistic=inputs["home_statistic"], n_resamples=inputs["home_b"],
                           alpha=inputs["home_alpha"])
    if request.key != shipped.get("key") or shipped.get("perturbation") != inputs["home_perturbation"]:
        return None
    perturbation = scenario.perturbations[0]
    return {"numbers": StripNumbers(**shipped["numbers"]), "alpha": request.alpha,
            "intervention": f"1 · {perturbation.label}", "label": STATISTICS[request.discrepancy][0]}


def draw_first_verdict(slot, state, scenarios) -> Settings:
    """The home page's strip before anything else, then the shared sidebar; the sidebar's settings.

    A session whose sidebar has not been drawn yet gets its defaults when it
    is (:func:`ui.sidebar.sidebar_untouched`), so the shipped verdict, when it
    applies, is drawn before the sidebar and given :data:`STRIP_ALONE_SECONDS`
    to be drawn in the browser: sent together with the sidebar, it showed only
    once the browser had fetched the scripts of the sidebar's widgets (issue 45,
    ``bench/bench_first_decision.py``).  A later run draws the sidebar first, as
    every page does.  Once the sidebar is drawn the strip is checked against its
    real settings; one that does not apply says "Testing …" until the page's
    result.
    """
    from .sidebar import draw_shared, sidebar_untouched

    early = sidebar_untouched(state) and draw_shipped_verdict(slot, default_settings(), state, scenarios)
    if early:
        # The strip gets a render of its own in the browser: arriving with the sidebar, it waited for the
        # widgets' scripts, loaded only then, before it showed (0.4-1.5 s later).  An idle pause, not the
        # figure libraries' import: that would take the CPU the browser draws the strip with.
        time.sleep(STRIP_ALONE_SECONDS)
    settings = draw_shared()
    if not (early and settings == default_settings()) and not draw_shipped_verdict(slot, settings, state, scenarios):
        slot.caption("Testing …")
    return settings


def draw_shipped_verdict(slot, settings: Settings, state, scenarios) -> bool:
    """Draw the shipped default verdict into ``slot`` when it applies to this run (see :func:`shipped_verdict`);
    whether it was drawn (kept in ``state["_verdict_shipped"]``, which the tests read)."""
    shown = shipped_verdict(settings, state, scenarios)
    if shown is not None:
        slot.html(strip_html(shown["numbers"], shown["alpha"], intervention=shown["intervention"],
                             label=shown["label"], simulated=True))
    state["_verdict_shipped"] = shown is not None
    return shown is not None
