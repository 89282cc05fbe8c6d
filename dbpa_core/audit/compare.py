"""One perturbation across many prompts, from an eval log: ``dbpa compare`` and the app's page.

An eval log (promptfoo, lm-eval, Inspect AI, JSONL; :mod:`dbpa_core.data.eval_logs`) holds many
prompts with several outputs each under two arms.  :func:`run_compare` embeds every output once and
runs :func:`~dbpa_core.stats.many.dbpa_test_many` on them; :func:`compare_record` and
:func:`compare_readings` are what the command line prints and writes, and what the page shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .._validation import check_choice, check_n_resamples, check_positive_int, check_probability

__all__ = ["COMPARE_DISCREPANCY", "CompareRequest", "CompareResult", "compare_readings", "compare_record",
           "compare_table", "run_compare"]

#: ``compare``'s default ω.  With the few outputs per prompt an eval log has, the energy distance has
#: the power (``bench/bench_many.py`` on the paper's GPT-3.5 vs GPT-4 answers, 9 prompts × 5: it
#: rejected in every draw, the JSD of the similarity histograms in about half, both at their level
#: under the null): 10 within-arm and 25 across-arm similarities spread over 30 histogram cells say
#: little, while the energy distance uses every pair's distance as it is.
COMPARE_DISCREPANCY = "energy"
EMBEDDERS = ("minilm",)


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


@dataclass(frozen=True, eq=False)
class CompareResult:
    """A log compared: the prompts tested (each arm ≥ 2 outputs), those left out, and the test."""

    request: CompareRequest
    log: object = field(repr=False)            # the EvalLog read
    prompts: tuple = field(repr=False)         # the PromptSamples tested, in the log's order
    left_out: tuple[str, ...]                  # prompt ids with fewer than 2 outputs in an arm
    test: object = field(repr=False)           # ManyPromptsResult

    @property
    def arms(self) -> tuple[str, str]:
        return self.log.arms[0], self.log.arms[1]

    @property
    def change(self) -> bool:
        return self.test.pvalue <= self.request.alpha


def _request_iv(request: CompareRequest) -> CompareRequest:
    from ..data.eval_logs import FORMATS
    from ..stats.permutation import check_measures

    if not isinstance(request, CompareRequest):
        raise ValueError(f"`request` must be a CompareRequest; got {type(request).__name__}.")
    if not 1 <= len(request.paths) <= 2:
        raise ValueError(f"`paths` must name one log (both arms) or two (one arm each); got {len(request.paths)}.")
    check_choice(request.fmt, "fmt", FORMATS)
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
                embedder=None) -> CompareResult:
    """Read the log, embed every output once, and test the two arms across its prompts.

    Parameters
    ----------
    request : CompareRequest
    store : SampleStore, optional
        Caches the vectors (a second run embeds nothing).
    progress : callable(stage, done, total), optional
    embedder : Embedder, optional
        Default: the request's (MiniLM).  Outputs that are the paper's shipped responses take their
        shipped MiniLM vectors.

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
    from ..paper.embeddings import embed_groups
    from ..stats.many import dbpa_test_many
    from ..stats.similarity import TEXT_SIMILARITIES

    request = _request_iv(request)
    log = load_eval_log([Path(p) for p in request.paths], fmt=request.fmt, arms=request.arms)
    a, b = log.arms[:2]
    tested = tuple(p for p in log.prompts if len(p.texts[a]) >= 2 and len(p.texts[b]) >= 2)
    left_out = tuple(p.prompt_id for p in log.prompts if p not in tested)
    if not tested:
        raise ValueError(f"{', '.join(map(str, request.paths))}: no prompt has 2 or more outputs in both arms "
                         f"{a!r} and {b!r}; run each test case at least twice per arm (promptfoo --repeat 2+).")
    if request.similarity in TEXT_SIMILARITIES:
        xs = [list(p.texts[a]) for p in tested]
        ys = [list(p.texts[b]) for p in tested]
    else:
        groups = {(i, arm): p.texts[arm] for i, p in enumerate(tested) for arm in (a, b)}
        if embedder is None:
            from ..embedders import get_embedder

            embedder = get_embedder(request.embedder)
        vectors = embed_groups(groups, embedder=embedder, store=store, progress=progress,
                               stage="embedding the log's outputs")
        xs = [vectors[(i, a)] for i in range(len(tested))]
        ys = [vectors[(i, b)] for i in range(len(tested))]
    test = dbpa_test_many(xs, ys, similarity=request.similarity, discrepancy=request.discrepancy,
                          n_resamples=request.n_resamples, rng=request.seed, fdr=request.fdr)
    return CompareResult(request, log, tested, left_out, test)


