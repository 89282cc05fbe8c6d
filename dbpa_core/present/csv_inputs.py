"""The inputs of a result as trailing columns of its CSV, so a CSV read on its own says what produced it.

A CSV forwarded without its JSON lost the scenario, k, B, seed, α and correction behind its numbers.
:func:`with_inputs` appends them as constant columns after the table's own (existing readers, which
read the leading columns by name or position, keep working); the values come from the JSON record
the download beside it is built from, never from the widgets, so the two cannot disagree.  The
``*_inputs`` functions pick each record's inputs; credentials never reach a cell (:func:`clean_inputs`).
"""

from __future__ import annotations

from collections.abc import Mapping

from .._validation import is_secret_name, redact, redact_mapping

#: Plain column names of a record's keys (what a reader of the CSV calls them); other keys read with spaces.
COLUMN_NAMES = {"k": "samples per arm k", "n_resamples": "permutations B", "alpha": "alpha",
                "correction": "correction", "discrepancy": "discrepancy ω", "similarity": "similarity",
                "seed": "seed", "replicate": "replicate", "sampler": "sampler", "embedder": "embedder",
                "max_tokens": "max tokens", "n_prompts": "prompts n", "m": "reference answers m",
                "q": "substituted share q", "method": "test", "max_fpr": "allowed FPR"}
#: Keys a column would only repeat (correction_name spells the correction) or that no cell can hold usefully.
_LEFT_OUT = {"correction_name"}


def _cell(value):
    """A setting as one CSV cell: a mapping as ``key=value; …``, a list as ``a, b``, None as empty."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        # a mapping of mappings (the models a page compared) reads "label (backend=…, temperature=…); …"
        return "; ".join(f"{key} ({_cell(item).replace('; ', ', ')})" if isinstance(item, Mapping)
                         else f"{key}={_cell(item)}" for key, item in value.items() if not is_secret_name(str(key)))
    if isinstance(value, list | tuple):
        return ", ".join(str(_cell(item)) for item in value)
    return value


def clean_inputs(inputs: Mapping) -> dict:
    """``inputs`` with every secret-named key (``api_key``, ``token``, …) dropped, at any depth, and every
    text through :func:`~dbpa_core._redact.redact` (a URL's password, a key's shape, a key in use)."""
    def drop(value):
        if isinstance(value, Mapping):
            return {key: drop(item) for key, item in value.items() if not is_secret_name(str(key))}
        return [drop(item) for item in value] if isinstance(value, list | tuple) else value

    return redact_mapping(drop(dict(inputs)))


def with_inputs(frame, inputs: Mapping):
    """A copy of ``frame`` with one trailing constant column per input (its plain name, :data:`COLUMN_NAMES`).

    Parameters
    ----------
    frame : pandas.DataFrame
        The table as the CSV held it: its columns stay first, in their order.
    inputs : mapping
        The settings of the record the JSON download holds (:func:`family_inputs`, :func:`rut_inputs`,
        :func:`roc_inputs`); nested mappings become one ``key=value; …`` cell.

    Returns
    -------
    pandas.DataFrame
        Only for the CSV: the screen shows ``frame`` itself.
    """
    from .. import __version__

    table = frame.copy()
    # The tool that wrote the file comes last, after the inputs the record holds.
    for key, value in {**clean_inputs(inputs), "dbpa_explorer_version": __version__}.items():
        if key in _LEFT_OUT:
            continue
        name = COLUMN_NAMES.get(key, str(key).replace("_", " "))
        while name in table.columns:  # never overwrite a result column with a setting of the same name
            name = f"{name} (setting)"
        cell = _cell(value)
        table[name] = [redact(cell) if isinstance(cell, str) else cell] * len(table)
    return table


def family_inputs(record: dict) -> dict:
    """The inputs of a family record (:func:`~dbpa_core.present.records.family_record`): its ``settings``
    (k, B, seed, similarity, ω, correction, α, sampler, embedder, scenario when given, …)."""
    return dict(record["settings"])


def rut_inputs(record: dict) -> dict:
    """The inputs of a RUT record (:func:`~dbpa_core.present.records.rut_record`): the test, the audited
    target, the score, α, then the run's settings (mode, target choice, q, n, m, seed)."""
    settings = {("target choice" if key == "target" else key): value
                for key, value in (record.get("settings") or {}).items()}
    return {"method": record["method"], "target": record["target"], "score": record["score"],
            "alpha": record["alpha"], **settings}


def roc_inputs(record: dict) -> dict:
    """The inputs of a TPR/FPR record (a recorded setup's, :func:`~dbpa_core.present.reproduction.setup_record`,
    or a live run's, :func:`~dbpa_core.present.records.rates_record`): the setup and design, then its settings."""
    return {**{key: record[key] for key in ("setup", "design", "max_fpr") if key in record}, **record["settings"]}


def settings_inputs(record: dict, *, longest: int = 8) -> dict:
    """The inputs of a paper view's record (the Stability study's, a reproduced experiment's): the experiment
    and its ``settings`` (cost d, B, seed, …), leaving out long lists (the grid of a curve, not an input).

    The Stability and Alignment paper views' CSVs did not say their cost d, B or seed (issue 45).
    """
    settings = record.get("settings") or {}
    kept = {key: value for key, value in settings.items()
            if not (isinstance(value, list | tuple) and len(value) > longest)}
    if record.get("experiment") == "stability" and "n_resamples" in kept:
        # The Stability study's B resamples items for the ranking's support: not a permutation test's B.
        kept = {("bootstrap B" if key == "n_resamples" else key): value for key, value in kept.items()}
    return {**({"experiment": record["experiment"]} if "experiment" in record else {}), **kept}
