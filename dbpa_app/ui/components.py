"""Elements shared by several pages: errors, the result strip, readings, downloads."""

from __future__ import annotations

import logging
import traceback
from contextlib import contextmanager

import numpy as np
import streamlit as st

from dbpa_core.data.scenarios import ScenarioError
from dbpa_core.present.formatting import counted, format_number, format_pvalue, pvalue_floor_note, significance_stars
from dbpa_core.present.readings import (
    decision,
    null_splits,
    read_decision,
    read_effect,
    read_pvalue,
    read_statistic,
    test_decision,
)
from dbpa_core.present.verdicts import CHANGED, NO_CHANGE, plain_verdict
from dbpa_core.samplers import EndpointError, SamplingCancelled, redact, redact_logs, redact_url
from dbpa_core.stats.decision import declares_change

# Plotly (via dbpa_core.present.figures) is imported where a figure is drawn, not at page start.

log = logging.getLogger("dbpa_explorer")
redact_logs()  # this logger and the HTTP clients' never write a credential

def projection_caveat(dimensions: int) -> str:
    """Why the 2-D picture may disagree with the test, with the embeddings' real dimension (384 for MiniLM;
    an uploaded file's own embeddings have theirs)."""
    return (f"The test runs in the full embedding space ({counted(dimensions, 'dimension')}); this picture is a "
            "2-D projection, so arms that overlap here can still differ, and the reverse.")


@contextmanager
def guard():
    """Turn every error into an ``st.error`` with the fix; never a traceback on the page."""
    try:
        yield
    except SamplingCancelled as error:
        st.warning(redact(f"Cancelled: {error} Run again to continue from where it stopped."))
    except EndpointError as error:
        # The endpoint failed (network, HTTP, empty replies): the message names the URL, the fix and,
        # for SamplingFailed, how many samples are kept in the store.
        st.error(redact(f"The model endpoint could not answer. {error}"), icon=":material/cloud_off:")
    except (ValueError, KeyError, ScenarioError) as error:
        st.error(redact(str(error).strip(chr(39))))
    except Exception as error:  # noqa: BLE001 - the page must never show a traceback
        log.error("unexpected error\n%s", redact(traceback.format_exc()))
        name = type(error).__name__
        hint = ""
        if "Connection" in name or "Timeout" in name or "APIConnection" in name:
            hint = " Check the base URL in the sidebar and that the server is running."
        elif "Authentication" in name or "PermissionDenied" in name:
            hint = " Check the API key in the sidebar (or OPENAI_API_KEY)."
        elif "NotFound" in name:
            hint = " Check the model name in the sidebar."
        elif "RateLimit" in name:
            hint = " The server is rate-limiting: lower 'Parallel calls' or try again later."
        st.error(redact(f"{name}: {error}.{hint}"))


def result_strip(result, alpha: float, *, label: str = "ω", current: bool = True) -> None:
    """Samples per arm, α, B, T, p and the decision, each with a plain reading."""
    # Three cards, not five: at a projector's 1024 px five cut the p-value ("≤ 1/(B+1…", issue 29).
    columns = st.columns([1, 1.4, 1])
    columns[0].metric(f"Observed {label}", format_number(result.statistic))
    pvalue_metric(columns[1], result)
    columns[2].metric("Samples per arm", f"{result.n_original} / {result.n_perturbed}")
    st.caption(f"α = {alpha:g} · permutations B = {result.n_resamples:,}"
               + (" (every split: exact)" if result.exact else " random re-splits"))
    # The plain verdict is the headline (issue 45); the decision, the technical label, on its own line under it
    # so "FAIL TO REJECT H₀" is never cut.
    verdict_headline(plain_verdict(result.pvalue, alpha), current=current)
    st.metric("Decision" if current else "Decision (out of date)", decision(result.pvalue, alpha))
    st.caption(read_statistic(result.statistic, float(np.mean(result.null_distribution)), label, exact=result.exact))
    st.caption(read_pvalue(result.pvalue, result.n_resamples, exact=result.exact))
    st.caption(read_effect(result.effect_size, result.standardized_effect))
    if current:
        decision_box(result.pvalue, alpha, n_resamples=result.n_resamples, exact=result.exact)
    for message in result.warnings:
        st.warning(message)
    if result.kind == "fixed":  # B too small for α: "no change" would say nothing (a sequential test says it itself)
        from dbpa_core.stats.permutation import resolution_warning

        unreachable = resolution_warning(alpha, n_original=result.n_original, n_perturbed=result.n_perturbed,
                                         n_resamples=result.n_resamples, alternative=result.alternative)
        if unreachable:
            st.warning(unreachable)


def pvalue_metric(column, result, *, stars: bool = True) -> None:
    """The p-value card: short enough never to be cut ("≤ 0.001"); at its floor the label says so
    ("p-value · floor 1/(B+1)"), and the reading below the strip spells the floor out."""
    note = pvalue_floor_note(result.pvalue, result.n_resamples, exact=result.exact)
    value = format_pvalue(result.pvalue, result.n_resamples, exact=result.exact)
    column.metric("p-value" + (f" · {note}" if note else ""),
                  f"{value} {significance_stars(result.pvalue) if stars else ''}".strip())


