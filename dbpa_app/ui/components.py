"""Elements shared by several pages: errors, the result strip, readings, downloads."""

from __future__ import annotations

import json
import logging
import traceback
from contextlib import contextmanager

import numpy as np
import streamlit as st

from dbpa_core.present.formatting import counted, format_number, unbroken
from dbpa_core.present.readings import (decision, declares_change, format_pvalue, null_splits, pvalue_floor_note,
                                        read_decision, read_effect, read_pvalue, read_statistic, significance_stars,
                                        test_decision)
from dbpa_core.present.verdicts import CHANGED, NO_CHANGE, plain_verdict
from dbpa_core.samplers import EndpointError, SamplingCancelled
from dbpa_core.data.scenarios import ScenarioError

from dbpa_core.samplers import redact, redact_logs, redact_url

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
    from dbpa_core.present.readings import format_share, read_adjusted_decision

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
    from dbpa_core.stats.sequential import SPENDING_LABELS

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


def downloads(*, table=None, record: dict | None = None, report_html=None, name: str, current: bool = True,
              inputs: dict | None = None) -> None:
    """CSV of a table, JSON of a result and the self-contained HTML report.

    ``inputs`` (the record's settings, :mod:`dbpa_core.present.csv_inputs`) follow the table's columns in
    the CSV only, so a CSV read on its own says what produced it; the screen's table stays as it is.

    ``report_html`` is a callable: the report (≈5 MB with plotly.js inlined,
    ≈0.5 s to build) is built when the user asks for it and kept for the
    session, keyed by what it reports, so a later click always finds its file
    (a deferred download once vanished between reruns: "MediaFileStorageError:
    Deferred file … not found", issue 29); a report that cannot be built says
    why instead of doing nothing.  An out-of-date result is never offered.
    """
    if not current:
        st.caption("Downloads are offered for current results only: run again to export.")
        return
    columns = st.columns(3)
    if table is not None:
        from dbpa_core.present.csv_inputs import with_inputs
        from dbpa_core.present.exports import frame_csv  # every CSV neutralises spreadsheet formulas

        from .runs import shared_call  # built once per table and inputs, not per session (issue 45: 0.1 s each)

        csv = shared_call(lambda table, inputs: frame_csv(table if inputs is None else with_inputs(table, inputs)),
                          table, inputs)
        columns[0].download_button("Download table (CSV)", csv.encode(), f"{name}.csv",
                                   "text/csv", key=f"{name}_csv", on_click="ignore")
    if record is not None:
        columns[1].download_button("Download result (JSON)", json.dumps(record, indent=2, default=float).encode(),
                                   f"{name}.json", "application/json", key=f"{name}_json", on_click="ignore")
    if report_html is not None:
        from dbpa_core.present.exports import frame_csv  # what the report is about: the table as the CSV says it

        with columns[2]:
            report_download(report_html, name=name, about=(frame_csv(table) if table is not None else "", record))


def report_download(report_html, *, name: str, about) -> None:
    """The HTML report: built on the first click, kept in the session for what it reports (``about``), then
    offered as an ordinary download of bytes that stay on the server for the session."""
    import hashlib

    def steady(value):  # the creation time and versions do not change what a report says
        if isinstance(value, dict):
            return {k: steady(v) for k, v in value.items() if k not in ("created", "versions")}
        return [steady(v) for v in value] if isinstance(value, (list, tuple)) else value

    def fingerprint(value) -> str:
        return json.dumps(steady(value), sort_keys=True, default=str)

    key = f"{name}_html_report"
    token = hashlib.sha256(fingerprint(about).encode()).hexdigest()
    kept = st.session_state.get(key)
    if kept is None or kept[0] != token:
        slot = st.empty()
        if slot.button("Prepare report (HTML)", key=f"{name}_html_prepare",
                       help="One file with the figures, readings and settings; opens without a network."):
            slot.empty()
            try:
                with st.spinner("Building the report…"):
                    st.session_state[key] = kept = (token, report_html().encode())
            except Exception as error:  # noqa: BLE001 - say why, never fail silently
                log.error("report %s failed\n%s", name, traceback.format_exc())
                st.error(f"The HTML report could not be built ({type(error).__name__}: {error}). The CSV and JSON "
                         "downloads hold the same numbers.")
                return
        else:
            return
    st.download_button("Download report (HTML)", kept[1], f"{name}.html", "text/html", key=f"{name}_html",
                       on_click="ignore", help="One file with the figures, readings and settings; opens without a "
                                               "network.")


