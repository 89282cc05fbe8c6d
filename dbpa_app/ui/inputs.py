"""Inputs shared by several pages: the k box (capped at what was recorded) and the cost note."""

from __future__ import annotations

import streamlit as st


def recorded_limit(arms) -> int:
    """The largest k every arm, ``(prompt, system)`` as sent, has recorded responses for (0 if one has none)."""
    from dbpa_core.audit.request import SamplerConfig

    from .resources import sampler_for

    sampler = sampler_for(SamplerConfig("recorded"))
    return min(sampler.available(prompt, system) for prompt, system in arms)


def recorded_cap_note(limit: int) -> str:
    """What the page says under a k capped at what the recorded backend holds."""
    return f"Recorded backend: {limit} responses per prompt were recorded, so k is at most {limit}."


def k_input(column, settings, arms, *, default: int, key: str, smallest: int = 2, largest: int = 500) -> int:
    """The "Samples per arm k" box of a run of ``arms`` (``(prompt, system)`` pairs as sent).

    On the recorded backend it is capped at what was recorded for every arm, and the page says so: a k
    above it failed only after seconds of work, naming the sampler's ``n`` (trial 5).  A k kept from
    another backend is clamped into the box's range before the box is drawn (Streamlit refuses a value
    above its maximum).
    """
    limit = largest
    if settings.sampler.backend == "recorded":
        limit = min(largest, recorded_limit(arms))
        if limit < smallest:
            raise ValueError(f"`Backend`: fewer than {smallest} responses were recorded for these prompts; pick "
                             "a scenario's prompts or a live backend in the sidebar.")
    st.session_state[key] = max(smallest, min(int(st.session_state.get(key, default)), limit))
    k = int(column.number_input("Samples per arm k", smallest, limit, key=key))
    if settings.sampler.backend == "recorded":
        st.caption(recorded_cap_note(limit))
    return k


def cost_note(settings, prompts, k: int, *, models=None) -> None:
    """The call, token and dollar estimate, shown before a run.

    ``models`` (label → SamplerConfig), on a page that compares models: one line per model, each priced at its
    own backend over ``prompts`` (a recorded model replays its answers, a simulated one is free), not at the
    sidebar's (a trial read "makes 360 generation calls" for a recorded and a simulated model).
    """
    from dbpa_core.audit.costs import estimate_cost

    from .models import with_model

    lines = []
    for label, sampler in (models or {"": settings.sampler}).items():
        priced = with_model(settings, sampler)  # its output cap: the sidebar's, or the recording's
        name = sampler.model if sampler.backend == "openai" else sampler.backend
        estimate = estimate_cost(list(prompts), int(k), max_tokens=priced.max_tokens, sampler_model=name,
                                 embedder_model=settings.embedder.model or "minilm")
        lines.append(f"- **{label}**: {estimate.reading()}" if label else estimate.reading())
    from .timing import prompts_time, time_line  # the time, said before the run (issue 45)

    timed = time_line(prompts_time(settings, prompts, int(k), models=models))
    st.info("\n".join(lines) + (f"\n\n{timed}" if timed else ""))
