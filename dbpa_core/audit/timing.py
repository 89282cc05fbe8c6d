"""How long a run will take, said before it starts (issue 45: "dead air").

A run's time is modelled as the sum of its parts, each a count times a
per-unit cost:

    seconds = new outputs × seconds per output (the backend)
            + new texts to embed × seconds per text (the embedder)
            + tests × seconds per test (k, B)
            + a fixed start-up (loading a model once per process)

The per-unit costs are constants measured on the development machine
(:data:`MEASURED_ON`, ``bench/bench_timing.py`` prints them again on any
machine), and each is then corrected by what this machine actually took:
:class:`Throughput` keeps, per backend and embedder, the ratio of the real
to the announced time of the last runs (a moving average, persisted in a small
JSON file beside the sample store when given a path), so the second
announcement on a slower or busier machine is already close.

Nothing here imports streamlit: the app's pages show :meth:`TimeEstimate.reading`
beside their buttons and in their progress bars.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from pathlib import Path

from .._validation import check_positive_int

#: Below this many seconds a run is not announced (it ends before a sentence about it could be read).
ANNOUNCE_AFTER = 5.0

#: Where and when the constants below were measured (bench/bench_timing.py, DBPA_THREADS=1).
MEASURED_ON = "2 shared CPU cores, torch CPU, DBPA_THREADS=1 (bench/bench_timing.py, 2026-11-28)"

#: Seconds to generate one output, per backend.  Simulated outputs are computed from their seed; recorded ones
#: are read from the shipped file; local is SmolLM2-135M (llama.cpp, one thread) at ≈ 80 tokens per output;
#: openai is one network call (the latency of a small hosted model, not measured here: no network), divided by
#: the parallel calls.  Measured: 0.00013, 0.00005 and, for local, 0.58 s wall per output of a batched draw of 6
#: (2026-11-29, load 0.5: a run draws each arm's outputs in one batched call; the 1.71 s measured before, at load
#: 18, counted the load twice, :func:`load_factor` scaling every estimate by the load already).
SECONDS_PER_OUTPUT = {"simulated": 0.00015, "recorded": 0.0001, "local": 0.6, "openai": 1.5}
#: Seconds to embed one output of ≈ 60–130 tokens, per embedder (MiniLM on the CPU, batches of 64; OpenAI:
#: one call per batch of texts, its latency spread over the batch).  MiniLM's is wall time, not CPU: torch
#: embeds on every core (bench/bench_timing.py, 2026-11-29, load 2.6: 0.017 s CPU, ≈ 0.011 s wall per text; the
#: 0.030 s CPU measured at load 18 made a fresh store's announcements twice the real time in the timed walk).
SECONDS_PER_EMBEDDING = {"minilm": 0.011, "openai": 0.01}
#: Seconds of one permutation test per resample and per pair of outputs ((2k)² similarities, re-split B times):
#: measured 25 ms for k = 200, B = 800 — negligible beside sampling and embedding, kept for large B.
SECONDS_PER_TEST_UNIT = 2.0e-10
#: Seconds to load a model the first time a process uses it (MiniLM; SmolLM2 through llama.cpp).
LOAD_SECONDS = {"minilm": 5.0, "local": 0.5}
#: Seconds to solve the stability criterion R(β, r) once (one target's 40–60 items, one bootstrap resample of the
#: Stability page; a bounded 1-D search whose iterations, not the item count, set the cost).  Measured: 1.7 ms
#: CPU per solve (bench/bench_timing.py, the recorded study's six targets).
SECONDS_PER_CRITERION = 0.0017
#: A live RUT audit on the packaged SmolLM2 (``rut.collect``): per prompt, the target's answer and the scoring of
#: every answer; per reference answer, its share of the prompt's one batched call.  Measured in one process
#: (bench/bench_timing.py --local, 2026-11-29, load 0.5): 1.66 s and 0.30 s, the default audit (n = m = 4) 11.5 s;
#: on the page 12.35 s, which these give (4 × (1.8 + 4 × 0.325) = 12.4 s).  The calls model (1.7 s per output)
#: had announced that audit as 35 s (issue 45's second timed walk).
SECONDS_PER_RUT_PROMPT = 1.8
SECONDS_PER_RUT_REFERENCE_ANSWER = 0.325
#: The paper views that compute when they open (issue 45's second timed walk: TPR / FPR opened after 10.7 s, the
#: RUT paper's experiments after 9.3 s, with no time said), as (seconds, seconds per unit of their size), measured
#: in one process (2026-11-29, load 0.5-1): Figs 1–2's shipped paraphrases, 1,620 tests, 2.78 s at B = 200 and
#: 6.56 s at B = 1,000 (size: B); the RUT paper's simulated audits, 1.58 s for 100 trials per q and 6.68 s for
#: 500 (size: trials).  The recorded cvd_nice setup takes under a second and is not announced.
PAPER_VIEW_SECONDS = {"fig1_paraphrases": (1.8, 0.0047), "rut_study": (0.3, 0.0128)}

#: How much one run moves the learnt ratio (the rest is the earlier runs' history).
LEARNING_WEIGHT = 0.5
#: The learnt ratio stays within these bounds: one run disturbed by another job must not make the next
#: announcement absurd.
RATIO_BOUNDS = (0.2, 5.0)


def load_factor(load: float | None = None, cores: int | None = None) -> float:
    """How much slower than its CPU time a run is now, from the machine's load: ``max(1, load / (2 × cores))``.

    The constants are CPU seconds; on a shared machine a run waits for the cores too.  Measured in issue 45's
    timed walk on 2 cores: a k = 200 draw took 1.1× its modelled time at load average 6 and 3.0–3.8× at 16
    (MiniLM runs two threads, so a load up to twice the cores costs little).  ``load``: the 1-minute load
    average (default: this machine's now); ``cores``: default this machine's.
    """
    import os

    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # no load average on this platform
            return 1.0
    cores = cores or os.cpu_count() or 1
    return max(1.0, float(load) / (2 * cores))


@dataclass(frozen=True)
class TimeEstimate:
    """The expected wall-clock time of a run, before it starts.

    Attributes
    ----------
    seconds : float
        The expected duration.
    key : str
        What the estimate is learnt under (``"backend/embedder"``), for :meth:`Throughput.observe`.
    ratio : float
        The real-to-modelled ratio of earlier runs applied (1.0: the measured constants alone).
    load : float
        The machine's :func:`load_factor` applied (1.0: a machine with cores to spare).
    """

    seconds: float
    key: str = ""
    ratio: float = 1.0
    load: float = 1.0

    @property
    def announced(self) -> bool:
        """Whether the run is long enough to be announced (≥ :data:`ANNOUNCE_AFTER` s)."""
        return self.seconds >= ANNOUNCE_AFTER

    def duration(self) -> str:
        """The time in words: "about 70 s", "about 3 min", "under 5 s"."""
        if self.seconds < ANNOUNCE_AFTER:
            return "under 5 s"
        if self.seconds < 100:
            return f"about {_round_seconds(self.seconds)} s"
        return f"about {max(2, round(self.seconds / 60))} min"

    def reading(self) -> str:
        """The sentence shown beside a button: "about 70 s on this machine" (with "(busy now)" when the load
        lengthens it by half or more), or "" when not worth saying."""
        if not self.announced:
            return ""
        # Said when the machine's load lengthens it, so a room knows why the same click takes longer now.
        return f"{self.duration()} on this machine" + (" (busy now)" if self.load >= 1.5 else "")


def _round_seconds(seconds: float) -> int:
    """Seconds rounded as a person says them: 7, 15, 70 (to 5 s above 20 s, to 10 s above 60 s)."""
    step = 10 if seconds >= 60 else 5 if seconds >= 20 else 1
    return int(step * round(seconds / step))


def model_seconds(*, backend: str, embedder: str = "minilm", new_outputs: int = 0, new_embeddings: int = 0,
                  tests: int = 0, k: int = 20, n_resamples: int = 1000, parallel_calls: int = 1,
                  loads: tuple[str, ...] = ()) -> float:
    """The modelled duration of a run from its counts (the measured constants, no learnt ratio).

    Parameters
    ----------
    backend : {"simulated", "recorded", "local", "openai"}
        The sampler's backend.
    embedder : {"minilm", "openai"}
    new_outputs, new_embeddings : int
        Outputs to generate and texts to embed (not already in the sample store).
    tests : int
        Permutation tests run (one per perturbation).
    k, n_resamples : int
        Outputs per arm and resamples B of each test.
    parallel_calls : int
        Calls made at once (the OpenAI-compatible backend's ``max_concurrency``).
    loads : tuple of str
        Models loaded first (``"minilm"``, ``"local"``): a fresh process pays their loading once.
    """
    if backend not in SECONDS_PER_OUTPUT:
        raise ValueError(f"`backend` must be one of {', '.join(map(repr, SECONDS_PER_OUTPUT))}; got {backend!r}.")
    if embedder not in SECONDS_PER_EMBEDDING:
        raise ValueError(f"`embedder` must be one of {', '.join(map(repr, SECONDS_PER_EMBEDDING))}; "
                         f"got {embedder!r}.")
    for name, value in (("new_outputs", new_outputs), ("new_embeddings", new_embeddings), ("tests", tests)):
        if int(value) < 0:
            raise ValueError(f"`{name}` must be ≥ 0; got {value!r}.")
    check_positive_int(k, "k")
    check_positive_int(n_resamples, "n_resamples")
    check_positive_int(parallel_calls, "parallel_calls")
    generation = new_outputs * SECONDS_PER_OUTPUT[backend]
    if backend == "openai":
        generation /= parallel_calls
    testing = tests * n_resamples * (2 * k) ** 2 * SECONDS_PER_TEST_UNIT
    loading = sum(LOAD_SECONDS.get(name, 0.0) for name in loads)
    return generation + new_embeddings * SECONDS_PER_EMBEDDING[embedder] + testing + loading


class Throughput:
    """What this machine actually took, per backend and embedder: the ratio of real to modelled seconds.

    Parameters
    ----------
    path : str or Path, optional
        A JSON file that keeps the ratios between processes (read now, written after each run); None keeps
        them in memory only.  An unreadable file is ignored (the measured constants are used).
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._ratios: dict[str, float] = {}
        if self.path is not None:
            try:
                loaded = json.loads(self.path.read_text())
                self._ratios = {str(k): _bounded(float(v)) for k, v in loaded.items()
                                if isinstance(v, (int, float)) and math.isfinite(v) and v > 0}
            except (OSError, ValueError, AttributeError):
                self._ratios = {}

    def ratio(self, key: str) -> float:
        """The learnt real-to-modelled ratio of ``key`` (1.0 before any run)."""
        return self._ratios.get(key, 1.0)

    def estimate(self, modelled: float, key: str, *, load: float = 1.0) -> TimeEstimate:
        """The announced time of a run modelled at ``modelled`` seconds under ``key``, on a machine whose
        :func:`load_factor` is ``load``."""
        ratio = self.ratio(key)
        return TimeEstimate(max(0.0, modelled) * ratio * load, key=key, ratio=ratio, load=load)

    def observe(self, estimate: TimeEstimate, real_seconds: float) -> None:
        """Learn from a run announced as ``estimate`` that took ``real_seconds`` (runs under a second are
        ignored: their time is mostly overhead the model does not describe).  The load it was announced
        under is divided out: the ratio learnt is the machine's, not the moment's."""
        scale = estimate.ratio * estimate.load
        modelled = estimate.seconds / scale if scale else 0.0
        if modelled < 1.0 or not math.isfinite(real_seconds) or real_seconds <= 0:
            return
        with self._lock:
            seen = real_seconds / (modelled * estimate.load)
            before = self._ratios.get(estimate.key)
            self._ratios[estimate.key] = _bounded(seen if before is None else
                                                  (1 - LEARNING_WEIGHT) * before + LEARNING_WEIGHT * seen)
            if self.path is not None:
                try:
                    self.path.write_text(json.dumps(self._ratios, sort_keys=True))
                except OSError:
                    pass  # a read-only folder: the ratios are kept for this process only


def _bounded(ratio: float) -> float:
    return min(RATIO_BOUNDS[1], max(RATIO_BOUNDS[0], ratio))


def request_estimate(request, throughput: Throughput, *, stored_outputs: int = 0, stored_embeddings: int = 0,
                     loaded: tuple[str, ...] = (), load: float = 1.0) -> TimeEstimate:
    """How long running ``request`` (an :class:`~dbpa_core.audit.request.AuditRequest`) will take here.

    ``stored_outputs`` and ``stored_embeddings`` are what the sample store already holds of it (generated
    and embedded again for nothing); ``loaded`` names the models this process has loaded already; ``load`` is
    the machine's :func:`load_factor`.
    """
    arms = request.arm_requests()
    k = request.sequential.k_max if request.sequential is not None else request.k
    backends = [arm.sampler.backend for arm in arms]
    # The slowest backend of the arms sets the key (a comparison of a local model with a simulated one is
    # timed as local): it is the one whose throughput the run measures.
    backend = max(backends, key=lambda b: SECONDS_PER_OUTPUT[b])
    embedder = request.embedder.name
    parallel = dict(request.sampler_of(True).options).get("max_concurrency", 1) if backend == "openai" else 1
    total = k * len(arms)
    generated = sum(k for b in backends if b not in ("simulated",))
    new_outputs, new_embeddings = max(0, generated - stored_outputs), max(0, total - stored_embeddings)
    # A model is loaded only when there is work for it (a Resample whose texts are all embedded never loads
    # MiniLM).
    used = ((embedder,) if new_embeddings else ()) + ((backend,) if new_outputs else ())
    loads = tuple(name for name in used if name in LOAD_SECONDS and name not in loaded)
    modelled = model_seconds(backend=backend, embedder=embedder, new_outputs=new_outputs,
                             new_embeddings=new_embeddings, tests=len(arms) - 1, k=k,
                             n_resamples=request.n_resamples, parallel_calls=int(parallel), loads=loads)
    return throughput.estimate(modelled, f"{backend}/{embedder}", load=load)


def calls_estimate(backend: str, calls: int, throughput: Throughput, *, embedder: str = "minilm",
                   embeddings: int = 0, loaded: tuple[str, ...] = (), load: float = 1.0) -> TimeEstimate:
    """How long ``calls`` generation calls (and ``embeddings`` texts embedded) take here: the sibling audits'
    runs (the RUT's answers, the stability search's rewrites), which are not audit requests."""
    loads = tuple(name for name in (backend,) + ((embedder,) if embeddings else ()) if name in LOAD_SECONDS
                  and name not in loaded)
    modelled = model_seconds(backend=backend, embedder=embedder, new_outputs=calls, new_embeddings=embeddings,
                             loads=loads)
    return throughput.estimate(modelled, f"{backend}/{embedder}", load=load)


def rut_estimate(n: int, m: int, throughput: Throughput, *, loaded: tuple[str, ...] = (),
                 load: float = 1.0) -> TimeEstimate:
    """How long a live RUT audit takes here: ``n`` prompts, ``m`` reference answers each, on the packaged SmolLM2
    (:data:`SECONDS_PER_RUT_PROMPT`, :data:`SECONDS_PER_RUT_REFERENCE_ANSWER`), learnt under ``"local/rut"``: its
    reference answers are drawn in one batched call per prompt, so the audit is not ``n (m + 1)`` single calls."""
    check_positive_int(n, "n")
    check_positive_int(m, "m")
    modelled = n * (SECONDS_PER_RUT_PROMPT + m * SECONDS_PER_RUT_REFERENCE_ANSWER)
    return throughput.estimate(modelled + (0.0 if "local" in loaded else LOAD_SECONDS["local"]), "local/rut",
                               load=load)


def paper_view_estimate(view: str, size: int, throughput: Throughput, *, load: float = 1.0) -> TimeEstimate:
    """How long a paper view (:data:`PAPER_VIEW_SECONDS`) of ``size`` takes here, learnt under ``"paper/<view>"``."""
    if view not in PAPER_VIEW_SECONDS:
        raise ValueError(f"`view` must be one of {', '.join(map(repr, PAPER_VIEW_SECONDS))}; got {view!r}.")
    check_positive_int(size, "size")
    fixed, per_unit = PAPER_VIEW_SECONDS[view]
    return throughput.estimate(fixed + per_unit * size, f"paper/{view}", load=load)


def bootstrap_estimate(n_resamples: int, n_targets: int, throughput: Throughput, *, load: float = 1.0) -> TimeEstimate:
    """How long the stability study's paired bootstrap takes here: ``n_resamples`` resamples of the items, each
    solving the criterion once per target (``n_targets``, all tasks together), learnt under ``"stability"``."""
    check_positive_int(n_resamples, "n_resamples", minimum=0)
    check_positive_int(n_targets, "n_targets", minimum=0)
    return throughput.estimate(n_resamples * n_targets * SECONDS_PER_CRITERION, "stability/bootstrap", load=load)