def family_downloads(family, settings, *, name: str, current: bool = True, explanations=None, models=None,
                     request=None, **context) -> None:
    """Downloads of a family run, every one built from ``family`` itself: the table (CSV), the full
    record (JSON) and the HTML report say what the screen says (correction, α, k, B, seed, ω), and
    with ``explanations`` (one per perturbation) what changed in each; ``models`` as in
    :func:`report_settings`.  With ``request`` (the run's AuditRequest) the record takes its settings
    from it: the scenario and the replicate ("Resample" r draws other outputs than the seed alone; a
    home-page download after a Resample recorded neither and could not be re-run)."""
    from dbpa_core.present.csv_inputs import family_inputs
    from dbpa_core.present.exports import family_frame, family_html, family_record

    if request is not None:
        ran = {key: value for key, value in request.settings().items() if value is not None}
        context = {**ran, **({"scenario": request.scenario} if request.scenario else {}), **context}
    record = family_record(family, name=name, settings={**report_settings(settings, models=models), **context},
                           explanations=explanations)
    downloads(table=family_frame(family), record=record, report_html=lambda: family_html(family, record), name=name,
              current=current, inputs=family_inputs(record))


def report_settings(settings, *, models=None) -> dict:
    """The sidebar settings as a report records them (no API key; requests hold no credentials).

    ``models`` (label → SamplerConfig) is for a page that compares models: each drew its outputs with its
    own sampler and temperature, so the record names those instead of the sidebar's (the alignment JSON
    said "sampler: recorded" for a comparison of simulated models against the recorded one).
    """
    if models is not None:
        recorded = {"models": {name: config.as_mapping() for name, config in models.items()},
                    "embedder": settings.embedder.as_mapping(), "seed": settings.seed}
        if any(config.backend == "simulated" for config in models.values()):
            recorded["outputs"] = ("the simulated models' outputs are synthetic text (not a language model): a "
                                   "teaching aid, not a finding about a real model")
        return recorded
    recorded = {"sampler": settings.sampler.as_mapping(), "embedder": settings.embedder.as_mapping(),
                "temperature": settings.temperature, "max_tokens": settings.max_tokens, "seed": settings.seed}
    if settings.sampler.backend == "simulated":  # a report read away from the screen must say so too
        recorded["outputs"] = ("synthetic text from the simulated backend (not a language model): true effects "
                               "are known by construction; a teaching aid, not a finding about a real model")
    return recorded


def settings_inputs(settings) -> dict:
    """The sidebar settings as the inputs a shown result depends on (for :mod:`ui.freshness`)."""
    sampler, embedder = settings.sampler, settings.embedder
    return {"backend": sampler.backend if sampler.backend != "openai"
            else f"{sampler.model} at {sampler.base_url or 'api.openai.com'}",
            "temperature": settings.temperature, "max tokens": settings.max_tokens, "seed": settings.seed,
            "embedder": embedder.name if embedder.name == "minilm" else f"{embedder.model} at {embedder.base_url}"}


def show_table(frame) -> None:
    """A result table on screen: every number written for people (:func:`dbpa_core.present.formatting.people_formatters`)
    in a static table whose columns are sized to their content and whose cells wrap, so no header or cell is
    ever cut at a projector's 1024 px (issue 29; the downloads keep the raw numbers).

    A table whose columns carry their source (``"p · this project"``, ``"ω · paper (printed)"``) is too wide
    for one screen at 1024 px: it is shown as one table per source, each headed by the source's name, with
    the row labels repeated; the headers keep their suffix (a static table shows the frame's own column
    names, which the downloads and tests read).
    """
    sources = list(dict.fromkeys(str(c).rsplit(" · ", 1)[1] for c in frame.columns if " · " in str(c)))
    if len(frame.columns) <= 7 or not sources:
        _static_table(frame)
        return
    keys = [c for c in frame.columns if " · " not in str(c)]
    for source in sources:
        part = frame[keys + [c for c in frame.columns if str(c).endswith(f" · {source}")]]
        st.markdown(f"**{source}**")
        _static_table(part)


#: A static table of more columns than this has its cells' side padding halved (:func:`_static_table`).
COMPACT_FROM = 8
COMPACT_CELLS = "padding-left: 3px; padding-right: 3px;"


def _static_table(frame) -> None:
    from dbpa_core.present.formatting import people_formatters

    # st.table renders its cells as Markdown: a lone "*" (one star) became a bullet and "***" a rule.
    text = {column: markdown_text for column in frame.columns if frame[column].dtype == object
            or str(frame[column].dtype) in ("str", "string")}
    styled = frame.style.format({**text, **people_formatters(frame)})
    if len(frame.columns) > COMPACT_FROM:
        # Half the side padding (6 px → 3 px): nine columns at a projector's 1024 px overflowed the page by a
        # few pixels and cut the last one ("FAIL TC / REJECT", a sequential family, trial 5).
        styled = styled.set_table_styles([{"selector": cell, "props": COMPACT_CELLS} for cell in ("th", "td")])
    st.table(styled, hide_index=True)


