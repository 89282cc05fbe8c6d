"""One perturbation across many prompts, from an eval log: ``dbpa compare`` and the app's page.

An eval log (promptfoo, lm-eval, Inspect AI, JSONL; :mod:`dbpa_core.data.eval_logs`) holds many
prompts with several outputs each under two arms.  :func:`run_compare` embeds every output once and
runs :func:`~dbpa_core.stats.many.dbpa_test_many` on them; :mod:`dbpa_core.present.compare` reads
the result (the table, the sentences, the JSON record the command line and the page share).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._validation import check_choice, check_n_resamples, check_positive_int, check_probability

__all__ = ["COMPARE_DISCREPANCY", "SPEC_FORMAT", "CompareRequest", "CompareResult", "compare_log", "run_compare"]

#: ``compare``'s default ω.  With the few outputs per prompt an eval log has, the energy distance has
#: the power (``bench/bench_many.py`` on the paper's GPT-3.5 vs GPT-4 answers, 9 prompts × 5: it
#: rejected in every draw, the JSD of the similarity histograms in 60 %, both at their level
#: under the null): 10 within-arm and 25 across-arm similarities spread over 30 histogram cells say
#: little, while the energy distance uses every pair's distance as it is.
COMPARE_DISCREPANCY = "energy"
EMBEDDERS = ("minilm",)
#: ``CompareRequest.fmt`` of outputs sampled now from a SPEC (``dbpa compare SPEC.yaml``).
SPEC_FORMAT = "spec"


@dataclass(frozen=True)
class CompareRequest:
    """What ``dbpa compare`` (and the page) runs: which log, which arms, which test.

    Attributes
    ----------
    paths : tuple of str
        One log (holding both arms) or two (one arm each).
    fmt : {"promptfoo", "lm-eval", "inspect", "jsonl"}
    arms : tuple of 2 str, optional
        The original arm first, then the perturbed one.
    similarity, discrepancy, n_resamples, seed
        The test's settings (:func:`~dbpa_core.dbpa_test_many`).
    alpha : float
        Level of the overall decision.
    fdr : float
        False discovery rate of the per-prompt flags (Benjamini–Hochberg).
    embedder : str
    """

    paths: tuple[str, ...]
    fmt: str
    arms: tuple[str, ...] | None = None
    similarity: str = "cosine"
    discrepancy: str = COMPARE_DISCREPANCY
    n_resamples: int = 1000
    seed: int = 0
    alpha: float = 0.05
    fdr: float = 0.1
    embedder: str = "minilm"

    def settings(self) -> dict:
        """The settings a report records and the page's "out of date" check reads (JSON-ready; the logs'
        temporary paths left out: a page names its files by their content)."""
        return {"format": self.fmt, "arms": list(self.arms) if self.arms else None, "embedder": self.embedder,
                "similarity": self.similarity, "discrepancy": self.discrepancy, "n_resamples": self.n_resamples,
                "alpha": self.alpha, "fdr": self.fdr, "seed": self.seed}


@dataclass(frozen=True, eq=False)
class CompareResult:
    """A log compared: the prompts tested (each arm ≥ 2 outputs), those left out, and the test."""

    request: CompareRequest
    log: object = field(repr=False)            # the EvalLog read
    prompts: tuple = field(repr=False)         # the PromptSamples tested, in the log's order
    left_out: tuple[str, ...]                  # prompt ids with fewer than 2 outputs in an arm
    test: object = field(repr=False)           # ManyPromptsResult
    #: prompt_id → its outputs' vectors (arm a, arm b), for the clouds and the themes (empty for a text ω
    #: except the flagged prompts', embedded for their themes)
    vectors: dict = field(default_factory=dict, repr=False)
    #: prompt_id → ChangeExplanation (:func:`~dbpa_core.explain_change`) of every flagged prompt (q ≤ fdr)
    themes: dict = field(default_factory=dict, repr=False)

    @property
    def arms(self) -> tuple[str, str]:
        return self.log.arms[0], self.log.arms[1]

    @property
    def change(self) -> bool:
        return self.test.pvalue <= self.request.alpha


def _request_iv(request: CompareRequest) -> CompareRequest:
    from ..data.eval_logs import FORMATS

    if not isinstance(request, CompareRequest):
        raise ValueError(f"`request` must be a CompareRequest; got {type(request).__name__}.")
    if request.fmt == SPEC_FORMAT:  # the outputs were sampled now (dbpa_core.requests.many): no log to read
        return _settings_iv(request)
    if not 1 <= len(request.paths) <= 2:
        raise ValueError(f"`paths` must name one log (both arms) or two (one arm each); got {len(request.paths)}.")
    check_choice(request.fmt, "fmt", FORMATS)
    return _settings_iv(request)


def _settings_iv(request: CompareRequest) -> CompareRequest:
    from ..stats.permutation import check_measures

    if request.arms is not None and len(request.arms) != 2:
        raise ValueError(f"`arms` must name two arms (original, then perturbed); got {len(request.arms)}.")
    check_measures(request.similarity, request.discrepancy)
    check_n_resamples(request.n_resamples)
    check_positive_int(request.seed, "seed", minimum=0)
    check_probability(request.alpha, "alpha")
    check_probability(request.fdr, "fdr")
    check_choice(request.embedder, "embedder", EMBEDDERS)
    return request


def run_compare(request: CompareRequest, *, store=None, progress: Callable[[str, int, int], object] | None = None,
                embedder=None, known_vectors: Callable | None = None) -> CompareResult:
    """Read the log, embed every output once, and test the two arms across its prompts.

    Parameters
    ----------
    request : CompareRequest
    store : SampleStore, optional
        Caches the vectors (a second run embeds nothing).
    progress : callable(stage, done, total), optional
    embedder : Embedder, optional
        Default: the request's (MiniLM).
    known_vectors : callable(texts, *, embedder_key) -> dict of text_hash -> vector, optional
        Vectors known without embedding, asked for what the store lacks (the command line and the page
        pass :func:`dbpa_core.paper.embeddings.load_shipped_embeddings`: the shipped example's outputs are
        the paper's responses, whose MiniLM vectors ship with the package).

    Returns
    -------
    CompareResult

    Raises
    ------
    ValueError
        A bad setting (named), a malformed log (the importer names file and row), or fewer than one
        prompt with two outputs in each arm.
    """
    from ..data.eval_logs import load_eval_log

    request = _request_iv(request)
    if request.fmt == SPEC_FORMAT:
        raise ValueError("`fmt`: a SPEC's outputs are sampled by dbpa_core.requests.many.run_compare_spec, "
                         "not read by run_compare.")
    log = load_eval_log([Path(p) for p in request.paths], fmt=request.fmt, arms=request.arms)
    return compare_log(log, request, store=store, progress=progress, embedder=embedder, known_vectors=known_vectors)


def compare_log(log, request: CompareRequest, *, store=None, progress=None, embedder=None,
                known_vectors: Callable | None = None) -> CompareResult:
    """Test the first two arms of an :class:`~dbpa_core.data.eval_logs.EvalLog` already read (or sampled).

    As :func:`run_compare` from the log on; ``request.paths`` and ``request.fmt`` only label the result.
    """
    from ..stats.many import dbpa_test_many
    from ..stats.similarity import TEXT_SIMILARITIES

    request = _request_iv(request)
    a, b = log.arms[:2]
    tested = tuple(p for p in log.prompts if len(p.texts[a]) >= 2 and len(p.texts[b]) >= 2)
    left_out = tuple(p.prompt_id for p in log.prompts if p not in tested)
    if not tested:
        raise ValueError(f"{', '.join(map(str, request.paths))}: no prompt has 2 or more outputs in both arms "
                         f"{a!r} and {b!r}; run each test case at least twice per arm (promptfoo --repeat 2+).")
    if embedder is None and request.similarity not in TEXT_SIMILARITIES:
        from ..embedders import get_embedder

        embedder = get_embedder(request.embedder)
    vectors = {} if request.similarity in TEXT_SIMILARITIES else _vectors(tested, (a, b), embedder, store,
                                                                           progress, known_vectors)
    if request.similarity in TEXT_SIMILARITIES:
        xs = [list(p.texts[a]) for p in tested]
        ys = [list(p.texts[b]) for p in tested]
    else:
        xs = [vectors[p.prompt_id][0] for p in tested]
        ys = [vectors[p.prompt_id][1] for p in tested]
    test = dbpa_test_many(xs, ys, similarity=request.similarity, discrepancy=request.discrepancy,
                          n_resamples=request.n_resamples, rng=request.seed, fdr=request.fdr)
    flagged = [(i, p) for i, (p, changed) in enumerate(zip(tested, test.changed)) if changed]
    if flagged and request.similarity in TEXT_SIMILARITIES:  # a text ω needs no vectors; the themes do
        if embedder is None:
            from ..embedders import get_embedder

            embedder = get_embedder(request.embedder)
        vectors = _vectors([p for _, p in flagged], (a, b), embedder, store, progress, known_vectors)
    themes = {p.prompt_id: _themes(p, (a, b), vectors[p.prompt_id], request, i) for i, p in flagged}
    return CompareResult(request, log, tested, left_out, test, vectors, themes)


def _vectors(prompts, arms, embedder, store, progress, known_vectors) -> dict:
    """prompt_id → (k_a × dim, k_b × dim) vectors of its outputs, each distinct text embedded once."""
    from ..data.store import text_hash

    found = _embed([t for p in prompts for arm in arms for t in p.texts[arm]], embedder, store, progress,
                   known_vectors)
    return {p.prompt_id: tuple(np.stack([found[text_hash(t)] for t in p.texts[arm]]) for arm in arms)
            for p in prompts}


def _themes(prompt, arms, vectors, request: CompareRequest, index: int):
    """What changed in one flagged prompt: :func:`~dbpa_core.explain_change` on its own outputs.

    Its themes are clusters of that prompt's pooled outputs, each tested by re-splitting the prompt's arm
    labels, Benjamini–Hochberg across that prompt's themes at the request's ``fdr`` (the module's own FDR
    control, unchanged): only themes significant there are read as findings.  Seeded by (seed, prompt
    index), so a prompt's account does not depend on which other prompts were flagged.
    """
    from ..stats.explain import explain_change

    rng = np.random.default_rng(np.random.SeedSequence([request.seed, index]))
    return explain_change(list(prompt.texts[arms[0]]), list(prompt.texts[arms[1]]), vectors[0], vectors[1],
                          fdr=request.fdr, n_resamples=request.n_resamples, rng=rng)


def _embed(texts, embedder, store, progress, known_vectors) -> dict:
    """text_hash → vector of every text: from the store, else ``known_vectors``, else embedded once."""
    from ..data.store import text_hash

    known = store.get_embeddings(embedder.key, texts) if store is not None else {}
    if known_vectors is not None:
        known.update(known_vectors([t for t in texts if text_hash(t) not in known], embedder_key=embedder.key))
    rest = list(dict.fromkeys(t for t in texts if text_hash(t) not in known))
    if rest:
        fresh = embedder.embed(rest, store=store, progress=(lambda done, total: progress(
            "embedding the log's outputs", done, total)) if progress else None)
        known.update(zip(map(text_hash, rest), fresh))
    return known
