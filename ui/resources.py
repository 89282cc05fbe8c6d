"""Resources shared by every session (``st.cache_resource``): scenarios, store, models, clients.

Shared across sessions, so never mutated after creation.  dbpa_core is imported
inside the functions: the sidebar must not wait for numba, scipy and torch on a
cold start.
"""

from __future__ import annotations

import time

import streamlit as st

from .settings import SamplerConfig


@st.cache_resource(show_spinner=False)
def scenarios():
    from dbpa_core.data.scenarios import load_scenarios

    return load_scenarios()


@st.cache_resource(show_spinner=False)
def store():
    from dbpa_core.data.store import SampleStore

    return SampleStore()


@st.cache_resource(show_spinner="Compiling UMAP (first use in this process, ≈20 s)…")
def umap_ready() -> bool:
    """Pay UMAP's numba compilation once per process, before the first projection."""
    from dbpa_core.present.projection import warm_up_umap

    warm_up_umap()
    return True


@st.cache_resource(show_spinner="Loading the sampler…")
def sampler_for(config: SamplerConfig):
    from dbpa_core.samplers import get_sampler

    if config.backend == "openai":
        return get_sampler("openai", model=config.model or "gpt-4o-mini", base_url=config.base_url or None,
                           api_key=config.api_key or None, max_concurrency=config.max_concurrency)
    return get_sampler(config.backend)


@st.cache_resource(show_spinner="Loading the embedding model (first time only)…")
def embedder_for(config: SamplerConfig):
    # Importing torch and sentence-transformers holds the GIL for seconds; a
    # short sleep first lets the server thread stream what the page has drawn
    # so far, so the widgets appear before the model is loaded.
    time.sleep(0.6)
    from dbpa_core.embedders import get_embedder

    if config.backend == "openai":
        return get_embedder("openai", model=config.model or "text-embedding-3-small",
                            base_url=config.base_url or None, api_key=config.api_key or None)
    embedder = get_embedder("minilm")
    embedder.embed(["warm up"])  # load the weights now, inside the spinner
    return embedder




@st.cache_resource(show_spinner="Loading the reference model…")
def reference_scorer():
    """The RUT's reference scorer (the packaged SmolLM2)."""
    from dbpa_core.rut.scoring import ReferenceScorer

    return ReferenceScorer()
