"""Result tables as pandas DataFrames (the ``results.csv`` side of the exports)."""

from __future__ import annotations

import re

from .formatting import significance_stars
from .explanation_readings import ARM_NAMES
from .readings import correction_name, decision


def family_table(labels, kinds, statistics, pvalues, adjusted, *, true_effects=None):
    """The many-perturbations table as a pandas DataFrame (one row per perturbation)."""
    import pandas as pd

    table = pd.DataFrame({
        "perturbation": list(labels),
        "kind": list(kinds),
        "ω": list(statistics),
        "p": list(pvalues),
        f"p adjusted ({correction_name(adjusted.method)})": list(adjusted.pvalues_adjusted),
        "stars": [significance_stars(p) for p in adjusted.pvalues_adjusted],
        "decision": [decision(p, adjusted.alpha) for p in adjusted.pvalues_adjusted],
    })
    if true_effects is not None:
        table.insert(2, "true effect (simulated)", list(true_effects))
    return table


#: The column name of each discrepancy's statistic (``DBPAResult.discrepancy`` is the instance's repr).
STATISTIC_NAMES = {"JensenShannon": "ω", "Centroid": "centroid T", "MMD": "MMD", "Energy": "energy distance"}


def statistic_name(discrepancy: str) -> str:
    """The table's name for a statistic: "ω" for the paper's JSD, "centroid T" for the centroid distance, …"""
    return STATISTIC_NAMES.get(str(discrepancy).split("(")[0], "ω" if not discrepancy else "statistic")


def family_frame(family):
    """The family's table (a DataFrame): the one the app shows and the CSV holds.

    The simulated model's true effects are a column only when every perturbation has one.  A sequential
    family has a "samples per arm" column: each perturbation stops on its own, and a CSV without it read like
    a run at the largest k (trial 5).
    """
    results = family.results
    known = all(r.true_effect is not None for r in results)
    table = family_table([r.label for r in results], [r.kind for r in results], [r.test.statistic for r in results],
                         [r.test.pvalue for r in results], family.adjusted,
                         true_effects=[r.true_effect for r in results] if known else None)
    if any(r.test.kind == "sequential" for r in results):
        table.insert(2, "samples per arm", [r.test.n_per_arm for r in results])
    # "ω" is the paper's JSD statistic; a family tested with another discrepancy names its own (a CSV column
    # "ω" held the centroid distance T, issue 45).
    names = {statistic_name(getattr(r.test, "discrepancy", "")) for r in results}
    if names != {"ω"}:
        table = table.rename(columns={"ω": names.pop() if len(names) == 1 else "statistic"})
    fixed = all(r.test.kind != "sequential" for r in results)  # a sequential p has no single floor
    floors = {(r.test.n_resamples, r.test.exact) for r in results} if fixed else set()
    if len(floors) == 1:
        # One permutation floor for the whole p column: on screen a p at it reads "≤ 0.001" as on the card
        # (present.formatting.people_formatters); the CSV keeps the number.
        table.attrs["resampling"] = floors.pop()
    return table


def alignment_table(family):
    """The alignment family's table (a DataFrame): each model's ω, p, adjusted p, decision, and whether it is
    aligned with the reference (:func:`dbpa_core.audit.experiments.aligned`)."""
    from ..audit.experiments import aligned

    table = family_frame(family).rename(columns={"perturbation": "model", "ω": "ω (JSD)"})
    if not any(table["kind"]):  # models have no control/target kind: an empty column only takes room
        table = table.drop(columns=["kind"])
    # Not rejecting is not evidence of alignment (a small k cannot tell real from synthetic text): say only that.
    table["aligned with reference"] = ["no difference shown at this k" if same else "no (differs)"
                                       for same in aligned(family)]
    return table


def family_csv(family, record: dict | None = None) -> str:
    """The family's table as CSV; with its ``record`` (:func:`family_record`), the record's settings follow
    the table's columns (:func:`~dbpa_core.present.csv_inputs.with_inputs`), so the CSV says what produced it."""
    from .csv_inputs import family_inputs, with_inputs

    table = family_frame(family)
    return frame_csv(table if record is None else with_inputs(table, family_inputs(record)))


#: A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection"; the
#: full-width forms too, which some spreadsheets read as their ASCII twins).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")


_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_safe(value):
    """``value`` for a CSV cell: a text a spreadsheet would run as a formula gets a leading apostrophe.

    OWASP's rule: a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
    (after any spaces) is prefixed with ``'``, so it is shown as text; a plain number written as
    text (``-0.5``) is left as it is.  Numbers, booleans and missing values are not texts and pass.
    """
    if not isinstance(value, str):
        return value
    start = value.lstrip(" ")
    if start.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value.strip()):
        return "'" + value
    return value


def frame_csv(frame) -> str:
    """A table as CSV with every cell and column name through :func:`csv_safe`: the one way every CSV
    the project writes (the command line's results.csv, the app's downloads) is made."""
    safe = frame.map(csv_safe)
    safe.columns = [csv_safe(str(column)) for column in safe.columns]
    # CRLF rows (RFC 4180): a cell holding a lone carriage return is then quoted, so it cannot split its row.
    return safe.to_csv(index=False, lineterminator="\r\n")


def explanation_csv(explanation, *, arms=ARM_NAMES) -> str:
    """The themes table as CSV, every text cell safe to open in a spreadsheet (:func:`frame_csv`)."""
    from .explanation import themes_table

    return frame_csv(themes_table(explanation, arms=arms))
