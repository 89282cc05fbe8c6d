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

import threading
import time

import numpy as np
import streamlit as st

from dbpa_core.audit.configs import SamplerConfig
from dbpa_core.data.assets import ASSETS
from dbpa_core.present.formatting import format_number, format_percent, format_pvalue, format_share, unbroken
from dbpa_core.present.readings import decision, read_centroid_distance, read_effect, read_pvalue, read_statistic

from .components import decision_box, pvalue_metric
from .components import recorded_limit
from .resources import embedder_for, store
from .cache import shared_function
from .runs import scenario_request
from .settings import Settings

#: The shipped embeddings of the first view (texts and MiniLM vectors, float32).
FIRST_VIEW_FILE = ASSETS / "first_view" / "seasons_question_minilm.npz"
#: What they cover: the default scenario on the simulated backend at its default
#: temperature and token limit, N ≤ 200 for the first draw and N ≤ 40 for the
#: next four "Resample" presses (seed 0 in the sidebar).
FIRST_VIEW_SCENARIO = "seasons_question"
FIRST_VIEW_GENERATION = {"temperature": 1.0, "max_tokens": 128}
FIRST_VIEW_DRAWS = ((0, 200), (1, 40), (2, 40), (3, 40), (4, 40))  # (resample, N)


def home_request(settings: Settings, scenario, *, k: int, resample: int, statistic: str, n_resamples: int,
                 alpha: float = 0.05):
    """The home page's audit: every perturbation of ``scenario`` against x₀, Bonferroni-corrected (paper §4.1).

    "Resample" is a new replicate of the same audit: new samples (seeds
    :func:`dbpa_core.audit.request.arm_seed`), the same tests.
    """
    return scenario_request(settings, scenario, k=k, replicate=resample, discrepancy=statistic,
                            n_resamples=n_resamples, correction="bonferroni", alpha=alpha)


# --------------------------------------------------------------------- drawing
_LOADER_STARTED = threading.Event()


@st.cache_resource(show_spinner=False)
def seed_first_view(store_path: str) -> int:
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
    if settings.embedder.name != "minilm" or _LOADER_STARTED.is_set():
        return
    _LOADER_STARTED.set()

    # Plotly and Streamlit look pandas and PIL up in sys.modules without importing them;
    # were the loader thread half-way through importing one of them, they would find a
    # partially initialised module.  Import both here, on the page's thread, first.
    import pandas  # noqa: F401
    import PIL.Image  # noqa: F401

    embedder = embedder_for(settings.embedder)

    def load():
        time.sleep(1.0)  # let the server flush the finished page first
        load_quietly_at_shutdown(embedder)

    threading.Thread(target=load, name="minilm-loader", daemon=True).start()


def load_quietly_at_shutdown(embedder) -> None:
    """Load ``embedder``'s model; if the server stops meanwhile, end without a traceback in its log.

    transformers loads weights through a thread pool, which refuses new work once the interpreter is
    shutting down ("cannot schedule new futures after interpreter shutdown"): a server stopped during the
    seconds MiniLM takes to load printed that as an error, though nothing was lost (tests/test_shared_sessions.py
    failed on it once in three cold starts).  Importing it then fails the same way: a module that registers an
    exit hook ("can't register atexit after shutdown", joblib under sklearn under sentence-transformers, seen
    in a CI run).  Any other error is raised as it is.
    """
    try:
        embedder.model  # noqa: B018 - loading is the point
    except RuntimeError as error:
        if not any(phrase in str(error) for phrase in SHUTDOWN_PHRASES):
            raise


#: What Python's RuntimeError says when work is refused because the interpreter is shutting down.
SHUTDOWN_PHRASES = ("interpreter shutdown", "atexit after shutdown")


def scenario_recorded_limit(scenario) -> int:
    """The largest N every arm of ``scenario`` has recorded responses for (0 if an arm has none)."""
    from dbpa_core.audit.request import AuditRequest

    arms = AuditRequest.from_scenario(scenario, sampler=SamplerConfig("recorded")).arm_requests()
    return recorded_limit([(arm.prompt, arm.system) for arm in arms])