def markdown_text(value) -> str:
    """``value`` as literal text inside Markdown (stars, underscores, back-ticks, … escaped)."""
    import re

    return re.sub(r"([\\`*_#~|\[\]])", r"\\\1", str(value))


def show_prompt(title: str, prompt: str, system: str = "") -> None:
    """A prompt exactly as sent (as text, never rendered)."""
    st.markdown(f"**{title}**")
    if system:
        st.caption("system prompt")
        st.code(system, language=None, wrap_lines=True)
    st.code(prompt, language=None, wrap_lines=True)


def recorded_limit(arms) -> int:
    """The largest k every arm, ``(prompt, system)`` as sent, has recorded responses for (0 if one has none)."""
    from dbpa_core.audit.request import SamplerConfig

    from .resources import sampler_for

    sampler = sampler_for(SamplerConfig("recorded"))
    return min(sampler.available(prompt, system) for prompt, system in arms)


def recorded_cap_note(limit: int) -> str:
    """What the page says under a k capped at what the recorded backend holds."""
    return f"Recorded backend: {limit} responses per prompt were recorded, so k is at most {limit}."


def k_input(column, settings, arms, *, default: int, key: str, smallest: int = 2, largest: int = 500) -> int:
    """The "Samples per arm k" box of a run of ``arms`` (``(prompt, system)`` pairs as sent).

    On the recorded backend it is capped at what was recorded for every arm, and the page says so: a k
    above it failed only after seconds of work, naming the sampler's ``n`` (trial 5).  A k kept from
    another backend is clamped into the box's range before the box is drawn (Streamlit refuses a value
    above its maximum).
    """
    limit = largest
    if settings.sampler.backend == "recorded":
        limit = min(largest, recorded_limit(arms))
        if limit < smallest:
            raise ValueError(f"`Backend`: fewer than {smallest} responses were recorded for these prompts; pick "
                             "a scenario's prompts or a live backend in the sidebar.")
    st.session_state[key] = max(smallest, min(int(st.session_state.get(key, default)), limit))
    k = int(column.number_input("Samples per arm k", smallest, limit, key=key))
    if settings.sampler.backend == "recorded":
        st.caption(recorded_cap_note(limit))
    return k


def cost_note(settings, prompts, k: int, *, models=None) -> None:
    """The call, token and dollar estimate, shown before a run.

    ``models`` (label → SamplerConfig), on a page that compares models: one line per model, each priced at its
    own backend over ``prompts`` (a recorded model replays its answers, a simulated one is free), not at the
    sidebar's (a trial read "makes 360 generation calls" for a recorded and a simulated model).
    """
    from dbpa_core.audit.costs import estimate_cost

    from .models import with_model

    lines = []
    for label, sampler in (models or {"": settings.sampler}).items():
        priced = with_model(settings, sampler)  # its output cap: the sidebar's, or the recording's
        name = sampler.model if sampler.backend == "openai" else sampler.backend
        estimate = estimate_cost(list(prompts), int(k), max_tokens=priced.max_tokens, sampler_model=name,
                                 embedder_model=settings.embedder.model or "minilm")
        lines.append(f"- **{label}**: {estimate.reading()}" if label else estimate.reading())
    from .timing import prompts_time, time_line  # the time, said before the run (issue 45)

    timed = time_line(prompts_time(settings, prompts, int(k), models=models))
    st.info("\n".join(lines) + (f"\n\n{timed}" if timed else ""))


#: The FDR levels a "What changed" panel offers for its themes (Benjamini–Hochberg).
FDR_LEVELS = (0.01, 0.05, 0.1, 0.2)


