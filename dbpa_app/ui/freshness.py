"""A shown result belongs to its inputs: it is current, or visibly out of date.

A page keeps each result with the inputs it was computed from
(:func:`keep`).  When the page draws it again (:func:`result_area`), the
current inputs are compared with the kept ones: if any differ, the result is
greyed out under a warning that names each changed input with its old and new
value, and the page is told so (so it offers no download of an out-of-date
result).  Nothing is ever shown as current that was made from other inputs.

A session keeps only the readable inputs and a digest of the result's bytes;
the result itself sits in the one cache shared by every session and bounded
(:mod:`ui.cache`), so a room that runs the same thing holds it once, and a
session costs the server only what its user typed and chose.

The inputs of a result that came from a request are that request's own
settings (:func:`request_inputs`), so the out-of-date check compares exactly
what the result was computed from.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import streamlit as st

_STALE_CSS = "<style>.st-key-{key} {{opacity: 0.4; filter: grayscale(1);}}</style>"


@dataclass(frozen=True)
class Kept:
    """What a session keeps of a shown result: the readable inputs it was computed from and the result's digest."""

    inputs: tuple[tuple[str, str], ...]
    key: str


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
    from .cache import digest, the_cache

    key = digest(result)
    the_cache().put(("kept", key), result)
    st.session_state[f"_kept_{name}"] = Kept(readable(inputs), key)


#: How a request's setting is named in the out-of-date warning (the name of its box on the page).
SETTING_NAMES = {"n_resamples": "B", "discrepancy": "ω", "alpha": "α", "max_tokens": "max tokens",
                 "base_url": "endpoint", "batch_size": "batch", "k_max": "k", "original": "original arm",
                 "perturbed": "perturbed arm", "compare": "also run", "n_candidates": "K", "depth": "rounds",
                 "target_system": "system prompt", "fdr": "FDR"}


def _backend(sampler: dict) -> str:
    return sampler["backend"] if sampler["backend"] != "openai" else \
        f"{sampler.get('model', '')} at {sampler.get('base_url', 'api.openai.com')}"


def request_inputs(request, **about) -> dict[str, object]:
    """The inputs of a result computed from ``request``: its own settings (``request.settings()``), named as
    the page names them, then ``about`` (what the request holds only as data: a file's name, say; or a
    setting in the page's words, which replaces the setting of that name: a model's label for its id).

    A fixed-k audit's correction and α are left out: they only re-read the same p-values, so a change of
    either re-reads the kept result instead of marking it out of date (a sequential test's boundaries are
    set by α before sampling, so there they stay).  An audit's prompts are named as the pages name them.
    """
    tested = request.tests_only() if hasattr(request, "tests_only") else request
    settings = dict(tested.settings())
    inputs: dict[str, object] = {}
    prompt = getattr(getattr(request, "original", None), "prompt", None)
    if isinstance(prompt, str):  # an AuditRequest: what its arms ask
        inputs.update(_audit_prompts(request))
        if getattr(request, "sequential", None) is None:
            for name in ("correction", "alpha"):
                settings.pop(name, None)
        else:
            inputs["mode"] = "sequential"
    for name, value in settings.items():
        if value is None or name in about or SETTING_NAMES.get(name) in about:
            continue  # None: not set; in ``about``: the page names it in its own words
        if name == "sampler" and isinstance(value, dict):
            inputs["backend"] = _backend(value)
            inputs.update({SETTING_NAMES.get(k, k): v for k, v in value.items() if k in ("temperature", "max_tokens")})
        elif name == "perturbed_sampler" and isinstance(value, dict):
            inputs["other model"] = _backend(value)
        elif name == "embedder" and isinstance(value, dict):
            inputs["embedder"] = value["name"] if value["name"] == "minilm" else \
                f"{value.get('model', '')} at {value.get('base_url', '')}"
        elif isinstance(value, dict):
            inputs.update({SETTING_NAMES.get(k, f"{name} {k}"): v for k, v in value.items()})
        else:
            inputs[SETTING_NAMES.get(name, name.replace("_", " "))] = value
    return {**inputs, **about}


def requests_inputs(requests, **about) -> dict[str, object]:
    """The inputs of a result computed from several requests (a page that runs one per model, scenario or
    seed): each setting once, its value if every request has the same, else the list of their values, then
    ``about`` (the page's own words for what it varies: the models' names, say)."""
    each = [request_inputs(request) for request in requests]
    merged: dict[str, object] = {}
    for name in dict.fromkeys(name for inputs in each for name in inputs):
        if name in about:
            continue
        values = list(dict.fromkeys(str(inputs.get(name, "—")) for inputs in each))
        merged[name] = values[0] if len(values) == 1 else values
    return {**merged, **about}


def _audit_prompts(request) -> dict[str, object]:
    original, perturbations = request.original, request.perturbations
    prompts = {"x₀": original.prompt, "system prompt": original.system}
    if len(perturbations) == 1:
        (only,) = perturbations
        prompts.update({"perturbation": only.label, "x₁": only.prompt.prompt,
                        "perturbed system prompt": only.prompt.system})
    else:
        prompts["perturbations"] = [p.label for p in perturbations]
    return {**({"scenario": request.scenario} if request.scenario else {}), **prompts}


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
    from .cache import MISSING, the_cache

    kept = st.session_state.get(f"_kept_{name}")
    result = None if kept is None else the_cache().get(("kept", kept.key))
    if result is MISSING:
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
