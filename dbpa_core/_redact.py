"""Credentials never leave the program: one function, :func:`redact`, at every boundary.

The terminal, logs, exports, the store and the app all pass text through :func:`redact`
(URLs through :func:`redact_url`); :func:`redact_logs` installs it on the loggers a credential
could reach.  Kept apart from :mod:`dbpa_core._validation` (which re-exports these names) so
that neither module outgrows the package's ~400-line rule.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Mapping

# Names that hold credentials (matched as whole words of a snake_case name,
# so `max_tokens` is fine and `api_key` is a secret).
SECRET_NAME = re.compile(r"(^|_)(api_?key|key|token|secret|password|passwd|pwd|authorization|bearer|auth|"
                         r"credentials?|signature|sig|session)($|_)")

# --------------------------------------------------------------------------- secrets
# One function, :func:`redact`, removes credentials from any text that leaves the program: the terminal,
# logs, exports, the store and the app.  It knows the forms a credential takes in a message: a URL's
# user:password@ (any scheme, or none), a secret-named query parameter or setting (`api_key=…`,
# `"token": "…"`), an Authorization header (`Bearer …`, `Basic …`), the shapes of common API keys
# (`sk-…`, a key masked by the server as `sk-abc***wxyz`), and the values of the keys in use
# (:func:`register_secret`, and secret-named environment variables such as OPENAI_API_KEY).

REDACTED = "[REDACTED]"
_SECRET_SETTING = (r"(?i)(?<![A-Za-z0-9])((?:[A-Za-z0-9]+[_.\-])*(?:api|access|auth|refresh|secret|client|private|"
                   r"session|id)?(?:api[_\-]?key|key|token|secret|passwd|password|pwd|authorization|auth|"
                   r"credentials?|signature|sig|session)(?:[_.\-][A-Za-z0-9]+)*)(?![A-Za-z0-9])")
_SECRET_VALUE = r"(?!\[?REDACTED\]?(?![A-Za-z0-9])|(?:bearer|basic|token|digest)\s)([^\s'\"&,;}<>]+)"
_KNOWN_SECRETS: set[str] = set()
_KEY_VARIABLE = re.compile(r"(?i)(^|_)(api_?key|token|secret|password|access_key)($|_)")
# A secret value needs some length to be recognised as one (and not to redact every "a").
_MIN_SECRET = 8
_PATTERNS = (
    # scheme://user:password@host or scheme://token@host (any scheme)
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*:(?://|\\\\))[^\s/@?#\\]+@"), r"\1" + REDACTED + "@"),
    # user:password@host without a scheme
    (re.compile(r"(?<![\w.+\-/:@])[^\s/@:?#'\"<>()\[\]{},;=]+:[^\s/@'\"<>]+@(?=[\w\[])"), REDACTED + "@"),
    # Authorization: Bearer/Basic/Token … whatever the value; a bare "Bearer …" when the value looks like a
    # credential (a digit, a capital or a symbol after its first letter; not a sentence's full stop), so that
    # prose such as "basic medical" or "token budget" is left alone
    (re.compile(r"(?i)\b(authorization['\"]?\s*[:=]\s*['\"]?(?:bearer|basic|token|digest)\s+)[^\s'\"&,;}<>]+"),
     r"\1" + REDACTED),
    (re.compile(r"\b((?i:bearer|basic|token|digest))(\s+)(?=[A-Za-z0-9._~+/=\-][a-z]*(?:[A-Z0-9_~+/=\-]|\.\w))"
                r"[A-Za-z0-9._~+/=\-]{6,}"), r"\1\2" + REDACTED),
    # name=value, name: value, "name": "value" for a secret-looking name (query strings, headers, JSON, YAML):
    # the secret word is a whole segment of the name (`max_tokens` is not a secret, `x-api-key` is).  After a
    # colon, a short plain word (lower case or Capitalised, < 12 letters) followed by more words is prose
    # ("invalid_api_key: Incorrect API key …"), not a value: keys are longer and mix cases and digits.
    (re.compile(_SECRET_SETTING + r"(['\"]?\s*=\s*['\"]?)" + _SECRET_VALUE), r"\1\2" + REDACTED),
    (re.compile(_SECRET_SETTING + r"(['\"]?\s*:\s*['\"]?)(?![A-Z]?[a-z]{0,10}\s)" + _SECRET_VALUE), r"\1\2" + REDACTED),
    # well-known key shapes: OpenAI/Anthropic sk-…, GitHub, Hugging Face, Slack, AWS, Google, JWTs
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{16,}"), REDACTED),  # not a host such as rk-cluster
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat|hf|xox[abprs])_[A-Za-z0-9_\-]{10,}"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), REDACTED),
    # a key the server masked, keeping its ends (`abcd****wxyz`): the ends are part of the key
    (re.compile(r"[A-Za-z0-9_\-]*\*{3,}[A-Za-z0-9_\-]*"), REDACTED),
)


def register_secret(value: str | None) -> None:
    """Remember a credential in use (an API key given to a client), so that :func:`redact` removes it
    wherever it appears, even in a form no pattern knows."""
    if isinstance(value, str) and len(value.strip()) >= _MIN_SECRET:
        _KNOWN_SECRETS.add(value.strip())


def _secrets_in_use() -> list[str]:
    import os

    found = set(_KNOWN_SECRETS)
    for name, value in os.environ.items():
        # API keys in the environment (OPENAI_API_KEY, HF_TOKEN, …); not paths such as SSH_AUTH_SOCK.
        if _KEY_VARIABLE.search(name) and len(value.strip()) >= _MIN_SECRET and not re.search(r"[\s/]", value):
            found.add(value.strip())
    return sorted(found, key=len, reverse=True)  # a longer secret first: it may contain a shorter one


def redact(text):
    """``text`` without credentials (see the comment above); anything else is returned as it is.

    Every text that leaves the program through a boundary — a message on the
    terminal, a log record, an exported file, a row of the store, an error
    in the app — goes through here.  Idempotent.

    Examples
    --------
    >>> redact("http://me:sk-abc123456789@host/v1?api_key=XYZ12345")
    'http://[REDACTED]@host/v1?api_key=[REDACTED]'
    """
    if not isinstance(text, str) or not text:
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    text = redact_known(text)
    while REDACTED + REDACTED in text:
        text = text.replace(REDACTED + REDACTED, REDACTED)
    return text


#: Characters of a key in use that may show in a row (a key cut short, echoed without its ``sk-`` prefix, or
#: spaced out): any run of this many of its characters, spaces between them ignored, is redacted.
_KEY_PIECE = 10


def redact_known(text):
    """``text`` without the keys in use (:func:`register_secret`, secret-named environment variables), in any
    form a server or a model may echo them: whole, cut short, without their prefix, or with spaces between
    their characters (any :data:`_KEY_PIECE` consecutive characters of a key of 16 or more); and a key's last 6
    characters, which narrow it down.  Only the keys themselves: the text is otherwise untouched, so a stored
    completion keeps its words (the store applies this, not the pattern pass of :func:`redact`)."""
    if not isinstance(text, str) or not text:
        return text
    for secret in _secrets_in_use():
        if secret in text:
            text = text.replace(secret, REDACTED)
        if len(secret) < 16:
            continue
        text = _without_pieces(text, secret)
        tail = secret[-6:]
        if tail in text:
            text = text.replace(tail, REDACTED)
    return text


def _without_pieces(text: str, secret: str) -> str:
    """``text`` with every run of :data:`_KEY_PIECE` or more consecutive characters of ``secret`` (whitespace
    between them ignored) replaced by :data:`REDACTED`."""
    kept = [(position, char) for position, char in enumerate(text) if not char.isspace()]
    compact = "".join(char for _, char in kept)
    pieces = {secret[start:start + _KEY_PIECE] for start in range(len(secret) - _KEY_PIECE + 1)}
    spans, at = [], 0
    finder = re.compile("|".join(map(re.escape, sorted(pieces, key=len, reverse=True))))
    while match := finder.search(compact, at):
        start, end = match.span()
        offset = secret.find(match.group())
        while end < len(compact) and offset + end - start < len(secret) and compact[end] == secret[offset + end - start]:
            end += 1
        spans.append((kept[start][0], kept[end - 1][0] + 1))
        at = end
    for start, end in reversed(spans):
        text = text[:start] + REDACTED + text[end:]
    return text


# Characters that must not reach a terminal or a log raw: C0/C1 controls (ESC starts ANSI and OSC sequences),
# DEL, and the Unicode line breaks and bidirectional overrides that reorder or forge what a line appears to say.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                          "\u2066-\u2069\ufeff]")


def escape_controls(text: str) -> str:
    r"""``text`` with every control character, newline, ANSI/OSC escape and bidi override written as its
    escape (``\n``, ``\x1b``, ``\u202e``): a printed field stays one line and means what it shows."""
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return _UNPRINTABLE.sub(lambda m: named.get(m.group(), f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                                                else f"\\u{ord(m.group()):04x}"), text)


def shown(text) -> str:
    """The one output path for untrusted text (a user file, a SPEC, a server, a batch file) on its way to a
    terminal, a log or a one-line report field: credentials redacted (:func:`redact`), then controls and
    newlines escaped (:func:`escape_controls`).  Anything that is not a string is formatted first."""
    return escape_controls(redact(text if isinstance(text, str) else str(text)))


class _RedactingFilter(logging.Filter):
    """Passes every record on with its message (and traceback) through :func:`redact`."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