def stream_in_place(result, request, *, statistic: str, seed: int, slots, draw_strip) -> None:
    """Replay a result as its evidence accumulated: the first n outputs of each arm, n growing to k.

    ``slots`` are the page's (clouds, null) placeholders, redrawn in place, and
    ``draw_strip(partial, note)`` redraws the verdict strip; each step is the test on the first n outputs
    (:func:`dbpa_core.audit.exposition.streamed`), so what a class sees is
    an honest smaller audit.
    """
    from dbpa_core.audit.exposition import streamed
    from dbpa_core.present.figures import null_histogram, output_clouds
    from dbpa_core.present.projection import project

    cloud_slot, null_slot = slots
    original, perturbed = result.original, result.perturbed
    coordinates = project(np.vstack([original.embeddings, perturbed.embeddings]), "pca", rng=seed)
    k = len(original.texts)
    pad = (coordinates.max(axis=0) - coordinates.min(axis=0)) * 0.08
    ranges = tuple(zip(coordinates.min(axis=0) - pad, coordinates.max(axis=0) + pad))
    label = STATISTICS[statistic][0]
    for partial in streamed(result, request):
        n = len(partial.original.texts)
        draw_strip(partial, f"Streaming: {n} of {k} outputs per arm so far, not the final result.")
        rows = list(range(n)) + list(range(k, k + n))
        cloud_slot.plotly_chart(output_clouds(coordinates[rows], (n, n), list(original.texts[:n])
                                              + list(perturbed.texts[:n]), axis_ranges=ranges), width="stretch")
        null_slot.plotly_chart(null_histogram(partial.test, label=label), width="stretch")
        time.sleep(0.25)  # a class should see the evidence arrive, not a flicker


# ------------------------------------------------------------------- testing
#: The two statistics the page offers: discrepancy name → (short label, what it compares).
STATISTICS = {
    "jsd": ("JSD", "Jensen–Shannon divergence between P₀ and P₁ (the paper's ω)"),
    "centroid": ("centroid T", "centroid distance ‖μ̂₀ − μ̂₁‖² (the exposition's T)"),
}


def true_effect_text(result, simulated: bool) -> str:
    """The simulated model's known effect of a perturbation, or "unknown" for a real model."""
    if not simulated or result.true_effect is None:
        return "unknown"
    return format_share(result.true_effect) + (" (control)" if result.true_effect == 0 else "")


def exposition_table(family, *, label: str, simulated: bool, k: int | None = None):
    """Panel 03's table: perturbation, true effect, observed T, p, p·Bonferroni, decision.

    On the simulated backend the true effect of a target the family missed reads "52 % · missed" (the k it
    needed is in :func:`missed_notes`)."""
    import pandas as pd

    adjusted = family.adjusted
    missed = {i for i, _ in missed_targets(family)} if simulated else set()
    return pd.DataFrame({
        "perturbation": [f"{i}. {r.label}" for i, r in enumerate(family.results, start=1)],
        "true effect" + (" (simulated)" if simulated else ""): [true_effect_text(r, simulated)
                                                                + (" · missed" if i in missed else "")
                                                                for i, r in enumerate(family.results)],
        f"observed {label}": [format_number(r.test.statistic) for r in family.results],
        # "≤ 0.0012" kept on one line (a no-break space): at 1024 px the cell wrapped after the "≤".
        "p": [unbroken(format_pvalue(r.test.pvalue, r.test.n_resamples, exact=r.test.exact)) for r in family.results],
        "p·Bonferroni": [unbroken(format_pvalue(p)) for p in adjusted.pvalues_adjusted],
        "decision": [decision(p, adjusted.alpha) for p in adjusted.pvalues_adjusted],
    })


def missed_targets(family) -> list:
    """(index, result) of each simulated target (known true effect > 0) the corrected family did not declare."""
    return [(i, r) for i, (r, rejected) in enumerate(zip(family.results, family.adjusted.reject))
            if r.true_effect and not rejected]