def detection_and_control(family) -> None:
    """The method working, on one screen: the family's clearest target beside its first control, each with
    its decision, (corrected) p-value and one-sentence reading (issue 29: a first-time audience should not
    see "FAIL TO REJECT" before ever seeing the test detect anything).  Nothing is drawn for a family
    without both kinds.  A control that was (falsely) flagged is shown as it is."""
    from dbpa_core.present.formatting import format_share
    from dbpa_core.present.readings import read_adjusted_decision

    adjusted = family.adjusted
    rows = list(zip(family.results, adjusted.pvalues_adjusted))
    targets = [row for row in rows if row[0].kind == "target"]
    controls = [row for row in rows if row[0].kind == "control"]
    if not targets or not controls:
        return
    m = len(rows)
    # "Clearest" (smallest corrected p), not "strongest": a large true effect on a few outputs can be the less
    # clear of two (the simulated true effect is the share of outputs changed, not what the test sees).
    clearest = min(targets, key=lambda row: row[1])
    # "A real change" only where it is known by construction (simulated): a real model's target is the
    # scenario's intended change, whose effect is unknown (trial 7 read "A real change" under "the true effect
    # is unknown").
    kind = "A real change" if clearest[0].true_effect else "A target, meant to change the answers"
    shown = ((f"{kind} (the clearest of {len(targets)} targets: smallest p)", clearest),
             (f"A control beside it (the first of {len(controls)})", controls[0]))
    for column, (title, (result, pvalue)) in zip(st.columns(2), shown):
        with column.container(border=True):
            st.caption(title)
            truth = (f"Simulated true effect: {format_share(result.true_effect)}. "
                     if result.true_effect is not None else "")
            st.markdown(f"**{plain_verdict(pvalue, adjusted.alpha)}** · {result.label}")
            st.caption(f"{decision(pvalue, adjusted.alpha)}. " + truth
                       + read_adjusted_decision(float(pvalue), adjusted.alpha, adjusted.method, m))


def verdict_headline(text: str, *, current: bool = True) -> None:
    """The plain verdict ("Changed the answers") as a headline, marked when the result is out of date."""
    st.markdown(f"#### {text}" + ("" if current else " *(out of date)*"))


def decision_box(pvalue: float, alpha: float, *, headline: bool = False, plain: bool = False,
                 n_resamples: int | None = None, exact: bool = False) -> None:
    """The decision's reading in a box.  A detected change is a finding, not a success: a warning box
    when H₀ is rejected, an information box when it is not; ``headline`` puts the decision first, ``plain``
    as the plain verdict ("Changed the answers") with the technical label after it; given ``n_resamples``,
    an α out of the test's reach is said."""
    text = read_decision(pvalue, alpha, n_resamples=n_resamples, exact=exact)
    if headline and plain:
        text = f"**{plain_verdict(pvalue, alpha)}** · {decision(pvalue, alpha)} · {text}"
    elif headline:
        text = f"**{decision(pvalue, alpha)}** · {text}"
    (st.warning if pvalue <= alpha else st.info)(text)


def provenance(request) -> None:
    """Where the outputs behind a result came from, shown beside every result.

    ``request`` is the :class:`~dbpa_core.audit.request.AuditRequest` the shown result was run from, so the
    line describes that run, not the sidebar: a result kept out of date under a new backend said "Recorded
    SmolLM2 samples" for outputs drawn by the simulated backend (trial 7).  On the simulated backend the
    outputs are synthetic text whose true effect is known by construction; for typed prompts (no scenario)
    the simulator invents an answer distribution per prompt, so two different prompts nearly always differ
    and a rejection says nothing about any real model.
    """
    from .settings import BACKEND_LABELS

    config, seed, embedder = request.sampler, request.seed, request.embedder
    typed_prompts = not request.scenario
    # Typed prompts on the simulated backend: any two differ by construction (the warning below), so "known
    # truth" would only say that (trial 7 read it beside that warning).
    parts = ["Simulated (instant, synthetic text)" if typed_prompts and config.backend == "simulated"
             else BACKEND_LABELS.get(config.backend, config.backend)]
    if config.backend == "openai":
        parts.append(f"model {config.model or 'gpt-4o-mini'} at {redact_url(config.base_url) or 'api.openai.com'}")
    if config.backend != "recorded":
        parts.append(f"T = {config.temperature:g}, ≤ {config.max_tokens} tokens")
    parts.append(f"seed {seed}")
    parts.append("embedded by " + ("all-MiniLM-L6-v2" if embedder.name == "minilm"
                                   else embedder.model or "an OpenAI-compatible embedder"))
    st.caption("Outputs: " + " · ".join(parts))
    if config.backend == "simulated":
        if typed_prompts:
            st.warning("**Synthetic text.** The simulated backend is not a language model: for typed prompts it "
                       "writes made-up answers from a distribution drawn from each prompt's text, so any two "
                       "different prompts give different distributions by construction. The decision shows how "
                       "the test works; it says nothing about how a real model answers these prompts. Choose "
                       "*Local SmolLM2* or an API in the sidebar for a real answer.",
                       icon=":material/science:")
        else:
            st.caption("Simulated backend: synthetic answers whose true effect is known by construction — a "
                       "teaching aid, not a finding about a real model.")


