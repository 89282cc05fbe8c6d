"""Resources shared by every session (``st.cache_resource``): scenarios, store, models, clients.

Shared across sessions, so never mutated after creation.  dbpa_core's heavy
parts are imported inside the functions: the sidebar must not wait for numba,
scipy and torch on a cold start.
"""

from __future__ import annotations

import os
import threading

import streamlit as st

from dbpa_core.audit.request import EmbedderConfig, SamplerConfig
from dbpa_core.embedders.minilm import MiniLMEmbedder  # cheap: torch is imported on first use

_MINILM_LOCK = threading.Lock()

#: Environment variables that set a BLAS library's threads; one set by whoever starts the server wins.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def prepare_process() -> None:
    """Make this process cheap to share between many sessions; run once, before any page draws.

    ``ui/__init__.py`` calls it, so the first script thread of the process
    runs it while holding the import lock of :mod:`ui`.

    BLAS runs one thread per call.  Sessions are the server's parallelism; a
    multi-threaded BLAS on a small matrix (the 80 × 384 PCA of the output
    clouds) spins its threads against the other sessions' work: on a loaded
    2-core machine that SVD took 0.2–0.6 s of CPU instead of 2 ms.  A thread
    count set in the environment (``OPENBLAS_NUM_THREADS`` …) is left as it is.
    """
    if not any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        # Libraries loaded later (scipy's own OpenBLAS) read the variable; those already loaded (numpy's) are
        # set through threadpoolctl.
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")


def import_figure_libraries() -> None:
    """Import pandas and PIL completely; every script run calls it before it builds a figure.

    Plotly looks them up in ``sys.modules`` without importing them
    (``get_module(..., should_load=False)``); while another thread is still
    importing one of them, a figure built meanwhile finds a half-initialised
    module and fails (``partially initialized module 'pandas' has no
    attribute 'Series'``, plotly/plotly.py#2433): issue 31's first-use race.
    An ``import`` statement, unlike that lookup, waits for another thread's
    import of the same module to finish, so a script that runs this first
    never sees half a module.  app.py calls it for every page but the home
    page, which calls it once its verdict is on screen: the two imports took
    ≈ 1.4 s of a fresh server's first view (issue 45).  Once loaded, a few
    microseconds.
    """
    import pandas  # noqa: F401
    import PIL.Image  # noqa: F401


class SharedMiniLM(MiniLMEmbedder):
    """MiniLM whose weights load once per process, whichever thread asks first.

    Constructing it loads nothing, and embedding texts that the store already
    holds never touches the model (how the home page's first view opens
    without it).  The lock makes a background loader and a foreground request
    share one load instead of racing two.
    """

    @property
    def model(self):
        with _MINILM_LOCK:
            return super().model


@st.cache_resource(show_spinner=False)
def scenarios():
    from dbpa_core.data.scenarios import load_scenarios

    return load_scenarios()


@st.cache_resource(show_spinner=False)
def store():
    from dbpa_core.data.store import SampleStore

    return SampleStore()


class EmbeddingsOnly:
    """The store as a simulated arm uses it: embeddings are cached, samples are not.

    A simulated output is recomputed from its seed in microseconds, while
    writing it to SQLite costs ≈ 2 ms (280 of them: half a second of the home
    page's first view).  Nothing is lost: the same seed gives the same outputs.
    """

    def __init__(self, inner):
        self._inner = inner

    def get_samples(self, description, indices):
        return {}

    def put_sample(self, description, index, text, token_logprobs=None):
        # SampleStore.put_sample's contract: what the slot holds afterwards (here, the sample itself).
        return text, token_logprobs

    def get_embeddings(self, embedder_key, texts):
        return self._inner.get_embeddings(embedder_key, texts)

    def put_embeddings(self, embedder_key, texts, vectors):
        return self._inner.put_embeddings(embedder_key, texts, vectors)


@st.cache_resource(show_spinner="Compiling UMAP (first use in this process, ≈20 s)…")
def umap_ready() -> bool:
    """Pay UMAP's numba compilation once per process, before the first projection."""
    from dbpa_core.present.projection import warm_up_umap

    warm_up_umap()
    return True


def _in_session(kind: str, config, api_key: str, build):
    """A client built from a key the user typed, kept in this session's state only (it ends with the session).

    Never in ``st.cache_resource``: that cache is shared by every session and unbounded, so a typed key would
    outlive its session (ui/settings.py promises it does not).  One client per configuration: a new key
    replaces the client of the old one.
    """
    import hashlib

    clients = st.session_state.setdefault("_keyed_clients", {})
    slot = (kind, config, hashlib.sha256(api_key.encode()).hexdigest())
    if slot not in clients:
        for old in [s for s in clients if s[:2] == slot[:2]]:
            del clients[old]
        clients[slot] = build()
    return clients[slot]


@st.cache_resource(show_spinner="Loading the sampler…")
def _shared_sampler(config: SamplerConfig):
    from dbpa_core.audit.runner import build_sampler

    return build_sampler(config)


def sampler_for(config: SamplerConfig, api_key: str = ""):
    """The sampler of a configuration (one instance per backend, model and URL, whatever the temperature).

    Shared by every session, except one built from a typed key: that one lives in its session (:func:`_in_session`).
    """
    from dbpa_core.audit.runner import build_sampler

    config = config.instance
    if api_key and config.backend == "openai":
        return _in_session("sampler", config, api_key, lambda: build_sampler(config, api_key=api_key))
    return _shared_sampler(config)


@st.cache_resource(show_spinner=False)
def _shared_embedder(config: EmbedderConfig):
    from dbpa_core.audit.runner import build_embedder

    if config.name == "minilm":
        return SharedMiniLM(**config.constructor_settings())
    return build_embedder(config)


def embedder_for(config: EmbedderConfig, api_key: str = ""):
    """The embedder of a configuration; MiniLM loads its weights on first use, once per process.

    Shared by every session, except one built from a typed key: that one lives in its session (:func:`_in_session`).
    """
    from dbpa_core.audit.runner import build_embedder

    if api_key and config.name == "openai":
        return _in_session("embedder", config, api_key, lambda: build_embedder(config, api_key=api_key))
    return _shared_embedder(config)


@st.cache_resource(show_spinner="Loading the reference model…")
def reference_scorer():
    """The RUT's reference scorer (the packaged SmolLM2)."""
    from dbpa_core.rut.scoring import ReferenceScorer

    return ReferenceScorer()