def what_changed(audited, *, key: str, declared: bool | None, arms=("original", "perturbed"), coordinates=None,
                 method: str = "pca", seed: int = 0, same_picture: bool = True):
    """The "What changed" panel under a two-arm result: readings, themes table, theme cloud, representatives.

    ``audited`` is a :class:`ui.runs.Audited` (the explanation is cached with
    it); ``declared`` the decision the page shows for the same two arms (:func:`declares_change`; themes
    found where the test declared no change are said to be a lead, not the finding); ``coordinates`` the 2-D projection the page's cloud drew (computed
    here with ``method`` and ``seed`` when None); ``same_picture`` says that the
    page drew that projection above (its caption then says so).  Only themes significant after
    Benjamini–Hochberg are read as findings; with none, the readings say the
    change, if any, is diffuse.  Returns the explanation, for the page's
    downloads.
    """
    from dbpa_core.present import explanation as ex
    from dbpa_core.present.readings import (read_explanation, read_explanation_method, read_representatives,
                                            read_themes_beside_test, theme_name)

    from .runs import explanation, projection

    original, perturbed = audited.result.original, audited.result.perturbed
    with st.container(border=True, key=f"{key}_what_changed"):
        st.subheader("What changed", anchor=False)
        fdr = st.select_slider("False discovery rate of the themes", FDR_LEVELS, 0.1, key=f"{key}_fdr",
                               help="Benjamini–Hochberg level across the themes: on average at most this share of "
                                    "the themes declared are chance groupings. It only re-reads the same p-values.")
        found = explanation(audited, fdr=fdr)
        sentences = read_explanation(found, arms=arms)
        if found.significant_themes:
            for sentence in sentences:
                st.markdown(sentence)
            beside = read_themes_beside_test(found, declared=declared)
            if beside:
                st.info(beside, icon=":material/info:")
        else:
            st.info(sentences[0], icon=":material/blur_on:")
        st.caption(read_explanation_method(found))
        # The typical outputs are listed under the table, for the significant themes only (they are the
        # findings): a column of long texts would squeeze the table at 1024 px.
        table = ex.themes_table(found, arms=arms).drop(columns="typical output")
        # p at its floor 1/(B+1) reads "≤ …" as on the p-value card; q is a BH adjustment, not a floor.
        table["p"] = [unbroken(format_pvalue(value, found.n_resamples, exact=found.exact)) for value in table["p"]]
        table["q (BH)"] = [format_pvalue(value) for value in table["q (BH)"]]
        for column in (f"{arms[1]} (%)", f"{arms[0]} (%)"):
            table[column] = [ex.shown_share(value) for value in table[column]]
        st.table(table, hide_index=True)  # static: every cell wraps, nothing is cut
        st.caption(f"Each row is a theme: the share of each arm's outputs in it, its permutation p and its q after "
                   f"Benjamini–Hochberg; only rows marked *yes* (q ≤ {fdr:g}) are differences beyond chance, the "
                   "others are groupings any two samples show.")
        for theme in found.significant_themes:
            with st.expander(f"Typical outputs of the theme *{theme_name(theme)}*"):
                for text in theme.examples:
                    st.code(text or "(empty output)", language=None, wrap_lines=True)
        picture = ("The same 2-D picture as the outputs above:" if same_picture else
                   f"{projection_caveat(np.shape(original.embeddings)[1])} Outputs in 2-D ({method.upper()}):")
        if coordinates is None:
            coordinates = projection(np.vstack([original.embeddings, perturbed.embeddings]), method, seed=seed)
        texts = list(original.texts) + list(perturbed.texts)
        st.plotly_chart(ex.theme_cloud(coordinates, found, texts, arms=arms, method=method.upper()),
                        width="stretch", key=f"{key}_theme_cloud")
        st.caption(f"{picture} each output coloured by its theme (grey: not significant); circles are {arms[0]} "
                   f"outputs, diamonds {arms[1]}. Hover a point to read it and its theme.")
        st.plotly_chart(ex.theme_shares(found, arms=arms), width="stretch", key=f"{key}_theme_shares")
        st.caption("The share of each arm's outputs in each theme; a star marks a theme whose difference is beyond "
                   "chance after Benjamini–Hochberg.")
        st.markdown("**Representative outputs**")
        st.caption(read_representatives(arms=arms))
        for column, arm, name in zip(st.columns(2), ("x", "y"), arms):
            column.markdown(f"Most characteristic of the **{name}** outputs")
            chosen = found.representative[arm]
            for rank, (text, witness) in enumerate(zip(chosen.texts, chosen.witness), start=1):
                column.caption(f"{rank} · witness {witness:+.3f}")
                column.code(text or "(empty output)", language=None, wrap_lines=True)
    return found


def result_downloads(test, *, alpha: float, label: str, name: str, title: str, current: bool = True,
                     explanation=None, arms=("original", "perturbed"), **context) -> None:
    """JSON and HTML of one two-arm test, with its "What changed" when ``explanation`` is given."""
    from dbpa_core.present.exports import explanation_record, result_html
    from dbpa_core.present.readings import result_to_dict

    if explanation is not None:
        context["explanation"] = explanation_record(explanation, arms=arms, declared=declares_change(test, alpha))
    record = result_to_dict(test, alpha=alpha, decision=test_decision(test, alpha), **context)
    downloads(record=record, report_html=lambda: result_html(test, record, title=title, alpha=alpha, label=label),
              name=name, current=current)
