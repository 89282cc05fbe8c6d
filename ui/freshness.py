"""A shown result belongs to its inputs: it is current, or visibly out of date.

A page keeps each result with the inputs it was computed from
(:func:`keep`).  When the page draws it again (:func:`result_area`), the
current inputs are compared with the kept ones: if any differ, the result is
greyed out under a warning that names each changed input with its old and new
value, and the page is told so (so it offers no download of an out-of-date
result).  Nothing is ever shown as current that was made from other inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import streamlit as st

_STALE_CSS = "<style>.st-key-{key} {{opacity: 0.4; filter: grayscale(1);}}</style>"


@dataclass(frozen=True)
class Kept:
    """A result and the readable inputs it was computed from."""

    inputs: tuple[tuple[str, str], ...]
    result: object


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
    """Remember ``result`` as computed from ``inputs`` (replacing any earlier result of ``name``)."""
    st.session_state[f"_kept_{name}"] = Kept(readable(inputs), result)


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
    if kept is None:
        yield Shown(None, True)
        return
    changes = changed_inputs(kept, inputs)
    if not changes:
        with st.container(key=f"current_{name}"):
            yield Shown(kept.result, True)
        return
    st.warning("**Out of date** — the result below was computed from other inputs and no longer answers the "
               f"current question. Changed: {'; '.join(changes)}. {how_to_update}", icon=":material/history:")
    st.html(_STALE_CSS.format(key=f"stale_{name}"))
    with st.container(key=f"stale_{name}"):
        yield Shown(kept.result, False)
