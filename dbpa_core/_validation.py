"""Input validation shared by every public function of :mod:`dbpa_core`.

All checks live here so that each public function can validate its inputs in
one private ``_<name>_iv`` call and then read like the algorithm it implements
(the habit of :func:`scipy.stats.permutation_test`).  Every message names the
offending parameter and says what would be accepted instead.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence

import numpy as np


def check_rng(rng) -> np.random.Generator:
    """Normalise ``rng`` (Generator, int seed or None) to a Generator."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
        if rng is not None and int(rng) < 0:
            raise ValueError("`rng` must be a non-negative int seed, a numpy.random.Generator or None.")
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    raise ValueError(
        "`rng` must be a numpy.random.Generator, a non-negative int seed or None; "
        f"got {type(rng).__name__}."
    )


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int, requiring an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"`{name}` must be an integer >= {minimum}; got {value!r}.")
    value = int(value)
    if value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}; got {value}.")
    return value


def check_probability(value, name: str, *, open_low: bool = True, open_high: bool = True) -> float:
    """Return ``value`` as a float strictly (or not) inside (0, 1)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a number between 0 and 1; got {value!r}.") from None
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (np.isfinite(value) and low_ok and high_ok):
        low = "(0" if open_low else "[0"
        high = "1)" if open_high else "1]"
        raise ValueError(f"`{name}` must lie in {low}, {high}; got {value}.")
    return value


def check_positive_float(value, name: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a positive number; got {value!r}.") from None
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be a positive finite number; got {value}.")
    return value


def check_choice(value, name: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if not isinstance(value, str) or value.lower() not in choices:
        raise ValueError(f"`{name}` must be one of {', '.join(map(repr, choices))}; got {value!r}.")
    return value.lower()


def check_embeddings(value, name: str, *, min_rows: int = 2) -> np.ndarray:
    """A finite, 2-D float64 array with at least ``min_rows`` rows."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a 2-D numeric array of shape (k, dim).") from None
    if array.ndim != 2:
        raise ValueError(
            f"`{name}` must be 2-D with shape (k, dim): one embedding per row; got {array.ndim}-D "
            f"shape {array.shape}. Use `.reshape(-1, 1)` for one-dimensional outputs."
        )
    if array.shape[0] < min_rows:
        raise ValueError(f"`{name}` needs at least {min_rows} samples (rows); got {array.shape[0]}.")
    if array.shape[1] < 1:
        raise ValueError(f"`{name}` must have at least one column (embedding dimension).")
    if not np.all(np.isfinite(array)):
        bad = int(np.argwhere(~np.isfinite(array))[0, 0])
        raise ValueError(f"`{name}` contains NaN or infinite values (first in row {bad}); remove or re-embed that output.")
    return array


def check_texts(value, name: str, *, min_rows: int = 2) -> list[str]:
    """A sequence of at least ``min_rows`` strings (empty strings are kept)."""
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise ValueError(f"`{name}` must be a list of output texts for a text similarity; got {type(value).__name__}.")
    texts = list(value)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"`{name}[{index}]` must be a str (an output text); got {type(text).__name__}.")
    if len(texts) < min_rows:
        raise ValueError(f"`{name}` needs at least {min_rows} samples; got {len(texts)}.")
    return texts


def check_pvalues(value, name: str = "pvalues") -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a 1-D sequence of numbers in [0, 1].") from None
    if array.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D; got shape {array.shape}.")
    if array.size == 0:
        raise ValueError(f"`{name}` must contain at least one p-value.")
    if np.any(~np.isfinite(array)) or np.any((array < 0) | (array > 1)):
        bad = int(np.argwhere(~np.isfinite(array) | (array < 0) | (array > 1))[0, 0])
        raise ValueError(f"`{name}` must lie in [0, 1]; entry {bad} is {array[bad]!r}.")
    return array
