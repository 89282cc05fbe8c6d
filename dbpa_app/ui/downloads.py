"""The downloads under a result: its table (CSV), its record (JSON) and its self-contained HTML report."""

from __future__ import annotations

import json
import logging
import traceback

import streamlit as st

from dbpa_core.present.readings import test_decision
from dbpa_core.stats.decision import declares_change

log = logging.getLogger("dbpa_explorer")


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
        from dbpa_core.present.tables import frame_csv  # every CSV neutralises spreadsheet formulas

        from .cache import shared_call  # built once per table and inputs, not per session (issue 45: 0.1 s each)

        csv = shared_call(lambda table, inputs: frame_csv(table if inputs is None else with_inputs(table, inputs)),
                          table, inputs)
        columns[0].download_button("Download table (CSV)", csv.encode(), f"{name}.csv",
                                   "text/csv", key=f"{name}_csv", on_click="ignore")
    if record is not None:
        columns[1].download_button("Download result (JSON)", json.dumps(record, indent=2, default=float).encode(),
                                   f"{name}.json", "application/json", key=f"{name}_json", on_click="ignore")
    if report_html is not None:
        from dbpa_core.present.tables import frame_csv  # what the report is about: the table as the CSV says it

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
    from dbpa_core.present.tables import family_frame
    from dbpa_core.present.exports import family_html
    from dbpa_core.present.records import family_record

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


def result_downloads(test, *, alpha: float, label: str, name: str, title: str, current: bool = True,
                     explanation=None, arms=("original", "perturbed"), **context) -> None:
    """JSON and HTML of one two-arm test, with its "What changed" when ``explanation`` is given."""
    from dbpa_core.present.records import explanation_record
    from dbpa_core.present.exports import result_html
    from dbpa_core.present.records import result_to_dict

    if explanation is not None:
        context["explanation"] = explanation_record(explanation, arms=arms, declared=declares_change(test, alpha))
    record = result_to_dict(test, alpha=alpha, decision=test_decision(test, alpha), **context)
    downloads(record=record, report_html=lambda: result_html(test, record, title=title, alpha=alpha, label=label),
              name=name, current=current)