def missed_notes(family, k: int) -> list[str]:
    """One "Missed: …" sentence per missed simulated target, its k needed at the family's level α/m."""
    from dbpa_core.present.verdicts import missed_note

    m, alpha = len(family.results), family.adjusted.alpha
    return [f"{i + 1}. {r.label}: " + missed_note(r.true_effect, k, r.test.standardized_effect, alpha, m=m)
            for i, r in missed_targets(family)]


def truth_note(settings: Settings, result) -> str:
    """The ground truth of the shown intervention where it is known (simulated backend), else that it is not."""
    if settings.sampler.backend != "simulated":
        return "Real model outputs: the true effect is unknown; the test is what estimates it."
    if not result.true_effect:
        return ("Ground truth of the simulated model: this intervention changes nothing, so a rejection would be "
                "a false positive.")
    return (f"Ground truth of the simulated model: this intervention moves {format_percent(result.true_effect)} of the "
            "answer-content distribution (total variation).")


def show_result(result, alpha: float, *, statistic: str, inputs: str, note: str = "", beside: str = "") -> None:
    """The observed statistic, its effect, p and the decision, each with its reading.

    ``inputs`` names what the result belongs to (shown under it); ``note``
    marks a partial result (streaming) so it is never taken for the final one;
    ``beside`` is what the decision means beside the family's (:func:`read_alone_beside_family`).
    """
    test = result.test
    label = STATISTICS[statistic][0]
    columns = st.columns([1, 1, 1.6])
    columns[0].metric(f"Observed {label}", format_number(test.statistic))
    # Both statistics show the effect *beyond chance* (observed minus the null's mean): a raw centroid
    # distance is never 0, even for a control, and would read as an effect beside the JSD card's 0.
    # A negative effect is never the headline ("−0.004" read as an effect): "none" (the reading says why).
    columns[1].metric("Effect beyond chance", "+" + format_number(test.effect_size) if test.effect_size > 0 else "none")
    pvalue_metric(columns[2], test, stars=False)
    decision_box(test.pvalue, alpha, headline=True, plain=True, n_resamples=test.n_resamples, exact=test.exact)
    if beside:
        st.warning(beside, icon=":material/rule:")
    st.caption(read_statistic(test.statistic, float(np.mean(test.null_distribution)), label, exact=test.exact))
    st.caption(read_effect(test.effect_size, test.standardized_effect))
    if statistic == "centroid":
        st.caption(read_centroid_distance(float(np.sqrt(max(test.statistic, 0.0)))))
    st.caption(read_pvalue(test.pvalue, test.n_resamples, exact=test.exact))
    st.caption(f"{note}Result for: {inputs}.")
    for message in test.warnings:
        st.warning(message)


#: The home page's method section: what DBPA's default cannot see (dbpa_core.audit.blind_spot; tests pin the example).
BLIND_SPOT_TEXT = (
    "**What ω on P₀ and P₁ cannot see.** DBPA's default compares how similar the original outputs are to each other "
    "(P₀) with how similar they are to the perturbed ones (P₁). A change that keeps those similarities alike is "
    "invisible to it: when the original outputs are spread evenly in every direction, any output is as similar to "
    "them as they are to each other, so P₁ looks like P₀ however far the perturbed outputs moved, and the test "
    "flags the change about as often as α, whatever k. The energy distance and MMD (under Statistic) compare the "
    "outputs themselves and see such a move: choose one of them when the original answers vary widely.")


@shared_function(spinner="Simulating 200 small audits")
def _blind_spot_example():
    from dbpa_core.audit.blind_spot import blind_spot_example

    return blind_spot_example()


def blind_spot_section() -> None:
    """The method's blind spot in words, and its example run live on request (one call, wherever it is placed)."""
    st.markdown(BLIND_SPOT_TEXT)
    if st.button("Run the example: 100 audits with each ω on an evenly spread original arm", key="blind_spot_run"):
        st.markdown(_blind_spot_example().reading)
