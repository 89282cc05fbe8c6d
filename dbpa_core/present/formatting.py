"""Numbers for people: one place that decides how a statistic, a p-value or an axis tick is written.

Every page, table and export that shows a number to a person goes through
these functions, so that ``8.6e-17`` never reads ``0000000008`` in one place
and ``0.569`` beside ``57 %`` in another (issue 29).
"""

from __future__ import annotations

import math

import numpy as np

#: Below this, a statistic of this project (all between 1e-6 and 1e3) is floating-point noise: the standard
#: deviation of five equal values computes as 8.6e-17, which a person should read as 0.
NOISE = 1e-12
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def format_number(value, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits; scientific notation (``1.2 × 10⁻⁵``) outside
    [0.001, 100 000); ``"0"`` for floating-point noise; integers as integers with thousands separators.

    Examples
    --------
    >>> [format_number(x) for x in (0.013554, 1234567.0, 8.6e-17, 2.5e-5, 12.0, -0.004009, float("inf"))]
    ['0.0136', '1.23 × 10⁶', '0', '2.5 × 10⁻⁵', '12', '-0.00401', '∞']
    >>> format_number(1000), format_number(0.5)
    ('1,000', '0.5')
    """
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    value = float(value)
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if abs(value) < NOISE:
        return "0"
    if 1e3 <= abs(value) < 1e5:  # "1,300", not "1.3e+03"
        return f"{round(value):,}"
    if 1e-3 <= abs(value) < 1e5:
        text = f"{value:.{digits}g}"
        if "e" not in text:
            return text
    mantissa, exponent = f"{value:.{max(digits - 1, 0)}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


#: The short name of each discrepancy ω on cards, axes and headlines (its full name is its class's ``label``).
DISCREPANCY_SYMBOLS = {"jsd": "JSD", "js_distance": "JS distance", "euclidean": "Euclidean", "wasserstein": "W₁",
                       "ks": "KS", "energy": "energy", "mmd": "MMD²", "centroid": "centroid²"}


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless n is 1: ``"1 item"``, ``"2 items"``, ``"5 more arms"``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def discrepancy_symbol(name: str) -> str:
    """``"jsd"`` → ``"JSD"``: the name a card or an axis shows for a discrepancy code (the code itself if unknown)."""
    return DISCREPANCY_SYMBOLS.get(str(name).lower(), str(name))


def log_ticks(low: float, high: float, *, most: int = 9) -> tuple[list[float], list[str]]:
    """Tick positions and labels for a log axis from ``low`` to ``high``: 1–2–5 steps per decade while at
    most ``most`` ticks fit, else whole decades (every second one, and so on), each written by
    :func:`format_number`, so a reader never sees Plotly's bare mantissas ("5 0.1 2 5 1 2").

    Examples
    --------
    >>> log_ticks(0.05, 12)[1]
    ['0.05', '0.1', '0.2', '0.5', '1', '2', '5', '10']
    >>> log_ticks(1e-4, 1e4)[1]
    ['1 × 10⁻⁴', '0.001', '0.01', '0.1', '1', '10', '100', '1,000', '10,000']
    """
    low, high = float(low), float(high)
    if not (low > 0 and high > 0):
        raise ValueError(f"`low` and `high` must be positive for a log axis; got {low!r} and {high!r}.")
    low, high = min(low, high), max(low, high)
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for steps in ((1, 2, 5), (1,)):
        ticks = [m * 10.0 ** e for e in range(first, last + 1) for m in steps]
        ticks = [t for t in ticks if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)]
        if len(ticks) <= most:
            break
    else:
        stride = math.ceil(len(ticks) / most)
        ticks = ticks[::stride]
    if len(ticks) < 2:  # a range inside one step: its ends
        ticks = sorted({low, high})
    labels = [format_number(int(t) if 1 <= t < 1e5 and float(t).is_integer() else t, 2) for t in ticks]
    return ticks, labels


def unbroken(text: str) -> str:
    """``"≤ 0.001"`` with a no-break space: a narrow table column wrapped it after the "≤" at 1024 px."""
    return text.replace("≤ ", "≤\u00a0")


def people_formatters(frame) -> dict:
    """Per numeric column of a result table, how a person reads it (a callable for ``DataFrame.style.format``):
    p-value columns (named ``p…``) by :func:`~dbpa_core.present.readings.format_pvalue`, true effects and
    rates (columns naming ``true effect``, ``TPR``, ``FPR``, `` rate`` or a share ``p < .05``) as percentages,
    booleans as yes/no, integers with thousands separators, other numbers by :func:`format_number` (or with
    ``frame.attrs["decimals"]`` fixed decimals, where a table holds one quantity).  The values themselves stay
    numbers (the CSV and the tests read them); only what is shown changes."""
    import pandas as pd

    from .readings import format_pvalue, format_share

    def guarded(write):
        return lambda value: "—" if value is None or (isinstance(value, float) and math.isnan(value)) else write(value)

    formatters = {}
    for column in frame.columns:
        values = frame[column]
        if pd.api.types.is_bool_dtype(values):  # "differs: True" is Python, not English
            formatters[column] = lambda value: "yes" if value else "no"
            continue
        if not pd.api.types.is_numeric_dtype(values):
            continue
        name = str(column)
        floor = (frame.attrs["pvalue_floor"] if name == "p" and "pvalue_floor" in frame.attrs
                 else frame.attrs.get("pvalue_floors", {}).get(column))
        if floor is not None:  # permutation p-values of one B (and exactness): "≤" at the floor
            n_resamples, exact = floor
            formatters[column] = guarded(lambda v, b=n_resamples, e=exact: unbroken(format_pvalue(v, b, exact=e)))
        elif name == "p" or name.startswith(("p ", "p-", "p·", "p(", "p adjusted")):
            formatters[column] = guarded(format_pvalue)
        elif any(word in name for word in ("true effect", "TPR", "FPR", " rate", "p < .")):  # "controls p < .05"
            formatters[column] = guarded(format_share)
        elif pd.api.types.is_integer_dtype(values):
            formatters[column] = guarded(lambda v: format_number(int(v)))
        elif frame.attrs.get("decimals") is not None:  # one quantity, one precision ("0.880" beside "0.872")
            formatters[column] = guarded(lambda v, d=frame.attrs["decimals"]: f"{v:.{d}f}")
        else:
            formatters[column] = guarded(format_number)
    return formatters


def people_frame(frame):
    """A copy of a result table with every number written for people (see :func:`people_formatters`)."""
    shown = frame.copy()
    for column, write in people_formatters(frame).items():
        shown[column] = [write(value) for value in frame[column]]
    return shown
