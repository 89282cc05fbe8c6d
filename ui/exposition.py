"""Helpers of the home page (the interactive exposition) that no other page needs.

The first view must open in a few seconds, before any model is loaded: the
default scenario's outputs on the simulated backend are drawn in
milliseconds, and their MiniLM embeddings ship in ``assets/first_view/``
(written by ``scripts/precompute_first_view.py``).  They are put into the
sample store once per process, so the embedder finds every vector there and
never loads; MiniLM itself loads in a background thread once the first result
is on screen, for whatever the user asks next.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import streamlit as st

from dbpa_core.data.assets import ASSETS
from dbpa_core.embedders.minilm import MiniLMEmbedder  # cheap: torch is imported on first use
from dbpa_core.present.readings import (decision, format_pvalue, read_centroid_distance,
                                        read_effect, read_pvalue, read_statistic)

from .components import decision_box
from .resources import sampler_for, store
from .settings import SamplerConfig, Settings

#: The shipped embeddings of the first view (texts and MiniLM vectors, float32).
FIRST_VIEW_FILE = ASSETS / "first_view" / "seasons_question_minilm.npz"
#: What they cover: the default scenario on the simulated backend at its default
#: temperature and token limit, N ≤ 200 for the first draw and N ≤ 40 for the
#: next four "Resample" presses (seed 0 in the sidebar).
FIRST_VIEW_SCENARIO = "seasons_question"
FIRST_VIEW_GENERATION = {"temperature": 1.0, "max_tokens": 128}
FIRST_VIEW_DRAWS = ((0, 200), (1, 40), (2, 40), (3, 40), (4, 40))  # (resample, N)
#: Seeds of successive "Resample" presses are this far apart, so that their
#: per-sample streams never overlap with the perturbed arms' seed + 1.
RESAMPLE_STRIDE = 1000


def arm_seed(seed: int, resample: int, *, original: bool) -> int:
    """The seed of an arm: x₀'s draw, or a perturbed arm's (seed + 1, independent of x₀'s)."""
    return seed + RESAMPLE_STRIDE * resample + (0 if original else 1)


def home_arms(scenario) -> list[tuple[str, str, str, bool]]:
    """Every arm the home page draws: (label, prompt, system, is_original), x₀ first."""
    return ([("original", scenario.prompt, scenario.system, True)]
            + [(p.label, *scenario.apply(p), False) for p in scenario.perturbations])


# --------------------------------------------------------------------- drawing

_MINILM_LOCK = threading.Lock()
_LOADER_STARTED = threading.Event()


class _SharedMiniLM(MiniLMEmbedder):
    """MiniLM whose weights load once per process, whichever thread asks first.

    Constructing it loads nothing; embedding texts that the store already
    holds never touches the model, which is how the first view opens without
    it.  The lock makes the background loader and a foreground request share
    one load instead of racing two.
    """

    @property
    def model(self):
        with _MINILM_LOCK:
            return super().model


@st.cache_resource(show_spinner=False)
def _home_embedder() -> _SharedMiniLM:
    return _SharedMiniLM()


@st.cache_resource(show_spinner=False)
def _seeded(store_path: str) -> int:
    """Put the shipped first-view embeddings into the store (once per process and store)."""
    shipped = np.load(FIRST_VIEW_FILE)
    texts = [str(t) for t in shipped["texts"]]
    store().put_embeddings(str(shipped["embedder_key"]), texts, shipped["vectors"])
    return len(texts)


def load_embedder_in_background(settings: Settings) -> None:
    """Start loading MiniLM in a daemon thread once the page has drawn (no-op once loaded).

    Called at the end of the page: importing torch holds the GIL for
    seconds, so it starts only after the first result has been sent.
    """
    if settings.embedder.backend != "minilm" or _LOADER_STARTED.is_set():
        return
    _LOADER_STARTED.set()

    # Plotly and Streamlit look pandas and PIL up in sys.modules without importing them;
    # were the loader thread half-way through importing one of them, they would find a
    # partially initialised module.  Import both here, on the page's thread, first.
    import pandas  # noqa: F401
    import PIL.Image  # noqa: F401

    def load():
        time.sleep(1.0)  # let the server flush the finished page first
        _home_embedder().model  # noqa: B018 - loading is the point

    threading.Thread(target=load, name="minilm-loader", daemon=True).start()


class _EmbeddingsOnly:
    """The store as a simulated arm uses it: embeddings are cached, samples are not.

    A simulated output is recomputed from its seed in microseconds, while
    writing it to SQLite costs ≈ 2 ms (280 of them: half a second of the first
    view).  Nothing is lost: the same seed gives the same outputs.
    """

    def __init__(self, inner):
        self._inner = inner

    def get_samples(self, description, indices):
        return {}

    def put_sample(self, description, index, text, token_logprobs=None):
        # SampleStore.put_sample's contract: what the slot holds afterwards (here, the sample itself).
        return text, token_logprobs

    def get_embeddings(self, embedder_key, texts):
        return self._inner.get_embeddings(embedder_key, texts)

    def put_embeddings(self, embedder_key, texts, vectors):
        return self._inner.put_embeddings(embedder_key, texts, vectors)


def recorded_limit(scenario) -> int:
    """The largest N every arm of ``scenario`` has recorded responses for (0 if an arm has none)."""
    sampler = sampler_for(SamplerConfig("recorded"))
    return min(sampler.available(prompt, system) for _, prompt, system, _ in home_arms(scenario))


def draw_home(settings: Settings, scenario, k: int, resample: int) -> list:
    """Draw and embed k outputs for x₀ and every perturbation of ``scenario``, in :func:`home_arms` order.

    Live and recorded backends go through the app's shared :func:`ui.runs.draw`
    (progress with time left, Cancel, every sample stored as it arrives).  The
    simulated backend with MiniLM takes a path of its own that never loads the
    model for texts the store already holds: memoised in the session, its
    samples recomputed rather than stored (:class:`_EmbeddingsOnly`).
    """
    from dbpa_core.audit import draw_arm

    from .runs import draw

    arms = home_arms(scenario)
    base = arm_seed(settings.seed, resample, original=True)
    if settings.sampler.backend != "simulated" or settings.embedder.backend != "minilm":
        return draw(dataclasses.replace(settings, seed=base), [arm[:3] for arm in arms], k,
                    seed_offset=arm_seed(0, 0, original=False), progress_label="Sampling every arm of the scenario")
    memo = st.session_state.setdefault("_home_arms", {})
    keys = [(settings.sampler, prompt, system, k, settings.temperature, settings.max_tokens,
             arm_seed(settings.seed, resample, original=original)) for _, prompt, system, original in arms]
    todo = [i for i, key in enumerate(keys) if key not in memo]
    if todo:
        shared = store()
        _seeded(str(shared.path))
        with st.spinner("Embedding new outputs with MiniLM (the first time, the model loads: ≈10 s)…"):
            for index in todo:
                label, prompt, system, _ = arms[index]
                memo[keys[index]] = draw_arm(sampler_for(settings.sampler), prompt, k, label=label, system=system,
                                             temperature=settings.temperature, max_tokens=settings.max_tokens,
                                             seed=keys[index][-1], embedder=_home_embedder(),
                                             store=_EmbeddingsOnly(shared))
    return [memo[key] for key in keys]


# ------------------------------------------------------------------- testing
#: The two statistics the page offers: discrepancy name → (short label, what it compares).
STATISTICS = {
    "jsd": ("JSD", "Jensen–Shannon divergence between P₀ and P₁ (the paper's ω)"),
    "centroid": ("centroid T", "centroid distance ‖μ̂₀ − μ̂₁‖² (the exposition's T)"),
}


def home_family(settings: Settings, scenario, arms, *, discrepancy: str, n_resamples: int, alpha: float):
    """Every perturbation of ``scenario`` against x₀, Bonferroni-corrected (paper §4.1); tests memoised."""
    from dbpa_core.audit import compare_family

    from .runs import _memoised_compare, true_effects  # the session's one memo of tests

    return compare_family(arms[0], arms[1:], scenario.perturbations, discrepancy=discrepancy,
                          n_resamples=n_resamples, correction="bonferroni", alpha=alpha, seed=settings.seed,
                          true_effects=true_effects(settings, scenario, scenario.perturbations),
                          compare=_memoised_compare(settings.seed))


def arm_slice(arm, start: int, stop: int):
    """Outputs ``start`` to ``stop`` of an arm, as an arm.

    Sample i of a request depends only on (seed, i) (:func:`dbpa_core.samplers.base.sample_seed`),
    so the first n outputs are exactly what drawing n would have given: an
    honest smaller draw, which is what streaming shows.
    """
    return dataclasses.replace(arm, texts=arm.texts[start:stop], embeddings=arm.embeddings[start:stop],
                               sample_ids=arm.sample_ids[start:stop])


def stream_sizes(k: int) -> list[int]:
    """Arm sizes shown while streaming: a few outputs more per step, from 4 up to k."""
    step = max(2, k // 10)
    return sorted({n for n in range(4, k, step)} | {k}) if k > 4 else [k]


def true_effect_text(result, simulated: bool) -> str:
    """The simulated model's known effect of a perturbation, or "unknown" for a real model."""
    if not simulated or result.true_effect is None:
        return "unknown"
    return f"{result.true_effect:.0%}" + (" (control)" if result.true_effect == 0 else "")


def exposition_table(family, *, label: str, simulated: bool):
    """Panel 03's table: perturbation, true effect, observed T, p, p·Bonferroni, decision."""
    import pandas as pd

    adjusted = family.adjusted
    return pd.DataFrame({
        "perturbation": [f"{i}. {r.label}" for i, r in enumerate(family.results, start=1)],
        "true effect" + (" (simulated)" if simulated else ""): [true_effect_text(r, simulated) for r in family.results],
        f"observed {label}": [f"{r.test.statistic:.4g}" for r in family.results],
        "p": [format_pvalue(r.test.pvalue, r.test.n_resamples, exact=r.test.exact) for r in family.results],
        "p·Bonferroni": [format_pvalue(p) for p in adjusted.pvalues_adjusted],
        "decision": [decision(p, adjusted.alpha) for p in adjusted.pvalues_adjusted],
    })


def truth_note(settings: Settings, result) -> str:
    """The ground truth of the shown intervention where it is known (simulated backend), else that it is not."""
    if settings.sampler.backend != "simulated":
        return "Real model outputs: the true effect is unknown; the test is what estimates it."
    if not result.true_effect:
        return ("Ground truth of the simulated model: this intervention changes nothing, so a rejection would be "
                "a false positive.")
    return (f"Ground truth of the simulated model: this intervention moves {result.true_effect:.0%} of the "
            "answer-content distribution (total variation).")


def show_result(result, alpha: float, *, statistic: str, inputs: str, note: str = "") -> None:
    """The observed statistic, its effect, p and the decision, each with its reading.

    ``inputs`` names what the result belongs to (shown under it); ``note``
    marks a partial result (streaming) so it is never taken for the final one.
    """
    test = result.test
    label = STATISTICS[statistic][0]
    columns = st.columns([1, 1, 1.6])
    columns[0].metric(f"Observed {label}", f"{test.statistic:.4g}")
    if statistic == "centroid":
        distance = float(np.sqrt(max(test.statistic, 0.0)))
        columns[1].metric("Effect ‖μ̂₀ − μ̂₁‖", f"{distance:.3g}")
        effect_reading = read_centroid_distance(distance)
    else:
        columns[1].metric("Effect beyond chance", f"{test.effect_size:+.3g}")
        effect_reading = read_effect(test.effect_size, test.standardized_effect)
    columns[2].metric("p-value", format_pvalue(test.pvalue, test.n_resamples, exact=test.exact))
    decision_box(test.pvalue, alpha, headline=True)
    st.caption(read_statistic(test.statistic, float(np.mean(test.null_distribution)), label))
    st.caption(effect_reading)
    st.caption(read_pvalue(test.pvalue, test.n_resamples, exact=test.exact))
    st.caption(f"{note}Result for: {inputs}.")
    for message in test.warnings:
        st.warning(message)