#: The loggers a credential could reach: ours and the HTTP clients' (their debug records name URLs).
LOGGERS = ("dbpa_core", "dbpa_explorer", "openai", "httpx", "httpx2", "httpcore", "httpcore2")


def redact_logs(names=LOGGERS) -> None:
    """Install :func:`redact` on the given loggers (once each): what they log never holds a credential."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, _RedactingFilter) for existing in logger.filters):
            logger.addFilter(_RedactingFilter())


def redact_url(url: str | None) -> str | None:
    """``url`` without credentials: user, password and secret-looking query values removed.

    Use it on every URL that is stored, logged, shown or exported: a key
    typed into a base URL (``http://user:KEY@host/v1``, ``?api_key=KEY``)
    must never reach the sample store or a report.  The fragment goes too.
    """
    if not url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # unparseable (an unclosed IPv6 bracket): drop whatever precedes an "@" of the host
        return redact(re.sub(r"^([A-Za-z][\w+.\-]*://)?[^/?#]*@", r"\1", url))
    netloc = parts.netloc.rpartition("@")[2]
    query = urllib.parse.urlencode([(k, "REDACTED" if is_secret_name(k) else v)
                                    for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)])
    # The text-level pass catches what the URL parser cannot see (no scheme, a key in the path).
    return redact(urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, "")))


def redact_mapping(value):
    """A JSON-like value (settings, a record) with :func:`redact` applied to every string in it."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {key: redact_mapping(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_mapping(item) for item in value)
    return value


def has_credentials(url: str | None) -> bool:
    """Whether ``url`` carries a user, a password, a secret-looking query parameter or a key."""
    if not url:
        return False
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "@" in url or redact(url) != url
    return ("@" in parts.netloc or any(is_secret_name(k) for k, _ in urllib.parse.parse_qsl(parts.query))
            or redact(url) != url)


def is_secret_name(name: str) -> bool:
    """Whether a setting or query-parameter name looks like it holds a credential."""
    return bool(SECRET_NAME.search(str(name).lower().replace("-", "_")))
