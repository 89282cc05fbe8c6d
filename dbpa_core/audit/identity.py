"""What identifies a request: one digest scheme and one seed rule for every kind of analysis.

Every request type of :mod:`dbpa_core.audit` (:class:`~.request.AuditRequest`,
:class:`~dbpa_core.requests.two_sample.TwoSampleRequest`, :class:`~dbpa_core.requests.rut.RUTRequest`,
:class:`~dbpa_core.requests.stability.StabilityRequest`) describes itself as plain data
(``describe()``) and takes its ``key`` from :func:`request_digest`, so that the
app's shared cache, the sample store and a report name a result the same way
whichever side asked for it.  Every runner seeds its random draws through
:func:`test_seed`: the one place the seed a user typed becomes the seed a test
uses (tests/test_request_agreement.py moves it in one path and checks the
comparison of app and command line notices).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import cached_property

import numpy as np

#: Bumped when the meaning of a request changes, so that no cache keyed by an old description is reused.
REQUEST_VERSION = 1


def _plain(value):
    # Arrays (an uploaded file's embeddings) enter the digest by every byte, with their shape and type.
    if isinstance(value, np.ndarray):
        return {"array": hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest(),
                "shape": list(value.shape), "dtype": str(value.dtype)}
    return repr(value)


def describe(request) -> dict:
    """A request as plain JSON-ready data: its type, :data:`REQUEST_VERSION` and every field."""
    fields = {f.name: getattr(request, f.name) for f in dataclasses.fields(request)}
    plain = {name: (dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value)
             for name, value in fields.items()}
    return {"request": type(request).__name__, "version": REQUEST_VERSION,
            **json.loads(json.dumps(plain, default=_plain))}


def request_digest(description: dict) -> str:
    """The SHA-256 of a request's description (sorted keys, compact JSON): equal requests, and only they, share it."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"), default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def test_seed(request) -> int:
    """The seed of a request's random draws (re-splits, tie-breaking uniforms, bootstrap resamples).

    The user's seed itself: a test's p-value then depends only on its own
    inputs and settings, never on which side (app or command line) ran it.
    """
    return int(request.seed)


class Identified:
    """What every request kind shares: :meth:`describe` (its fields as plain data, :func:`describe`) and
    :attr:`key` (their :func:`request_digest`), so that the four kinds cannot drift apart in how they are named.

    A frozen dataclass that inherits it gets both; one whose description must stay as it was (the DBPA
    audit's, which existing caches and reports are keyed by) overrides :meth:`describe` only.
    """

    def describe(self) -> dict:
        """The whole request as plain JSON-ready data: what :attr:`key` digests."""
        return describe(self)

    @cached_property
    def key(self) -> str:
        """A stable digest of :meth:`describe` (:func:`request_digest`): equal requests, and only they, share it."""
        return request_digest(self.describe())
