"""The ``custom_id`` of a batch line: which store slot its result fills.

A sample's ``custom_id`` is ``dbpa-s-<first 40 hex digits of its request
key>-<index>`` (the store's slot, under the 64 characters some batch services
allow); an embedding line's is ``dbpa-e-<40 hex digits>`` of the embedder key
and its texts.
"""

from __future__ import annotations

import hashlib
import re

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


#: The exact grammar of the ids an export writes: nothing else names a slot (an index in ASCII digits
#: without leading zeros, so that no two spellings name one slot: "-03", "-٣" and "-3" are not the same id).
SAMPLE_ID = re.compile(rf"{SAMPLE_PREFIX}([0-9a-f]{{{KEY_DIGITS}}})-(0|[1-9][0-9]{{0,8}})")
EMBEDDING_ID = re.compile(rf"{EMBEDDING_PREFIX}[0-9a-f]{{{KEY_DIGITS}}}")


def sample_slot(custom_id: str) -> tuple[str, int] | None:
    """(request-key prefix, index) named by a sample's ``custom_id``; None for any other id."""
    match = SAMPLE_ID.fullmatch(custom_id) if isinstance(custom_id, str) else None
    return (match.group(1), int(match.group(2))) if match else None