def clouds(original, perturbed, *, method: str, key: str, seed: int = 0):
    """The output clouds with hover texts; selecting points shows their texts side by side.

    Returns the 2-D coordinates drawn (original arm first), so that the "What
    changed" cloud places every output where this one does.
    """
    from dbpa_core.present.figures import output_clouds

    from .runs import projection, shared_figure

    embeddings = np.vstack([original.embeddings, perturbed.embeddings])
    if method == "umap":
        from .resources import umap_ready

        umap_ready()
    coordinates = projection(embeddings, method, seed=seed)
    texts = list(original.texts) + list(perturbed.texts)
    figure = shared_figure(output_clouds, coordinates, (len(original.texts), len(perturbed.texts)), texts,
                           method=method.upper())
    event = st.plotly_chart(figure, key=key, on_select="rerun", selection_mode=("points", "box", "lasso"),
                            width="stretch")
    st.caption(projection_caveat(embeddings.shape[1]))
    chosen = sorted({int(p["customdata"]) for p in (event.selection.points if event and event.selection else [])
                     if "customdata" in p})
    if chosen:
        left, right = st.columns(2)
        k0 = len(original.texts)
        for column, title, indices in ((left, "outputs of the original x₀", [i for i in chosen if i < k0]),
                                       (right, "outputs of the perturbed x₁", [i - k0 for i in chosen if i >= k0])):
            column.markdown(f"**{title}** ({len(indices)} selected)")
            for index in indices:
                column.text(texts[index + (k0 if "perturbed" in title else 0)] or "(empty output)")
    else:
        st.caption("Select points (click, box or lasso) to read their outputs side by side.")
    return coordinates


def null_and_similarities(result, *, label: str, key: str) -> None:
    from dbpa_core.present.figures import null_histogram, similarity_histograms

    from .runs import shared_figure

    left, right = st.columns(2)
    left.plotly_chart(shared_figure(null_histogram, result, label=label), width="stretch", key=f"{key}_null")
    left.caption(f"Grey: ω on {null_splits(result.exact)} (what chance gives); orange: splits at least "
                 "as extreme as the observed split. The p-value is the orange share.")
    right.plotly_chart(shared_figure(similarity_histograms, result), width="stretch", key=f"{key}_sims")
    right.caption("P0: similarities between original outputs; P1: between original and perturbed outputs. "
                  "ω measures how far apart these two distributions are.")


def sequential_strip(result, *, label: str = "ω", key: str, current: bool = True) -> None:
    """Where a sequential test stopped, its stage-wise p and decision, each read; then ω's path and boundary."""
    from dbpa_core.present.figures import sequential_path
    from dbpa_core.present.readings import read_sequential
    from dbpa_core.stats.spending import SPENDING_LABELS

    from .runs import shared_figure

    columns = st.columns(3)
    # "20 / 20": "20 of at most 20" was cut to "20 of at …" in a third of the page at 1024 px (trial 7)
    columns[0].metric("Samples per arm", f"{result.n_per_arm} / {result.k_max}",
                      help=f"Drawn per arm when the test stopped / the most its plan allows ({result.k_max}).")
    columns[1].metric(f"{label} at the stop", format_number(result.statistic))
    columns[2].metric("Stage-wise p", f"{format_pvalue(result.pvalue)} {significance_stars(result.pvalue)}".strip())
    verdict_headline(CHANGED if declares_change(result, result.alpha) else NO_CHANGE, current=current)
    st.metric("Decision" if current else "Decision (out of date)", test_decision(result, result.alpha))
    st.caption(read_sequential(result))
    st.plotly_chart(shared_figure(sequential_path, result, label=label), width="stretch", key=f"{key}_path")
    st.caption(f"Red: {label} on everything drawn so far, after each batch of {result.batch_size} per arm. Dashed: "
               f"the boundary it must exceed to stop with a change (α = {result.alpha:g} spent over the looks, "
               f"{SPENDING_LABELS[result.spending]} spending). Grey: {label} when the arm labels are re-split "
               "within each batch, what chance alone gives. Peeking at a fixed-k p after every batch instead "
               "would raise false alarms well above α.")
    for message in result.warnings:
        st.warning(message)


# Re-exported: the pages (and their tests) import these from here.
from .downloads import (  # noqa: E402, F401
    downloads,
    family_downloads,
    report_download,
    report_settings,
    result_downloads,
)
from .inputs import cost_note, k_input, recorded_cap_note, recorded_limit  # noqa: E402, F401
from .tables import COMPACT_FROM, markdown_text, show_prompt, show_table  # noqa: E402, F401
