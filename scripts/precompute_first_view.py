"""Regenerate assets/first_view/: MiniLM embeddings of the home page's first view.

    python scripts/precompute_first_view.py

The home page's default (the factual-question scenario on the simulated
backend, sidebar seed 0) must show a result before any model loads.  This
script draws every arm of that view from the page's own request
(:func:`ui.exposition.home_request`, for each of :data:`ui.exposition.FIRST_VIEW_DRAWS`), embeds the distinct outputs
with the
packaged MiniLM, and writes texts and float32 vectors to
:data:`ui.exposition.FIRST_VIEW_FILE`.  Rerun it whenever the simulated
sampler, the scenario or the embedder changes (tests/test_app_home.py fails
when the file no longer covers the first view).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.audit.configs import EmbedderConfig, SamplerConfig  # noqa: E402
from dbpa_core.data.scenarios import load_scenarios  # noqa: E402
from dbpa_core.embedders import get_embedder  # noqa: E402
from dbpa_core.samplers import get_sampler  # noqa: E402
from dbpa_app.ui.exposition import (FIRST_VIEW_DRAWS, FIRST_VIEW_FILE, FIRST_VIEW_GENERATION,  # noqa: E402
                           FIRST_VIEW_SCENARIO, home_request)
from dbpa_app.ui.settings import Settings  # noqa: E402


def first_view_texts() -> list[str]:
    """The distinct outputs of every arm the first view (and its shipped resamples) draws."""
    scenario = load_scenarios()[FIRST_VIEW_SCENARIO]
    settings = Settings(SamplerConfig("simulated", **FIRST_VIEW_GENERATION), EmbedderConfig("minilm"), seed=0)
    sampler = get_sampler("simulated")
    texts: dict[str, None] = {}
    for resample, k in FIRST_VIEW_DRAWS:
        request = home_request(settings, scenario, k=k, resample=resample, statistic="jsd", n_resamples=800)
        for arm in request.arm_requests():
            texts.update(dict.fromkeys(sampler.sample(arm.prompt, k, system=arm.system or None, seed=arm.seed,
                                                      temperature=arm.temperature, max_tokens=arm.max_tokens)))
    return list(texts)


def main() -> None:
    texts = first_view_texts()
    embedder = get_embedder("minilm")
    vectors = embedder.embed(texts, progress=lambda done, total: print(f"\rembedded {done}/{total}", end=""))
    print()
    FIRST_VIEW_FILE.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(FIRST_VIEW_FILE, texts=np.array(texts), vectors=vectors.astype(np.float32),
                        embedder_key=np.array(embedder.key))
    print(f"{FIRST_VIEW_FILE.relative_to(REPO)}: {len(texts)} texts, {FIRST_VIEW_FILE.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
