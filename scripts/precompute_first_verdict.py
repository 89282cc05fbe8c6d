"""Regenerate assets/first_view/home_verdict.json: the home page's default verdict, shipped with the app.

    python scripts/precompute_first_verdict.py

The home page draws its verdict strip from this file before it has run its
test, when every input is its default (:mod:`dbpa_app.ui.first_verdict`), so
that a fresh server shows its first decision within seconds (issue 45).  This
script runs the default view through the real pipeline: the page's own
request (:func:`dbpa_app.ui.exposition.home_request` on the sidebar's and the
page's defaults), drawn by the simulated sampler, embedded from the shipped
first-view vectors (as the page's first view is), tested and corrected by
:func:`dbpa_core.audit.runner.run`.  It writes the strip's numbers with the
request's key and the package version; rerun it whenever the version, the
sampler, the statistics or the scenario change (tests/test_first_view_verdict.py
fails until then, and the page falls back to waiting for its own result).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dbpa_core  # noqa: E402
from dbpa_core.audit.runner import run  # noqa: E402
from dbpa_core.data.scenarios import load_scenarios  # noqa: E402
from dbpa_core.data.store import SampleStore  # noqa: E402
from dbpa_core.embedders import get_embedder  # noqa: E402
from dbpa_core.present.verdicts import effect_in_words, technical_label  # noqa: E402
from dbpa_app.ui.exposition import FIRST_VIEW_FILE, home_request  # noqa: E402
from dbpa_app.ui.first_verdict import (FIRST_VERDICT_FILE, HOME_DEFAULTS, default_settings,  # noqa: E402
                                       page_inputs)
from dbpa_app.ui.lesson import StripNumbers  # noqa: E402


def first_verdict(store_folder: Path) -> dict:
    """The default view's verdict as the shipped file holds it, computed now (a fresh store in ``store_folder``)."""
    scenarios = load_scenarios()
    inputs = page_inputs({}, scenarios)  # a first visit: no widget drawn yet, every input at its default
    scenario = scenarios[inputs["home_scenario"]]
    settings = default_settings()
    request = home_request(settings, scenario, k=inputs["home_k"], resample=inputs["home_resample"],
                           statistic=inputs["home_statistic"], n_resamples=inputs["home_b"],
                           alpha=inputs["home_alpha"])
    store = SampleStore(store_folder / "store.sqlite")
    shipped = np.load(FIRST_VIEW_FILE)  # the first view's embeddings, as ui.exposition.seed_first_view stores them
    store.put_embeddings(str(shipped["embedder_key"]), [str(t) for t in shipped["texts"]], shipped["vectors"])
    # The page keeps a fixed-k family without its correction and α, and re-corrects it (ui.runs.family).
    family = run(request.tests_only(), store=store, embedder=get_embedder("minilm")).recorrected(
        request.correction, request.alpha)
    chosen = [p.id for p in request.perturbations].index(inputs["home_perturbation"])
    result = family.results[chosen]
    test = result.test
    return {
        "about": "The home page's default verdict (scripts/precompute_first_verdict.py; dbpa_app/ui/first_verdict.py)."
                 " Drawn only when the page's request has this key and the package this version.",
        "version": dbpa_core.__version__,
        "key": request.key,
        "inputs": {**HOME_DEFAULTS, "home_perturbation": inputs["home_perturbation"]},
        "perturbation": inputs["home_perturbation"],
        "numbers": dataclasses.asdict(StripNumbers.of(result)),
        # Not drawn from the file: kept so that a stale file fails its test on every number the strip reads.
        "statistic": float(test.statistic),
        "decision": technical_label(test.pvalue, request.alpha),
        "effect": effect_in_words(test.effect_size, test.standardized_effect),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        verdict = first_verdict(Path(folder))
    FIRST_VERDICT_FILE.write_text(json.dumps(verdict, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{FIRST_VERDICT_FILE.relative_to(REPO)}: {verdict['decision']}, p = {verdict['numbers']['pvalue']:.4g}, "
          f"effect {verdict['effect']}, k = {verdict['numbers']['k']}")


if __name__ == "__main__":
    main()
