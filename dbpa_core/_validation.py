"""Input validation shared by every public function of :mod:`dbpa_core`.

All checks live here so that each public function can validate its inputs in
one private ``_<name>_iv`` call and then read like the algorithm it implements
(the habit of :func:`scipy.stats.permutation_test`).  Every message names the
offending parameter and says what would be accepted instead.
"""

from __future__ import annotations

import numbers
import urllib.parse
from collections.abc import Iterable, Sequence

import numpy as np

# The secrets layer lives in _redact; its names are part of this module's interface too.
from ._redact import (LOGGERS, REDACTED, SECRET_NAME, escape_controls, has_credentials, is_secret_name,  # noqa: F401
                      redact, redact_known, redact_logs, redact_mapping, redact_url, register_secret, shown)


#: Sampling temperature accepted everywhere (the OpenAI API's range is [0, 2];
#: local models accept more, and nothing sensible happens above 5).
MAX_TEMPERATURE = 5.0

# Every size a user can set has an upper bound tied to memory or time, checked before any work starts
# (library, command line, SPEC and app alike); each message says the bound and why (``*_WHY``).

#: Largest number of resamples B a permutation test accepts: the null
#: distribution alone takes 8·B bytes, and 10⁶ resamples already resolve
#: p-values down to 10⁻⁶ (Bonferroni over a thousand perturbations at
#: α = 0.05 needs 5·10⁻⁵).
MAX_RESAMPLES = 1_000_000
RESAMPLES_WHY = "10⁶ re-splits resolve p-values down to 10⁻⁶, finer than any correction needs"

#: Most outputs per arm a test takes: the pooled similarity matrix of 2 × 5 000 outputs is 800 MB (float64).
MAX_SAMPLES = 5_000
SAMPLES_WHY = "the similarity matrix of 2 × 5,000 pooled outputs already takes 800 MB of memory"

#: Most cells B·(k₀ + k₁)² the re-splits of one test may visit: ≈ 10 ns per cell on a 2-core laptop
#: (bench/bench_permutation.py), so the largest test takes a few minutes, never hours.
MAX_PERMUTATION_WORK = 20_000_000_000
PERMUTATION_WORK_WHY = ("B × (k₀ + k₁)² must stay under 2·10¹⁰ (≈ 10 ns each: a few minutes); lower B or k "
                        "(B = 10,000 already resolves p down to 10⁻⁴)")

#: Most perturbations in one audit: Bonferroni over 1 000 tests at α = 0.05 already needs p ≤ 5·10⁻⁵.
MAX_PERTURBATIONS = 1_000
PERTURBATIONS_WHY = "Bonferroni over 1,000 tests already asks for p ≤ α/1,000; split the family into audits"

#: Most outputs one audit draws, (m + 1)·k: texts and vectors of 500 000 outputs take ≈ 1.5 GB of memory.
MAX_AUDIT_SAMPLES = 500_000
AUDIT_SAMPLES_WHY = "(m + 1) × k outputs are held in memory with their vectors (≈ 3 KB each)"

#: Longest generation asked for: 32 768 tokens is the context of most served models.
MAX_TOKENS = 32_768
TOKENS_WHY = "32,768 tokens is the whole context of most models; a longer answer cannot be generated"

#: Longest completion text accepted from a server or a batch file (UTF-8 bytes): 32 768 tokens are
#: ≈ 130 kB of text, so a longer one is a broken reply, not an answer.
MAX_COMPLETION_BYTES = 2**20

#: Calls in flight at once to one endpoint (threads on this machine; servers rate-limit far below).
MAX_CONCURRENCY = 256
CONCURRENCY_WHY = "each call in flight is a thread here, and servers rate-limit far below that"

#: Seconds one attempt of an HTTP call may take (an hour: nothing answers slower and is still alive).
MAX_TIMEOUT = 3_600.0
#: Extra attempts of a failed call (20 attempts with backoff already span several minutes).
MAX_RETRIES = 20
RETRIES_WHY = "20 attempts with backoff already wait several minutes on a server that is down"

#: Texts per embeddings call: 512 × a 3 072-dimensional vector is a 33 MB reply (OpenAI takes at most 2 048).
MAX_EMBED_BATCH = 512
EMBED_BATCH_WHY = "a reply of 512 vectors of 3,072 numbers is already ≈ 33 MB of JSON"

#: Largest embedding dimension accepted from a file or a server (the largest models' are 4 096–8 192).
MAX_DIMENSION = 16_384
DIMENSION_WHY = "no embedding model has more than 16,384 dimensions; a larger vector is a broken file"

#: Context of the local model (SmolLM2 was trained on 8 192 tokens; beyond it its output degrades).
MAX_N_CTX = 8_192
N_CTX_WHY = "SmolLM2 was trained with a context of 8,192 tokens"



