"""The shared sidebar: sampler, embedder, temperature, tokens and seed for every page."""

from __future__ import annotations

import streamlit as st

from dbpa_core.embedders import EMBEDDERS
from dbpa_core.samplers import DEFAULT_TEMPERATURE

from .settings import BACKEND_LABELS, EMBEDDER_LABELS, SamplerConfig, Settings


def sidebar() -> Settings:
    """Render the shared sidebar and return the chosen settings."""
    bar = st.sidebar
    bar.header("Sampler")
    backend = bar.selectbox("Backend", list(BACKEND_LABELS), format_func=BACKEND_LABELS.get, key="backend",
                            help="Where outputs come from. Simulated is instant and knows the true effect.")
    sampler = SamplerConfig(backend)
    if backend == "openai":
        sampler = SamplerConfig(
            "openai",
            model=bar.text_input("Model", "gpt-4o-mini", key="openai_model"),
            base_url=bar.text_input("Base URL", "", key="openai_base_url", placeholder="https://api.openai.com/v1",
                                    help="Any OpenAI-compatible server: vLLM, Ollama, llama.cpp …"),
            api_key=bar.text_input("API key", "", type="password", key="openai_api_key",
                                   help="Used for this session only; never written to disk. "
                                        "Empty: OPENAI_API_KEY from the environment."),
            max_concurrency=int(bar.number_input("Parallel calls", 1, 32, 4, key="openai_concurrency")),
        )
    if backend == "recorded":
        # Replay: the answers were generated once, with the settings stored beside each of them.
        bar.caption("Recorded answers replay as they were generated: SmolLM2-135M at T = 0.7, ≤ 80 tokens "
                    "(scripts/record_samples.py); temperature and length cannot change them.")
        temperature, max_tokens = 0.7, 80
    else:
        temperature = bar.slider("Temperature", 0.0, 2.0, DEFAULT_TEMPERATURE[backend], 0.1,
                                 key=f"temperature_{backend}")
        max_tokens = int(bar.number_input("Max tokens per output", 8, 2048, 80 if backend == "local" else 128,
                                          key=f"max_tokens_{backend}"))
    bar.header("Embedder")
    embedder_name = bar.selectbox("Embedding model", EMBEDDERS, key="embedder", format_func=EMBEDDER_LABELS.get)
    embedder = SamplerConfig("minilm")
    if embedder_name == "openai":
        embedder = SamplerConfig(
            "openai", model=bar.text_input("Embedding model name", "text-embedding-3-small", key="embed_model"),
            base_url=bar.text_input("Embeddings base URL", sampler.base_url, key="embed_base_url"),
            api_key=bar.text_input("Embeddings API key", "", type="password", key="embed_api_key"))
    seed = int(bar.number_input("Seed", 0, 2**31 - 1, 0, key="seed",
                                help="Same seed, same samples: results are reproducible."))
    return Settings(sampler, embedder, float(temperature), max_tokens, seed)


def interrupted_notice() -> None:
    """Say so when the previous run stopped part-way (cancelled or crashed), with what was kept."""
    drawing = st.session_state.pop("_drawing", None)
    if drawing:
        st.warning(f"The previous run ({drawing['label']}) stopped before it finished. {drawing['kept']} outputs "
                   "sampled in it are in the store, with every sample of earlier runs, and are reused when you "
                   "run again.")


def current_settings() -> Settings:
    """The sidebar's settings for this run (every page starts with this).

    On a fresh server, a page opened by its URL before any session has run
    ``app.py`` is executed by Streamlit's legacy ``pages/``-folder mode, without
    ``app.py``: no routing table, no sidebar, no settings.  Streamlit leaves that
    mode only when ``st.navigation`` is first called in the process
    (``PagesManager.uses_pages_directory``, streamlit 1.67); this switches the
    process to ``st.navigation`` now and reruns, so ``app.py`` draws the sidebar
    and routes to the requested page.
    """
    if "settings" not in st.session_state:
        from streamlit.runtime.pages_manager import PagesManager

        PagesManager.uses_pages_directory = False
        st.rerun()
    return st.session_state["settings"]
