"""The teaching views' derived results: an audit's evidence as it accumulates, and an arm against itself.

The home page shows how the test behaves, not only its answer: the result
on the first few outputs of each arm growing to all of them (the "stream"),
and the test of an arm's two halves (paper §2.2: one output per prompt cannot
tell sampling noise from an effect).  Both are computed here from a finished
result and its request, with the request's own settings and seed, so what
the page shows is the test the command line would run on those outputs.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .request import AuditRequest
from .results import Arm, PerturbationResult
from .runner import compare_arms


def stream_sizes(k: int) -> list[int]:
    """Arm sizes shown while streaming: a few outputs more per step, from 4 up to k."""
    step = max(2, k // 10)
    return sorted({n for n in range(4, k, step)} | {k}) if k > 4 else [k]


def streamed(result: PerturbationResult, request: AuditRequest, sizes=None) -> Iterator[PerturbationResult]:
    """The test of one perturbation on the first n outputs of each arm, for each n of ``sizes``.

    The first n outputs are exactly what drawing n would have given
    (:meth:`~dbpa_core.audit.results.Arm.head`), so each step is an honest
    smaller audit; the last step (n = k) is ``result``'s own test.
    """
    k = len(result.original.texts)
    for n in stream_sizes(k) if sizes is None else sizes:
        yield compare_arms(result.original.head(n), result.perturbed.head(n), label=result.label, kind=result.kind,
                           similarity=request.similarity, discrepancy=request.discrepancy,
                           n_resamples=request.n_resamples, rng=np.random.default_rng(request.seed),
                           true_effect=result.true_effect, perturbation_id=result.perturbation_id)


def self_comparison(arm: Arm, request: AuditRequest) -> PerturbationResult:
    """The test of an arm's first half against its second half: nothing changed, so any rejection is a
    false alarm (it happens with probability α)."""
    first, second = arm.halves()
    return compare_arms(first, second, label=f"{arm.label} vs {arm.label}", similarity=request.similarity,
                        discrepancy=request.discrepancy, n_resamples=request.n_resamples,
                        rng=np.random.default_rng(request.seed))