class InvalidValue(ValueError):
    """A parameter outside what is accepted: ``name``, the requirement, and the value received.

    ``str()`` is the full message (the library's); :attr:`without_value` leaves the
    value out, for places that must not echo what a user typed (a SPEC, which may
    hold a key written in the wrong place).
    """

    def __init__(self, name: str, requirement: str, got: str | None = None, fix: str = ""):
        self.name, self.requirement, self.got = name, requirement, got
        super().__init__(f"`{name}` {requirement}" + (f"; got {got}." if got is not None else ".")
                         + (f" {fix}" if fix else ""))

    @property
    def without_value(self) -> str:
        return f"`{self.name}` {self.requirement}."


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


def check_positive_int(value, name: str, *, minimum: int = 1, maximum: int | None = None,
                       why: str | None = None) -> int:
    """Return ``value`` as an int, requiring an integer in [``minimum``, ``maximum``].

    ``why`` says why the maximum is what it is; the message gives it.
    """
    wanted = f"must be an integer >= {minimum}" + ("" if maximum is None else f" and <= {maximum:,}")
    if why and maximum is not None:
        wanted += f" ({why})"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InvalidValue(name, wanted, _shown(value))
    value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        raise InvalidValue(name, wanted, _shown(value))
    return value


def _shown(value) -> str:
    """A received value for a message: short, never a secret, and cheap whatever it is (a container is
    named by its type: the repr of a YAML "billion laughs" list would never end)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}" if abs(int(value)).bit_length() <= 256 else "an integer too large to write out"
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, str):
        return redact(repr(value[:60]) + ("..." if len(value) > 60 else ""))
    return f"a {type(value).__name__}"


def check_n_resamples(value, name: str = "n_resamples") -> int:
    """The number of resamples B of a permutation test: an integer in [1, :data:`MAX_RESAMPLES`]."""
    return check_positive_int(value, name, maximum=MAX_RESAMPLES, why=RESAMPLES_WHY)


def check_test_size(n_original: int, n_perturbed: int, n_resamples: int, *, names=("x", "y"),
                    resamples_name: str = "n_resamples", batch_size: int | None = None) -> None:
    """Refuse, before any work, a test too small to run or whose memory or time has no reasonable bound.

    Each arm holds at least 2 outputs and at most :data:`MAX_SAMPLES` outputs (memory of the similarity
    matrix), and B·(k₀ + k₁)² — the cells the re-splits visit, times ``looks`` for a
    sequential test — at most :data:`MAX_PERMUTATION_WORK` (time).  An exact test
    enumerates C(k₀ + k₁, k₀) ≤ B splits, and only those count.
    """
    import math

    for name, size in zip(names, (n_original, n_perturbed)):
        if size < 2:  # P0 compares outputs within the original arm; a one-output arm has no spread to compare
            raise InvalidValue(name, "needs at least 2 outputs for a permutation test", f"{size:,}",
                               "Add outputs to this arm (20 or more give the test power).")
        if size > MAX_SAMPLES:
            raise InvalidValue(name, f"holds at most {MAX_SAMPLES:,} outputs ({SAMPLES_WHY}); test a random subset",
                               f"{size:,}")
    pooled = n_original + n_perturbed
    splits = min(n_resamples, math.comb(pooled, n_original)) if pooled <= 1_000 else n_resamples
    if batch_size:  # a sequential test recomputes ω on everything drawn so far at every look
        looks = range(batch_size, n_original + batch_size, batch_size)
        cells = sum((2 * min(n, n_original)) ** 2 for n in looks)
        work = n_resamples * cells
    else:
        work = splits * pooled**2
    if work > MAX_PERMUTATION_WORK:
        raise InvalidValue(resamples_name, f"is too large for {n_original:,} + {n_perturbed:,} outputs: "
                                           f"{PERMUTATION_WORK_WHY}", f"B = {n_resamples:,}")


def check_audit_size(n_perturbations: int, k: int, n_resamples: int, *, batch_size: int | None = None) -> None:
    """An audit of ``n_perturbations`` tests of ``k`` outputs per arm: at most :data:`MAX_PERTURBATIONS`
    tests, :data:`MAX_AUDIT_SAMPLES` outputs in all, and each test within :func:`check_test_size`."""
    if n_perturbations > MAX_PERTURBATIONS:
        raise InvalidValue("perturbations", f"holds at most {MAX_PERTURBATIONS:,} ({PERTURBATIONS_WHY})",
                           f"{n_perturbations:,}")
    if (n_perturbations + 1) * k > MAX_AUDIT_SAMPLES:
        raise InvalidValue("k", f"× (perturbations + 1) outputs must be at most {MAX_AUDIT_SAMPLES:,} per audit "
                                f"({AUDIT_SAMPLES_WHY}); split it into several audits",
                           f"{(n_perturbations + 1) * k:,}")
    check_test_size(k, k, n_resamples, names=("k", "k"), batch_size=batch_size)


def check_probability(value, name: str, *, open_low: bool = True, open_high: bool = True) -> float:
    """Return ``value`` as a float strictly (or not) inside (0, 1)."""
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InvalidValue(name, "must be a number between 0 and 1", _shown(value)) from None
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (np.isfinite(value) and low_ok and high_ok):
        low = "(0" if open_low else "[0"
        high = "1)" if open_high else "1]"
        raise InvalidValue(name, f"must lie in {low}, {high}", f"{value}")
    return value


def check_positive_float(value, name: str, *, maximum: float | None = None, why: str | None = None) -> float:
    """A positive finite number, at most ``maximum`` (``why`` says why)."""
    wanted = "must be a positive finite number" + ("" if maximum is None else f" <= {maximum:g}")
    if why and maximum is not None:
        wanted += f" ({why})"
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InvalidValue(name, wanted, _shown(value)) from None
    if not (np.isfinite(value) and value > 0) or (maximum is not None and value > maximum):
        raise InvalidValue(name, wanted, f"{value}")
    return value


def check_temperature(value, name: str = "temperature") -> float:
    """A sampling temperature in [0, :data:`MAX_TEMPERATURE`] (0 = greedy decoding)."""
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InvalidValue(name, f"must be a number in [0, {MAX_TEMPERATURE:g}]", _shown(value)) from None
    if not (np.isfinite(value) and 0 <= value <= MAX_TEMPERATURE):
        raise InvalidValue(name, f"must be a number in [0, {MAX_TEMPERATURE:g}]", f"{value}")
    return value


def check_choice(value, name: str, choices: Iterable[str]) -> str:
    """One of ``choices``, matched without regard to case; returns the choice as listed."""
    choices = tuple(choices)
    by_case = {choice.lower(): choice for choice in choices}
    if not isinstance(value, str) or (value not in choices and value.lower() not in by_case):
        raise InvalidValue(name, f"must be one of {', '.join(map(repr, choices))}", _shown(value))
    return value if value in choices else by_case[value.lower()]


def check_base_url(value, name: str = "base_url") -> str | None:
    """An http(s) base URL with a host, or None (the service's default)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InvalidValue(name, "must be a URL such as http://127.0.0.1:8000/v1", f"a {type(value).__name__}")
    url = value.strip()
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # an unclosed "[" of an IPv6 host: urlsplit's own message names no field
        raise InvalidValue(name, "is not a URL (an IPv6 host is written in brackets: http://[::1]:8000/v1)",
                           repr(redact_url(url))) from None
    if parts.scheme not in ("http", "https"):
        raise InvalidValue(name, "must start with http:// or https://", repr(redact_url(url)),
                           fix=redact(f"Write e.g. http://{url.split('://')[-1]}."))
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        raise InvalidValue(name, "has an invalid port (a number up to 65535 after the host)",
                           repr(redact_url(url))) from None
    if not parts.hostname:
        raise InvalidValue(name, "has no host name; write e.g. http://127.0.0.1:8000/v1", repr(redact_url(url)))
    return url


def check_embeddings(value, name: str, *, min_rows: int = 2, check_norms: bool = True) -> np.ndarray:
    """A finite, real, 2-D float64 array with at least ``min_rows`` rows.

    With ``check_norms``, every row's Euclidean norm must be finite too:
    vectors of norm ≈ 1e160 overflow in the similarities and would come back
    as p = 1 "identical outputs" instead of an error.
    """
    try:
        raw = np.asarray(value)
        if raw.dtype == np.bool_:
            raise ValueError(f"`{name}` holds booleans; embeddings must be real numbers (True would read as 1.0).")
        if np.iscomplexobj(raw):
            raise ValueError(f"`{name}` is complex; embeddings must be real numbers (casting would drop the "
                             "imaginary part).")
        array = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as error:
        if "complex" in str(error) or "booleans" in str(error):
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


def check_completion_text(text: str) -> str | None:
    """Why a completion text cannot be stored (None when it can): over :data:`MAX_COMPLETION_BYTES`,
    or not encodable as UTF-8 (a lone surrogate such as JSON's ``"\\ud800"``)."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as error:
        return (f"the text holds a character that is not valid Unicode (U+{ord(text[error.start]):04X}, a lone "
                "surrogate) and cannot be stored as UTF-8")
    if size > MAX_COMPLETION_BYTES:
        return (f"the text is {size / 2**20:,.1f} MB; at most {MAX_COMPLETION_BYTES / 2**20:g} MB is accepted "
                f"({TOKENS_WHY}: ≈ 130 kB of text)")
    return None


def check_prompt_text(text: str, name: str = "prompt") -> str:
    """``text`` as a prompt to send: within the bounds of a completion (size, valid UTF-8) and holding no
    credential — a prompt is stored with its samples and shown as sent, so a pasted key would reach the store
    and every report."""
    why = check_completion_text(text)
    if why:
        raise ValueError(f"`{name}`: {why}; shorten it.")
    if redact(text) != text:
        raise ValueError(f"`{name}` looks like it holds a credential (an API key, a password or an Authorization "
                         "header); remove it: a prompt is stored and shown as sent.")
    return text


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
