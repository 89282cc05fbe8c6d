"""The shared sidebar and the resources that every session shares.

``st.cache_resource`` holds the models and clients (shared by all sessions:
never mutated after creation); per-session results live in
``st.session_state`` so that moving between pages does not recompute.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st

# dbpa_core is imported inside the functions: the sidebar must not wait for
# numba, scipy and torch on a cold start.

BACKEND_LABELS = {
    "simulated": "Simulated (instant, known truth)",
    "recorded": "Recorded SmolLM2 samples (replay)",
    "local": "Local SmolLM2-135M (CPU)",
    "openai": "OpenAI-compatible API",
}


@dataclass(frozen=True)
class SamplerConfig:
    """A hashable description of a sampler (the key of its cached instance)."""

    backend: str = "simulated"
    model: str = ""
    base_url: str = ""
    api_key: str = ""  # kept in memory for the session only; never stored
    max_concurrency: int = 4

    @property
    def label(self) -> str:
        return self.model or self.backend


@dataclass(frozen=True)
class Settings:
    sampler: SamplerConfig
    embedder: SamplerConfig
    temperature: float
    max_tokens: int
    seed: int


@st.cache_resource(show_spinner=False)
def scenarios():
    from dbpa_core.scenarios import load_scenarios

    return load_scenarios()


@st.cache_resource(show_spinner=False)
def store():
    from dbpa_core.store import SampleStore

    return SampleStore()


@st.cache_resource(show_spinner="Compiling UMAP (first use in this process, ≈20 s)…")
def umap_ready() -> bool:
    """Pay UMAP's numba compilation once per process, before the first projection."""
    from dbpa_core.projection import warm_up_umap

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
    defaults = {"simulated": 1.0, "recorded": 0.7, "local": 0.7, "openai": 0.7}
    temperature = bar.slider("Temperature", 0.0, 2.0, defaults[backend], 0.1, key=f"temperature_{backend}",
                             disabled=backend == "recorded")
    max_tokens = int(bar.number_input("Max tokens per output", 8, 2048, 80 if backend == "local" else 128,
                                      key=f"max_tokens_{backend}", disabled=backend == "recorded"))
    bar.header("Embedder")
    embedder_name = bar.selectbox("Embedding model", ["minilm", "openai"], key="embedder",
                                  format_func={"minilm": "all-MiniLM-L6-v2 (packaged, offline)",
                                               "openai": "OpenAI-compatible embeddings"}.get)
    embedder = SamplerConfig("minilm")
    if embedder_name == "openai":
        embedder = SamplerConfig(
            "openai", model=bar.text_input("Embedding model name", "text-embedding-3-small", key="embed_model"),
            base_url=bar.text_input("Embeddings base URL", sampler.base_url, key="embed_base_url"),
            api_key=bar.text_input("Embeddings API key", "", type="password", key="embed_api_key"))
    seed = int(bar.number_input("Seed", 0, 2**31 - 1, 0, key="seed",
                                help="Same seed, same samples: results are reproducible."))
    return Settings(sampler, embedder, float(temperature), max_tokens, seed)


def draw(settings: Settings, arms, k: int, *, sampler_config: SamplerConfig | None = None, seed_offset: int = 0,
         progress_label: str = "Sampling") -> list:
    """Draw and embed k outputs for each (label, prompt, system), with a progress bar.

    Arms are memoised in the session (moving between pages does not
    recompute) and every sample is written to the store as it arrives (a
    cancelled or crashed run resumes where it stopped).
    """
    from dbpa_core.audit import draw_arm

    config = sampler_config or settings.sampler
    memo = st.session_state.setdefault("_arms", {})
    results, todo = [], []
    for position, (label, prompt, system) in enumerate(arms):
        key = (config, settings.embedder, prompt, system, k, settings.temperature, settings.max_tokens,
               settings.seed + (0 if position == 0 else seed_offset))
        results.append(memo.get(key))
        if results[-1] is None:
            todo.append((position, key, label, prompt, system))
    if todo:
        sampler, embedder = sampler_for(config), embedder_for(settings.embedder)
        # Any widget interaction (this button included) stops the running
        # script; the samples drawn so far are already in the store.
        cancel = st.empty()
        cancel.button("Cancel", key=f"cancel_sampling_{len(memo)}", help="Stop now; drawn samples are kept and reused.")
        st.session_state["_drawing"] = progress_label
        bar = st.progress(0.0, text=progress_label)
        for step, (position, key, label, prompt, system) in enumerate(todo):
            def report(stage, done, total, step=step):
                bar.progress(min(1.0, (step + done / max(total, 1)) / len(todo)),
                             text=f"{progress_label}: {stage} ({done}/{total})")

            temperature = None if config.backend == "recorded" else settings.temperature
            max_tokens = None if config.backend == "recorded" else settings.max_tokens
            arm = draw_arm(sampler, prompt, k, label=label, system=system, temperature=temperature,
                           max_tokens=max_tokens, seed=key[-1], embedder=embedder,
                           store=store(), progress=report)
            memo[key] = results[position] = arm
        bar.empty()
        cancel.empty()
        st.session_state.pop("_drawing", None)
    return results


def interrupted_notice() -> None:
    """Say so when the previous run stopped part-way (cancelled or crashed)."""
    label = st.session_state.pop("_drawing", None)
    if label:
        st.warning(f"The previous run ({label}) stopped before it finished. Every sample drawn so far is in "
                   "the store and is reused when you run again.")


def model_options(settings: Settings) -> dict[str, tuple[SamplerConfig, float]]:
    """Models (or sampler settings) a page can put side by side: label → (config, temperature)."""
    options = {
        "simulated T=0.5": (SamplerConfig("simulated"), 0.5),
        "simulated T=1.0": (SamplerConfig("simulated"), 1.0),
        "simulated T=2.0": (SamplerConfig("simulated"), 2.0),
        "recorded SmolLM2 T=0.7": (SamplerConfig("recorded"), 0.7),
        "local SmolLM2 T=0.7": (SamplerConfig("local"), 0.7),
        "local SmolLM2 T=1.2": (SamplerConfig("local"), 1.2),
    }
    if settings.sampler.backend == "openai":
        options[f"{settings.sampler.model} (API)"] = (settings.sampler, settings.temperature)
    return options


def with_model(settings: Settings, option: tuple[SamplerConfig, float]) -> Settings:
    """Settings whose sampler and temperature are those of a model option."""
    import dataclasses

    config, temperature = option
    return dataclasses.replace(settings, sampler=config, temperature=temperature)
