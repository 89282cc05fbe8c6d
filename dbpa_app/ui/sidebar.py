"""The shared sidebar: sampler, embedder, temperature, tokens and seed for every page."""

from __future__ import annotations

import streamlit as st

from dbpa_core.audit.request import EmbedderConfig, SamplerConfig
from dbpa_core.embedders import EMBEDDERS
from dbpa_core.samplers import DEFAULT_TEMPERATURE

from .settings import BACKEND_LABELS, EMBEDDER_LABELS, RECORDED_GENERATION, Keys, Settings


#: Every key the sidebar's widgets are stored under starts with one of these (tests/test_first_view_verdict.py
#: draws the sidebar for every backend and embedder and checks it).
SIDEBAR_KEY_PREFIXES = ("backend", "openai_", "temperature_", "max_tokens_", "embedder", "embed_", "seed")


def _config(build, *, fallback):
    """A configuration from the sidebar's fields, or (``fallback``, the problem) when a field is unusable."""
    try:
        return build(), ""
    except ValueError as error:
        st.sidebar.error(str(error))
        return fallback, str(error)


def sidebar() -> Settings:
    """Render the shared sidebar and return the chosen settings."""
    bar = st.sidebar
    bar.header("Sampler")
    backend = bar.selectbox("Backend", list(BACKEND_LABELS), format_func=BACKEND_LABELS.get, key="backend",
                            help="Where outputs come from. Simulated is instant and knows the true effect.")
    sampler_key, problems, endpoint = "", [], {}
    if backend == "openai":
        endpoint = {
            "model": bar.text_input("Model", "gpt-4o-mini", key="openai_model"),
            "base_url": bar.text_input("Base URL", "", key="openai_base_url",
                                       placeholder="https://api.openai.com/v1",
                                       help="Any OpenAI-compatible server: vLLM, Ollama, llama.cpp …")}
        sampler_key = bar.text_input("API key", "", type="password", key="openai_api_key",
                                     help="Used for this session only; never written to disk. "
                                          "Empty: OPENAI_API_KEY from the environment.")
        endpoint["options"] = {"max_concurrency": int(bar.number_input("Parallel calls", 1, 32, 4,
                                                                       key="openai_concurrency"))}
    if backend == "recorded":
        # Replay: the answers were generated once, with the settings stored beside each of them.
        bar.caption("Recorded answers replay as they were generated: SmolLM2-135M at T = {:g}, ≤ {} tokens "
                    "(scripts/record_samples.py); temperature and length cannot change them."
                    .format(*RECORDED_GENERATION))
        temperature, max_tokens = None, None
    else:
        temperature = bar.slider("Temperature", 0.0, 2.0, DEFAULT_TEMPERATURE[backend], 0.1,
                                 key=f"temperature_{backend}")
        max_tokens = int(bar.number_input("Max tokens per output", 8, 2048, 80 if backend == "local" else 128,
                                          key=f"max_tokens_{backend}"))
    sampler, problem = _config(lambda: SamplerConfig(backend, temperature=temperature, max_tokens=max_tokens,
                                                     **endpoint),
                               fallback=SamplerConfig(backend, model=endpoint.get("model", "")))
    problems.append(problem)
    bar.header("Embedder")
    embedder_name = bar.selectbox("Embedding model", EMBEDDERS, key="embedder", format_func=EMBEDDER_LABELS.get)
    embedder, embedder_key = EmbedderConfig("minilm"), ""
    if embedder_name == "openai":
        model = bar.text_input("Embedding model name", "text-embedding-3-small", key="embed_model")
        base_url = bar.text_input("Embeddings base URL", sampler.base_url, key="embed_base_url")
        embedder_key = bar.text_input("Embeddings API key", "", type="password", key="embed_api_key")
        embedder, problem = _config(lambda: EmbedderConfig("openai", model=model, base_url=base_url),
                                    fallback=EmbedderConfig("openai", model=model))
        problems.append(problem)
    seed = int(bar.number_input("Seed", 0, 2**31 - 1, 0, key="seed",
                                help="Same seed, same samples: results are reproducible."))
    return Settings(sampler, embedder, seed, Keys(sampler_key, embedder_key), " ".join(p for p in problems if p))


#: What the sidebar says on a view that does not sample (issue 45: its settings showed with no note).
SAMPLER_IGNORED = "This view does not sample: the Sampler settings above do not apply here ({why})."


def sampler_ignored(why: str) -> None:
    """Say in the sidebar that the current view ignores the sampler settings, and why."""
    st.sidebar.info(SAMPLER_IGNORED.format(why=why), icon=":material/block:")


def interrupted_notice() -> None:
    """Say so when the previous run stopped part-way (cancelled or crashed), with what was kept."""
    drawing = st.session_state.pop("_drawing", None)
    # A slot of an earlier script run names a place on that run's page, not this one's: never emptied now.
    st.session_state.pop("_interrupted_notice", None)
    # A Cancel click (ui.runs.RunProgress) is read by this run only: see ui.runs.cancelled_draw.
    st.session_state["_cancelled_now"] = st.session_state.pop("_cancelled", None)
    # One slot at the top of every page, used or not: with a notice in it or not, the page's elements keep
    # their places, so a page that draws by itself after an interrupted run shows no dimmed copies of the last
    # run's elements (Streamlit keeps those until this run writes over them, seen in a user trial for a whole
    # draw).  The next run to finish empties it (ui.runs.RunProgress.close): the notice is then old news.
    slot = st.empty()
    if drawing:
        kept = (f"{drawing['kept']} outputs sampled in it are in the store, with every sample of earlier runs, and "
                "are reused when you run again." if drawing["kept"] else "It had sampled no new outputs.")
        slot.warning(f"The previous run ({drawing['label']}) stopped before it finished. {kept}")
        st.session_state["_interrupted_notice"] = slot


def sidebar_untouched(state) -> bool:
    """Whether no sidebar widget has been drawn in this session yet (``state``: the session state): its first
    drawing then returns :func:`ui.first_verdict.default_settings`."""
    return not any(isinstance(key, str) and key.startswith(SIDEBAR_KEY_PREFIXES) for key in state)


def draw_shared() -> Settings:
    """What every page shares, drawn once per script run; the sidebar's settings.

    The sidebar (its settings kept in ``st.session_state["settings"]`` for
    :func:`current_settings`), the presentation-mode switch and its type, and
    the slot of the interrupted-run notice.  app.py draws them before every
    page but the home page, which draws them itself right after its verdict
    strip (:func:`ui.first_verdict.draw_first_verdict`: sent with the sidebar,
    the strip waited for the scripts of the sidebar's widgets; issue 45).
    """
    from .lesson import apply_presentation_mode, presentation_toggle

    settings = st.session_state["settings"] = sidebar()
    presentation_toggle()
    apply_presentation_mode()
    interrupted_notice()
    return settings


def current_settings() -> Settings:
    """The sidebar's settings for this run (every page starts with this).

    A page opened by its URL on a fresh server still runs ``app.py`` first
    (``st.navigation`` routes every request; the views live in ``views/``, not
    ``pages/``, so Streamlit never enters its legacy folder mode), so the
    settings are there; a page run on its own (a test) gets the defaults.
    """
    if "settings" not in st.session_state:
        st.session_state["settings"] = sidebar()
    return st.session_state["settings"]
