"""Tables and prompts on screen, written for people (numbers formatted, nothing cut at 1024 px)."""

from __future__ import annotations

import streamlit as st


def show_table(frame) -> None:
    """A result table on screen: every number written for people (:func:`dbpa_core.present.formatting.people_formatters`)
    in a static table whose columns are sized to their content and whose cells wrap, so no header or cell is
    ever cut at a projector's 1024 px (issue 29; the downloads keep the raw numbers).

    A table whose columns carry their source (``"p · this project"``, ``"ω · paper (printed)"``) is too wide
    for one screen at 1024 px: it is shown as one table per source, each headed by the source's name, with
    the row labels repeated; the headers keep their suffix (a static table shows the frame's own column
    names, which the downloads and tests read).
    """
    sources = list(dict.fromkeys(str(c).rsplit(" · ", 1)[1] for c in frame.columns if " · " in str(c)))
    if len(frame.columns) <= 7 or not sources:
        _static_table(frame)
        return
    keys = [c for c in frame.columns if " · " not in str(c)]
    for source in sources:
        part = frame[keys + [c for c in frame.columns if str(c).endswith(f" · {source}")]]
        st.markdown(f"**{source}**")
        _static_table(part)


#: A static table of more columns than this has its cells' side padding halved (:func:`_static_table`).
COMPACT_FROM = 8
COMPACT_CELLS = "padding-left: 3px; padding-right: 3px;"


def _static_table(frame) -> None:
    from dbpa_core.present.formatting import people_formatters

    # st.table renders its cells as Markdown: a lone "*" (one star) became a bullet and "***" a rule.
    text = {column: markdown_text for column in frame.columns if frame[column].dtype == object
            or str(frame[column].dtype) in ("str", "string")}
    styled = frame.style.format({**text, **people_formatters(frame)})
    if len(frame.columns) > COMPACT_FROM:
        # Half the side padding (6 px → 3 px): nine columns at a projector's 1024 px overflowed the page by a
        # few pixels and cut the last one ("FAIL TC / REJECT", a sequential family, trial 5).
        styled = styled.set_table_styles([{"selector": cell, "props": COMPACT_CELLS} for cell in ("th", "td")])
    st.table(styled, hide_index=True)


def markdown_text(value) -> str:
    """``value`` as literal text inside Markdown (stars, underscores, back-ticks, … escaped)."""
    import re

    return re.sub(r"([\\`*_#~|\[\]])", r"\\\1", str(value))


def show_prompt(title: str, prompt: str, system: str = "") -> None:
    """A prompt exactly as sent (as text, never rendered)."""
    st.markdown(f"**{title}**")
    if system:
        st.caption("system prompt")
        st.code(system, language=None, wrap_lines=True)
    st.code(prompt, language=None, wrap_lines=True)
