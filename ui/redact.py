"""Credentials never reach the screen or an export: user:password@ and key-like query parameters are removed."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_SECRET_PARAMETERS = {"api_key", "apikey", "key", "token", "access_token", "api-key", "auth", "password", "secret"}


def redact_url(url: str) -> str:
    """``url`` without user info and without secret-looking query parameters ("" stays "")."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                       if k.lower() not in _SECRET_PARAMETERS])
    return urlunsplit((parts.scheme, host, parts.path, query, parts.fragment))
