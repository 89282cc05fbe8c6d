"""Live data for the sibling-audit pages (slow: the local model generates and scores)."""

from __future__ import annotations

import numpy as np
import streamlit as st
import yaml

from dbpa_core.scoring import ReferenceScorer
from dbpa_core.sibling import AUDITS

from .state import SamplerConfig, sampler_for, store


@st.cache_resource(show_spinner="Loading the reference model…")
def reference_scorer() -> ReferenceScorer:
    return ReferenceScorer()


def live_rut_arrays(settings, *, score: str, system: str, temperature: float, n_prompts: int, m: int,
                    target_source: str = "local", uploaded: dict | None = None):
    """Reference answers from the local model and target answers from ``target_source`` — the local
    model with another system prompt/temperature, the sidebar's OpenAI-compatible endpoint, or
    uploaded responses (prompt → text) — all scored by the local reference model; memoised."""
    key = ("rut_live", score, system, temperature, n_prompts, m, settings.seed, target_source,
           tuple(sorted(uploaded.items())) if uploaded else None, settings.sampler)
    memo = st.session_state.setdefault("_rut_live", {})
    if key in memo:
        return memo[key]
    if uploaded is not None:
        prompts = list(uploaded)[:n_prompts]
    else:
        prompts = yaml.safe_load((AUDITS / "rut_prompts.yaml").read_text())["prompts"][:n_prompts]
    if len(prompts) < 2:
        raise ValueError("The audit needs at least 2 prompts with a target response.")
    n_prompts = len(prompts)
    local, scorer = sampler_for(SamplerConfig("local")), reference_scorer()
    target_sampler = sampler_for(settings.sampler) if target_source == "openai" else local
    bar = st.progress(0.0, text="Generating and scoring answers")
    reference = np.zeros((n_prompts, m))
    target = np.zeros(n_prompts)
    for i, prompt in enumerate(prompts):
        texts = local.sample(prompt, m, temperature=0.7, max_tokens=40, seed=settings.seed, store=store())
        reference[i] = [scorer.score(prompt, t)[score] for t in texts]
        if uploaded is not None:
            answer = uploaded[prompt]
        else:
            (answer,) = target_sampler.sample(prompt, 1, system=system or None, temperature=temperature,
                                              max_tokens=40, seed=settings.seed + 1, store=store())
        target[i] = scorer.score(prompt, answer)[score]
        bar.progress((i + 1) / n_prompts, text=f"Generating and scoring answers ({i + 1}/{n_prompts} prompts)")
    bar.empty()
    keep = np.isfinite(target) & np.all(np.isfinite(reference), axis=1)
    memo[key] = (target[keep], reference[keep])
    return memo[key]
