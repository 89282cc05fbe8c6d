"""Input validation shared by every public function of :mod:`dbpa_core`.

All checks live here so that each public function can validate its inputs in
one private ``_<name>_iv`` call and then read like the algorithm it implements
(the habit of :func:`scipy.stats.permutation_test`).  Every message names the
offending parameter and says what would be accepted instead.
"""

from __future__ import annotations

import numbers
import re
import urllib.parse
from collections.abc import Iterable, Sequence

import numpy as np

#: Sampling temperature accepted everywhere (the OpenAI API's range is [0, 2];
#: local models accept more, and nothing sensible happens above 5).
MAX_TEMPERATURE = 5.0

#: Largest number of resamples B a permutation test accepts: the null
#: distribution alone takes 8·B bytes, and 10⁶ resamples already resolve
#: p-values down to 10⁻⁶ (Bonferroni over a thousand perturbations at
#: α = 0.05 needs 5·10⁻⁵).
MAX_RESAMPLES = 1_000_000

# Names that hold credentials (matched as whole words of a snake_case name,
# so `max_tokens` is fine and `api_key` is a secret).
SECRET_NAME = re.compile(r"(^|_)(api_?key|key|token|secret|password|authorization|bearer|auth)($|_)")


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


def check_positive_int(value, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an int, requiring an integer in [``minimum``, ``maximum``]."""
    wanted = f"an integer >= {minimum}" + ("" if maximum is None else f" and <= {maximum:,}")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"`{name}` must be {wanted}; got {value!r}.")
    value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"`{name}` must be {wanted}; got {value:,}.")
    return value


def check_n_resamples(value, name: str = "n_resamples") -> int:
    """The number of resamples B of a permutation test: an integer in [1, :data:`MAX_RESAMPLES`]."""
    return check_positive_int(value, name, maximum=MAX_RESAMPLES)


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


def check_temperature(value, name: str = "temperature") -> float:
    """A sampling temperature in [0, :data:`MAX_TEMPERATURE`] (0 = greedy decoding)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a number in [0, {MAX_TEMPERATURE:g}]; got {value!r}.") from None
    if not (np.isfinite(value) and 0 <= value <= MAX_TEMPERATURE):
        raise ValueError(f"`{name}` must be a number in [0, {MAX_TEMPERATURE:g}]; got {value}.")
    return value


def check_choice(value, name: str, choices: Iterable[str]) -> str:
    """One of ``choices``, matched without regard to case; returns the choice as listed."""
    choices = tuple(choices)
    by_case = {choice.lower(): choice for choice in choices}
    if not isinstance(value, str) or (value not in choices and value.lower() not in by_case):
        raise ValueError(f"`{name}` must be one of {', '.join(map(repr, choices))}; got {value!r}.")
    return value if value in choices else by_case[value.lower()]


def redact_url(url: str | None) -> str | None:
    """``url`` without credentials: user, password and secret-looking query values removed.

    Use it on every URL that is stored, logged, shown or exported: a key
    typed into a base URL (``http://user:KEY@host/v1``, ``?api_key=KEY``)
    must never reach the sample store or a report.
    """
    if not url:
        return url
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = urllib.parse.urlencode([(k, "REDACTED" if is_secret_name(k) else v)
                                    for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)])
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def has_credentials(url: str | None) -> bool:
    """Whether ``url`` carries a user, a password or a secret-looking query parameter."""
    if not url:
        return False
    parts = urllib.parse.urlsplit(url)
    return "@" in parts.netloc or any(is_secret_name(k) for k, _ in urllib.parse.parse_qsl(parts.query))


def is_secret_name(name: str) -> bool:
    """Whether a setting or query-parameter name looks like it holds a credential."""
    return bool(SECRET_NAME.search(str(name).lower().replace("-", "_")))


def check_base_url(value, name: str = "base_url") -> str | None:
    """An http(s) base URL with a host, or None (the service's default)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ValueError(f"`{name}` must be a URL such as http://127.0.0.1:8000/v1; got {type(value).__name__}.")
    url = value.strip()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"`{name}` must start with http:// or https://; got {redact_url(url)!r}. "
                         f"Write e.g. http://{url.split('://')[-1]}.")
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        raise ValueError(f"`{name}` has an invalid port: {redact_url(url)!r}.") from None
    if not parts.hostname:
        raise ValueError(f"`{name}` has no host name: {redact_url(url)!r}; write e.g. http://127.0.0.1:8000/v1.")
    return url


def check_embeddings(value, name: str, *, min_rows: int = 2, check_norms: bool = True) -> np.ndarray:
    """A finite, real, 2-D float64 array with at least ``min_rows`` rows.

    With ``check_norms``, every row's Euclidean norm must be finite too:
    vectors of norm ≈ 1e160 overflow in the similarities and would come back
    as p = 1 "identical outputs" instead of an error.
    """
    try:
        raw = np.asarray(value)
        if np.iscomplexobj(raw):
            raise ValueError(f"`{name}` is complex; embeddings must be real numbers (casting would drop the "
                             "imaginary part).")
        array = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as error:
        if "complex" in str(error):
            raise
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
    if check_norms:
        with np.errstate(over="ignore"):
            norms = np.sqrt(np.einsum("ij,ij->i", array, array))
        if not np.all(np.isfinite(norms)):
            bad = int(np.argwhere(~np.isfinite(norms))[0, 0])
            raise ValueError(f"`{name}` row {bad} has a norm too large to compute (overflow); rescale the "
                             "embeddings, e.g. divide each row by its largest absolute value.")
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


def check_texts_embeddings(texts, embeddings, texts_name: str, embeddings_name: str) -> tuple[list[str], np.ndarray]:
    """One arm's output texts and their embeddings: equal lengths, finite rows that can be scaled to unit length."""
    texts = check_texts(texts, texts_name)
    array = check_embeddings(embeddings, embeddings_name)
    if len(texts) != len(array):
        raise ValueError(f"`{texts_name}` has {len(texts)} outputs but `{embeddings_name}` has {len(array)} rows; "
                         "give one embedding per output, in the same order.")
    norms = np.linalg.norm(array, axis=1)
    if not np.all(norms > 0):
        bad = int(np.argwhere(~(norms > 0))[0, 0])
        raise ValueError(f"`{embeddings_name}` row {bad} is all zeros and cannot be scaled to unit length; "
                         f"re-embed `{texts_name}[{bad}]` or drop that output from both.")
    return texts, array
