"""The app's one shared cache: results and derived views, bounded, one run per key for the whole room.

Every session of the server process reads and fills the same
:class:`SharedCache`: a request's result, the "what changed" of its arms, a
projection, a figure, a result a page keeps for its out-of-date check.  It
holds at most :data:`MAX_ENTRIES` values (the least recently used goes
first), all under one key scheme (:func:`cache_key`: a kind and a digest of
every byte of the inputs, a request standing for its own ``key``).  A value
missing from it is computed by :meth:`SharedCache.get_or_compute` under a
lock of its key, so when a room presses the same button at once the first
session computes and the others wait for its value: one run per key, never
one per person.  A value is shared, never copied: nothing may change it.

The cache itself is a Streamlit resource (:func:`the_cache`), so that
``st.cache_resource.clear()`` (a test's fresh process) empties it too.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import streamlit as st

#: Values kept, all kinds together: results are a few MB at most (k × 384 floats per arm), views far less.
MAX_ENTRIES = 256
#: What :meth:`SharedCache.get` returns for a key it does not hold (a value may itself be None).
MISSING = object()


class SharedCache:
    """A bounded, thread-safe map from key to value, with one lock per key being computed.

    Parameters
    ----------
    max_entries : int
        How many values are kept; putting one more drops the least recently used.
    """

    def __init__(self, max_entries: int = MAX_ENTRIES):
        if int(max_entries) < 1:
            raise ValueError(f"`max_entries` must be at least 1, got {max_entries}.")
        self.max_entries = int(max_entries)
        self._values: OrderedDict[Hashable, object] = OrderedDict()
        self._lock = threading.Lock()  # guards _values and _computing
        self._computing: dict[Hashable, list] = {}  # key -> [its lock, sessions holding or awaiting it]

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values

    def get(self, key: Hashable, default=MISSING):
        """The value kept under ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            if key not in self._values:
                return default
            self._values.move_to_end(key)
            return self._values[key]

    def put(self, key: Hashable, value) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used values beyond ``max_entries``."""
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.max_entries:
                self._values.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    @contextlib.contextmanager
    def one_at_a_time(self, key: Hashable, *, waiting: Callable[[], contextlib.AbstractContextManager] | None = None):
        """Hold ``key``'s lock: one session at a time computes ``key``; ``waiting()`` is entered while another
        holds it (a spinner saying so).  The lock is forgotten when nobody holds or awaits it."""
        with self._lock:
            entry = self._computing.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        lock = entry[0]
        try:
            if not lock.acquire(blocking=False):
                with waiting() if waiting is not None else contextlib.nullcontext():
                    lock.acquire()
            try:
                yield
            finally:
                lock.release()
        finally:
            with self._lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._computing[key]

    def get_or_compute(self, key: Hashable, compute: Callable[[], object], *,
                       waiting: Callable[[], contextlib.AbstractContextManager] | None = None):
        """The value of ``key``: kept, or ``compute()`` now (once, whoever else asks meanwhile) and kept.

        A compute that raises keeps nothing; the next asker computes again.
        """
        value = self.get(key)
        if value is not MISSING:
            return value
        with self.one_at_a_time(key, waiting=waiting):
            value = self.get(key)  # another session may have computed it while this one waited
            if value is MISSING:
                value = compute()
                self.put(key, value)
        return value


@st.cache_resource(show_spinner=False)
def the_cache() -> SharedCache:
    """The server process's one :class:`SharedCache`."""
    return SharedCache(MAX_ENTRIES)


def waiting_for_another_session():
    """What a session shows while another session computes the same key."""
    return st.spinner("Another session is running exactly this; its result will be shown here too…")


# ----------------------------------------------------------------- the key scheme
def digest(*parts) -> str:
    """A digest of ``parts`` by value: every byte of their pickle (arrays in full, results field by field).

    Equal inputs, and only they, share it (``st.cache_data``'s own hash
    samples arrays of ≥ 500 000 numbers, so two uploads that differ in a few
    rows could share one; this does not).  A request stands for its own
    ``key`` (the digest of its settings, :mod:`dbpa_core.audit.identity`).
    """
    return hashlib.sha256(pickle.dumps(tuple(map(_plain, parts)), protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()


def _plain(part):
    # A request stands for itself by its own digest (its pickle would change once ``.key`` is cached on it).
    key = getattr(part, "key", None)
    if isinstance(key, str) and hasattr(part, "settings"):
        return (type(part).__name__, key)
    return part


def cache_key(kind: str, *parts) -> tuple[str, str]:
    """The one key scheme of :func:`the_cache`: ``(kind, digest of parts)``."""
    return kind, digest(*parts)


def shared(kind: str, parts, compute: Callable[[], object] | None = None):
    """The value of ``(kind, parts)`` computed once and shared by every session (bounded), or None.

    ``compute()`` runs (outside any Streamlit cache, so it may draw a
    progress bar) only when nothing is kept for these inputs and a compute is
    given: a page never shows a value computed for other inputs.  ``parts``
    (a request, or a tuple of inputs) must name every input of ``compute``.
    """
    key = cache_key(kind, *(parts if isinstance(parts, tuple) else (parts,)))
    cache = the_cache()
    if compute is None:
        return cache.get(key, None)
    return cache.get_or_compute(key, compute, waiting=waiting_for_another_session)


def shared_call(function, *args, **kwargs):
    """``function(*args, **kwargs)`` computed once for equal arguments and shared by every session (bounded).

    For pure functions of their arguments (a projection, the test of an arm
    against itself).  Every session gets the same object: never change it.
    """
    parts = (function.__module__, function.__qualname__, len(args), *args,
             *((name, _plain(value)) for name, value in sorted(kwargs.items())))
    return shared("call", parts, lambda: function(*args, **kwargs))


def shared_function(*, spinner: str | None = None, timed=None):
    """Decorator: the function's value for equal arguments computed once and shared by every session, in the
    one shared cache (:func:`shared_call`), with ``spinner`` shown while it is computed (never for a kept value).
    ``timed``: called with the same arguments, the :class:`~dbpa_core.audit.timing.TimeEstimate` the spinner
    says before the computation starts (issue 45), which then teaches the machine's throughput.

    For the pages' pure studies (a paper reproduction, the recorded stability study): the one cache and key
    scheme the results use, instead of a second, ``st.cache_data``, with keys of its own.
    """

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            parts = (function.__module__, function.__qualname__, len(args), *args,
                     *((name, _plain(value)) for name, value in sorted(kwargs.items())))
            key = cache_key("call", *parts)
            cache = the_cache()
            kept = cache.get(key)
            if kept is not MISSING:
                return kept
            timing = contextlib.nullcontext()
            text = spinner
            if timed is not None:
                from .timing import announced, with_time

                estimate = timed(*args, **kwargs)
                text, timing = with_time(spinner or "Computing", estimate), announced(estimate)
            with st.spinner(text) if text else contextlib.nullcontext(), timing:
                return cache.get_or_compute(key, lambda: function(*args, **kwargs),
                                            waiting=waiting_for_another_session)

        return wrapper

    return decorate


def shared_figure(build, *args, **kwargs):
    """The figure ``build(*args, **kwargs)`` (a :mod:`dbpa_core.present.figures` function), built once for equal
    arguments and shared by every session (bounded).

    Building a Plotly figure validates every property (≈ 15–35 ms each, most
    of a page's rendering); ``st.plotly_chart`` only copies it.  Every
    session gets the same object: never change a figure after this returns.
    """
    return shared_call(build, *args, **kwargs)