def compare_table(result: CompareResult) -> list[dict]:
    """One row per tested prompt, sorted by q then p (most changed first)."""
    a, b = result.arms
    rows = [{"prompt": p.prompt, "prompt_id": p.prompt_id, "statistic": r.statistic, "effect_size": r.effect_size,
             "pvalue": r.pvalue, "qvalue": r.qvalue, "changed": bool(r.qvalue <= result.test.fdr),
             "k": {a: r.n_original, b: r.n_perturbed}}
            for p, r in zip(result.prompts, result.test.per_prompt)]
    return sorted(rows, key=lambda row: (row["qvalue"], row["pvalue"]))


def compare_readings(result: CompareResult) -> list[str]:
    """Plain sentences: the verdict, what p means, the effect, and where it moved."""
    from ..present.readings import format_percent, format_pvalue, read_effect
    from ..stats.discrepancy import get_discrepancy

    test, request = result.test, result.request
    a, b = result.arms
    m = test.n_prompts
    label = get_discrepancy(request.discrepancy).label
    shown = format_pvalue(test.pvalue, test.n_resamples, exact=test.exact)
    shown = shown if shown.startswith("≤") else f"= {shown}"
    verdict = (f"Across {m} prompts, the outputs of {b!r} differ from those of {a!r} more than chance explains "
               f"(p {shown}, α = {request.alpha:g}): a change is declared." if result.change else
               f"Across {m} prompts, the outputs of {b!r} are within what chance produces against {a!r} "
               f"(p {shown}, α = {request.alpha:g}): no change is declared (which is not proof of none).")
    splits = "every joint split" if test.exact else f"{test.n_resamples:,} random re-splits"
    meaning = (f"p is the share of {splits} of each prompt's own outputs (never mixing prompts) whose mean "
               f"{label} is at least the observed one.")
    flagged = int(test.changed.sum())
    where = (f"{flagged} of {m} prompts are flagged changed on their own (Benjamini–Hochberg q ≤ {test.fdr:g}: "
             f"at most about {format_percent(test.fdr)} of flagged prompts would be false alarms)." if flagged else
             f"No single prompt is flagged on its own (q ≤ {test.fdr:g}); with few outputs per prompt the "
             "combined test sees what no single prompt can.")
    readings = [verdict, meaning, read_effect(test.effect_size, test.standardized_effect), where]
    if result.left_out:
        readings.append(f"{len(result.left_out)} prompt(s) left out: fewer than 2 outputs in an arm.")
    return readings


def compare_record(result: CompareResult) -> dict:
    """The JSON record: top-level ``pvalue``, ``statistic`` and a ``per_prompt`` list, the settings, the version."""
    from .. import __version__

    test, request = result.test, result.request
    return {
        "tool": "dbpa-explorer", "version": __version__, "kind": "compare",
        "pvalue": test.pvalue, "statistic": test.statistic, "effect_size": test.effect_size,
        "standardized_effect": test.standardized_effect, "change_detected": result.change,
        "n_prompts": test.n_prompts, "n_resamples": test.n_resamples, "exact": test.exact,
        "arms": list(result.arms), "per_prompt": compare_table(result),
        "left_out": list(result.left_out), "skipped_rows": result.log.skipped, "notes": list(result.log.notes),
        "warnings": list(test.warnings), "readings": compare_readings(result),
        "settings": {"files": list(request.paths), "from": request.fmt, "similarity": test.similarity,
                     "discrepancy": test.discrepancy, "n_resamples": request.n_resamples, "seed": request.seed,
                     "alpha": request.alpha, "fdr": request.fdr, "embedder": request.embedder,
                     "combined": "mean of the prompts' ω weighted by their across-arm pairs k0·k1",
                     "resampling": "within each prompt"},
    }
