"""A shown result belongs to its inputs: it is current, or visibly out of date.

A page keeps each result with the inputs it was computed from
(:func:`keep`).  When the page draws it again (:func:`result_area`), the
current inputs are compared with the kept ones: if any differ, the result is
greyed out under a warning that names each changed input with its old and new
value, and the page is told so (so it offers no download of an out-of-date
result).  Nothing is ever shown as current that was made from other inputs.

A session keeps only the readable inputs and a digest of the result's bytes;
the result itself sits in one cache shared by every session and bounded
(:data:`MAX_KEPT`), so a room that runs the same thing holds it once, and a
session costs the server only what its user typed and chose.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import streamlit as st

_STALE_CSS = "<style>.st-key-{key} {{opacity: 0.4; filter: grayscale(1);}}</style>"
#: Results kept for the sessions' result areas, all sessions together (least recently used dropped first).
MAX_KEPT = 256


@dataclass(frozen=True)
class Kept:
    """What a session keeps of a shown result: the readable inputs it was computed from and the result's digest."""

    inputs: tuple[tuple[str, str], ...]
    key: str


class _Dropped(LookupError):
    """The shared cache no longer holds this result."""


@st.cache_data(max_entries=MAX_KEPT, show_spinner=False)
def _shelf(key: str, _result=None):
    """The result whose digest is ``key``, put here by :func:`keep`; shared by every session."""
    if _result is None:
        raise _Dropped(key)
    return _result


def readable(inputs: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    """Inputs as (name, text) pairs: what the warning shows and what is compared."""
    def text(value):
        if isinstance(value, float):
            return f"{value:g}"
        if isinstance(value, (list, tuple)):
            return ", ".join(map(str, value)) or "(none)"
        return str(value)

    return tuple((name, text(value)) for name, value in inputs.items())


def keep(name: str, inputs: Mapping[str, object], result) -> None:
    """Remember ``result`` as computed from ``inputs`` (replacing any earlier result of ``name``).

    The result is filed under a digest of its own bytes, so a session can
    only ever get back the very result it kept (or nothing, once dropped).
    """
    from .runs import digest

    key = digest(result)
    _shelf(key, result)
    st.session_state[f"_kept_{name}"] = Kept(readable(inputs), key)


def forget(name: str) -> None:
    st.session_state.pop(f"_kept_{name}", None)


def changed_inputs(kept: Kept, inputs: Mapping[str, object]) -> list[str]:
    """'name: old → new' for every input whose value differs from the kept one."""
    old, new = dict(kept.inputs), dict(readable(inputs))
    return [f"{name}: {old.get(name, '—')} → {new.get(name, '—')}" for name in dict.fromkeys([*old, *new])
            if old.get(name) != new.get(name)]


@dataclass(frozen=True)
class Shown:
    """What :func:`result_area` yields: the kept result (or None) and whether it is current."""

    result: object | None
    current: bool


@contextmanager
def result_area(name: str, inputs: Mapping[str, object], *, how_to_update: str = "Press Run to update it.") \
        -> Iterator[Shown]:
    """Draw a kept result inside a container that is greyed out when the inputs have changed.

    Yields
    ------
    Shown
        ``result`` is None when nothing was run yet; ``current`` is False when
        the result belongs to other inputs (then the page must not offer it
        for download and must not present its decision as current).
    """
    kept = st.session_state.get(f"_kept_{name}")
    try:
        result = None if kept is None else _shelf(kept.key)
    except _Dropped:
        forget(name)
        st.caption("The result shown here before was dropped from the server's memory (many results were kept "
                   "since); run it again to see it: its samples are stored, so it is quick.")
        kept, result = None, None
    if kept is None:
        yield Shown(None, True)
        return
    changes = changed_inputs(kept, inputs)
    if not changes:
        with st.container(key=f"current_{name}"):
            yield Shown(result, True)
        return
    st.warning("**Out of date** — the result below was computed from other inputs and no longer answers the "
               f"current question. Changed: {'; '.join(changes)}. {how_to_update}", icon=":material/history:")
    st.html(_STALE_CSS.format(key=f"stale_{name}"))
    with st.container(key=f"stale_{name}"):
        yield Shown(result, False)
