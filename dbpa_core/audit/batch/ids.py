"""The ``custom_id`` of a batch line: which store slot its result fills.

A sample's ``custom_id`` is ``dbpa-s-<first 40 hex digits of its request
key>-<index>`` (the store's slot, under the 64 characters some batch services
allow); an embedding line's is ``dbpa-e-<40 hex digits>`` of the embedder key
and its texts.
"""

from __future__ import annotations

import hashlib

from ...data.store import request_key, text_hash

SAMPLE_PREFIX, EMBEDDING_PREFIX = "dbpa-s-", "dbpa-e-"
KEY_DIGITS = 40


def sample_custom_id(description: dict, index: int) -> str:
    """The ``custom_id`` of sample ``index`` of a request (see the module docstring)."""
    return f"{SAMPLE_PREFIX}{request_key(description)[:KEY_DIGITS]}-{int(index)}"


def embedding_custom_id(embedder_key: str, texts: list[str]) -> str:
    """The ``custom_id`` of one ``/v1/embeddings`` line: a digest of the embedder and its texts."""
    digest = hashlib.sha256("\n".join([embedder_key, *map(text_hash, texts)]).encode()).hexdigest()
    return f"{EMBEDDING_PREFIX}{digest[:KEY_DIGITS]}"


def sample_slot(custom_id: str) -> tuple[str, int] | None:
    """(request-key prefix, index) named by a sample's ``custom_id``; None for any other id."""
    if not custom_id.startswith(SAMPLE_PREFIX):
        return None
    key_prefix, _, index = custom_id[len(SAMPLE_PREFIX):].rpartition("-")
    return (key_prefix, int(index)) if index.isdigit() else None
