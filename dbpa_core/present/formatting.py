"""Numbers for people: one place that decides how a statistic, a p-value, a share or an axis tick is written.

Every page, table and export that shows a number to a person goes through
these functions, so that ``8.6e-17`` never reads ``0000000008`` in one place
and ``0.569`` beside ``57 %`` in another (issue 29).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_probability
from ..stats.cvm import RUT_PVALUE_RESOLUTION
from ..stats.resolution import resampling_floor


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


# ------------------------------------------------------------ p-values, stars and shares
#: (upper bound, stars) as in the paper's tables: * p < 0.05, ** p < 0.01, *** p < 0.001.
STAR_LEVELS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))


def significance_stars(pvalue: float) -> str:
    """Stars for a p-value: ``"***"`` < 0.001 ≤ ``"**"`` < 0.01 ≤ ``"*"`` < 0.05 ≤ ``""``.

    Examples
    --------
    >>> [significance_stars(p) for p in (0.0004, 0.004, 0.04, 0.4)]
    ['***', '**', '*', '']
    """
    pvalue = check_probability(pvalue, "pvalue", open_low=False, open_high=False)
    for bound, stars in STAR_LEVELS:
        if pvalue < bound:
            return stars
    return ""


def at_floor(pvalue: float, n_resamples: int | None, *, exact: bool = False) -> bool:
    """Whether ``pvalue`` is the smallest value its permutation test can give (no re-split as extreme)."""
    return n_resamples is not None and pvalue <= resampling_floor(n_resamples, exact=exact) * (1 + 1e-9)


def _round_up(value: float, digits: int = 2) -> float:
    """``value`` rounded *up* to ``digits`` significant digits (0.0142857 → 0.015; 0.000999 → 0.001)."""
    scale = 10.0 ** (math.floor(math.log10(value)) - digits + 1)
    return math.ceil(value / scale - 1e-9) * scale


def two_digits(value: float) -> str:
    """A small positive number to two significant digits, as a p-value card writes it ("0.0012", "1 × 10⁻⁴")."""
    return f"{value:.2g}" if value >= 1e-4 else format_number(value, 2)


def floor_value(n_resamples: int, *, exact: bool = False) -> str:
    """The floor itself, to three significant digits, for a sentence that says "1/(B+1) = …" (an equality:
    rounded to nearest, unlike the bound of :func:`format_pvalue`).  Three, not the bound's two: with two,
    1/801 read "= 0.0012" beside the table's "≤ 0.0013" (trial 7); "= 0.00125" reads as the number under
    both."""
    return f"{resampling_floor(n_resamples, exact=exact):.3g}"


def format_pvalue(pvalue: float, n_resamples: int | None = None, *, exact: bool = False) -> str:
    """A p-value for display: three decimals, two significant digits below 0.01, short enough for a card.

    Given ``n_resamples``, a p-value at its floor reads ``"≤ 0.001"`` (B = 999 or 1000): the test cannot
    say how much smaller the true p is, only that no re-split was as extreme as the observed one;
    :func:`pvalue_floor_note` names the floor (1/(B+1), or 1/N for exact enumeration) beside it.
    """
    if at_floor(pvalue, n_resamples, exact=exact):
        # A bound rounds up: the floor 1/70 = 0.0143 reads "≤ 0.015", never "≤ 0.014", which p is not.
        return f"≤ {two_digits(_round_up(resampling_floor(n_resamples, exact=exact)))}"
    return f"{pvalue:.3f}" if pvalue >= 0.01 else two_digits(pvalue)


def pvalue_floor_note(pvalue: float, n_resamples: int | None, *, exact: bool = False) -> str:
    """``"floor 1/(B+1)"`` (``"floor 1/N"``) when ``pvalue`` is at its floor, else ``""``: the words that say
    why a p-value is written ``≤ …``."""
    if not at_floor(pvalue, n_resamples, exact=exact):
        return ""
    return f"floor {'1/N' if exact else '1/(B+1)'}"


def format_percent(share: float, decimals: int = 0) -> str:
    """A share as a percentage with the project's space before the sign (``"16.1 %"``, as :func:`format_share`).

    Examples
    --------
    >>> format_percent(0.161, 1), format_percent(0.05), format_percent(0.001, 1)
    ('16.1 %', '5 %', '0.1 %')
    """
    return f"{share * 100:.{decimals}f} %"


def format_share(share: float) -> str:
    """A share as a whole percentage (``"31 %"``; ``"<1 %"`` for a few in many, ``">99 %"`` for all but a few)."""
    if 0.995 <= share < 1:  # "100 %" would claim every one (a bootstrap's 199 of 200 read "in 100 % of 200")
        return ">99 %"
    return "<1 %" if 0 < share < 0.005 else format_percent(share)


def p_relation(shown: str) -> str:
    """``"= 0.034"``, or a bound as it is (``"< 0.001"``, ``"≤ 0.001"``): "p = < 0.001" reads as a typo.

    Examples
    --------
    >>> p_relation("0.034"), p_relation("< 0.001"), p_relation("≤ 0.001")
    ('= 0.034', '< 0.001', '≤ 0.001')
    """
    return shown if shown.startswith(("<", "≤")) else f"= {shown}"


def format_rut_pvalue(pvalue: float) -> str:
    """A RUT p-value for display: ``"< 0.001"`` below :data:`RUT_PVALUE_RESOLUTION`, never ``"0"``."""
    return f"< {RUT_PVALUE_RESOLUTION:g}" if pvalue < RUT_PVALUE_RESOLUTION else format_pvalue(pvalue)


#: The short name of each discrepancy ω on cards, axes and headlines (its full name is its class's ``label``).
DISCREPANCY_SYMBOLS = {"jsd": "JSD", "js_distance": "JS distance", "euclidean": "Euclidean", "wasserstein": "W₁",
                       "ks": "KS", "energy": "energy", "mmd": "MMD²", "centroid": "centroid²"}


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless n is 1: ``"1 item"``, ``"2 items"``, ``"5 more arms"``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def about_duration(seconds: float) -> str:
    """A time still to wait, as a progress bar says it: "about 40 s", "about 3 min" (minutes from 120 s)."""
    return f"about {seconds:.0f} s" if seconds < 120 else f"about {seconds / 60:.0f} min"


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
    p-value columns (named ``p…``) by :func:`format_pvalue`, true effects and
    rates (columns naming ``true effect``, ``TPR``, ``FPR``, `` rate`` or a share ``p < .05``) as percentages,
    booleans as yes/no, integers with thousands separators, other numbers by :func:`format_number` (or with
    ``frame.attrs["decimals"]`` fixed decimals, where a table holds one quantity).  The values themselves stay
    numbers (the CSV and the tests read them); only what is shown changes."""
    import pandas as pd

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
        floor = (frame.attrs["resampling"] if name == "p" and "resampling" in frame.attrs
                 else frame.attrs.get("resamplings", {}).get(column))
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
