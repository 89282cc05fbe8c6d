"""The RUT paper's experiments (Zhu et al., ICLR 2026, §5, Table 2a, Fig 2) on recorded SmolLM2 answers.

Not the paper's models: the paper audits Gemma-2-9b-it, Llama and Mistral
(and their 4-/8-bit quantizations, jailbreak system prompts, harmful
fine-tunes); we audit the packaged SmolLM2-135M-Instruct against its own
requantizations and jailbreak-style system prompts
(:mod:`dbpa_core.rut.experiment`), with the paper's protocol: 100 prompts per
audit, one target answer per prompt, m = 100 reference answers, temperature
0.5, 30 new tokens, α = 0.05, 500 Monte Carlo audits per substitution share
q ∈ {0, 0.1, …, 1}, power AUC over q, for RUT, the Hamming-kernel MMD and KS
(:mod:`dbpa_core.rut.power`).  Everything runs from the recorded pools
(:mod:`dbpa_core.rut.pools`); nothing samples a model.

The paper's printed values (:data:`PRINTED_TABLE_2A`) are its models', kept
apart and labelled "paper (printed)"; they are what the shapes of our results
can be compared with, not numbers ours should equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import check_positive_int
from ..rut.pools import RUTPools, load_rut_pools
from ..rut.power import DrawnAudit, power_study, recorded_audit, score_selection
from ..rut.uniformity import RUTResult
from .embeddings import Progress

#: Where the printed values come from.
#: (Transcribed from the paper's excerpt the project was given, ../shared/papers/rut-iclr2026-summary.txt: a path of
#: the developers' machine, not one a reader of the page or an export can open, so it is not in the text.)
PAPER_SOURCE = "Zhu et al., ICLR 2026 (arXiv:2506.06975), Table 2a: power AUC for quantization detection, as printed"


@dataclass(frozen=True)
class PrintedRow:
    """One row of the paper's Table 2a as printed (the paper's models, not ours).

    ``approximate``: the excerpt prints "~0.05 (Fail)" / "~0.00" for the 8-bit rows.
    """

    model: str
    substitute: str
    rut: float
    mmd: float
    ks: float
    approximate: bool = False
    source: str = PAPER_SOURCE


PRINTED_TABLE_2A = (
    PrintedRow("Gemma-2-9b-it", "4-bit", 0.392, 0.214, 0.017),
    PrintedRow("Llama", "4-bit", 0.642, 0.625, 0.474),
    PrintedRow("Mistral", "4-bit", 0.586, 0.500, 0.330),
    PrintedRow("Gemma / Mistral", "8-bit", 0.05, 0.05, 0.00, approximate=True),
)

#: The paper's §5 conclusions our findings are read against (same source).
PAPER_CONCLUSIONS = (
    "§5.2 quantization: RUT has the highest power AUC in 4 of 6 settings; every method nearly fails "
    "(power ≈ 0) on the 8-bit Gemma and Mistral.",
    "§5.3 jailbreak system prompts: RUT has the highest power in 6 of 6 settings, every RUT power AUC > 0.75 "
    "(generally > 0.85): jailbreaks are the easiest to catch, high-bit quantization the hardest.",
    "KS on the same log-rank ranks follows the same trend with clearly lower power than Cramér–von Mises.",
)

#: The audit the page opens on: a share of its answers served by this substitute.
DEFAULT_AUDIT = {"substitute": "smollm2-q2_k", "q": 0.5}


@dataclass(frozen=True, eq=False)
class DefaultAudit:
    """One audit drawn from the pools, tested, with the share bound beside the true share."""

    substitute: str
    q: float
    audit: DrawnAudit = field(repr=False)
    result: RUTResult = field(repr=False)

    @property
    def n_substituted(self) -> int:
        return int(self.audit.substituted.sum())


@dataclass(frozen=True, eq=False)
class RUTStudy:
    """The experiments reproduced on SmolLM2: power curves, score selection, the default audit."""

    curves: dict = field(repr=False)  # substitute → PowerCurves
    selection: dict = field(repr=False)  # substitute → ScoreSelection
    arms: dict = field(repr=False)  # substitute → {"kind", "label"}
    default_audit: DefaultAudit = field(repr=False)
    settings: dict = field(repr=False)
    printed: tuple[PrintedRow, ...] = PRINTED_TABLE_2A
    conclusions: tuple[str, ...] = PAPER_CONCLUSIONS

    def winner(self, substitute: str) -> str:
        """The method with the highest power AUC against ``substitute`` (ties: the first of rut, mmd, ks)."""
        auc = self.curves[substitute].power_auc
        return max(auc, key=lambda method: (auc[method], -list(auc).index(method)))

    def clear_winner(self, substitute: str) -> str | None:
        """:meth:`winner` if it beats every other method by more than twice the paired Monte Carlo error, else None."""
        curves = self.curves[substitute]
        first = self.winner(substitute)
        for other in curves.power_auc:
            if other != first:
                difference, se = curves.auc_difference(first, other)
                if difference <= 2 * se:
                    return None
        return first


def rut_study(*, store=None, n_resamples: int = 1000, seed: int = 0, progress: Progress | None = None,
              n_trials: int = 500, pools: RUTPools | None = None) -> RUTStudy:
    """Power of RUT, MMD and KS against every recorded substitute, score selection, and the default audit.

    Parameters
    ----------
    store : SampleStore, optional
        Unused: the experiment reads only the recorded pools (accepted like every reproducer's).
    n_resamples : int
        Re-splits per MMD test.
    seed : int
        Seed of every draw (the audits, the ranks' tie-breaking, the MMD re-splits).
    progress : callable(stage, done, total), optional
    n_trials : int
        Monte Carlo audits per q (the paper: 500).
    pools : RUTPools, optional
        Default: the shipped recording.

    Returns
    -------
    RUTStudy
    """
    del store
    n_trials = check_positive_int(n_trials, "n_trials")
    pools = load_rut_pools() if pools is None else pools
    n_prompts, m = min(100, len(pools.prompts)), min(100, pools.reference.n_answers - 1)
    rng = np.random.default_rng(seed)

    def report(fraction):
        if progress is not None:
            progress("simulating audits", round(fraction * n_trials), n_trials)

    curves = power_study(pools, n_prompts=n_prompts, m=m, n_trials=n_trials, n_resamples=n_resamples, rng=rng,
                         progress=report)
    selection = score_selection(pools, n_prompts=min(10, len(pools.prompts)), n_trials=n_trials, rng=rng)
    name = DEFAULT_AUDIT["substitute"] if DEFAULT_AUDIT["substitute"] in pools.substitutes else next(
        iter(pools.substitutes))
    # Its own stream (recorded_audit): the same audit as the one-audit view's at these settings and seed.
    recorded = recorded_audit(pools, name, DEFAULT_AUDIT["q"], n_prompts=n_prompts, m=m, n_resamples=n_resamples,
                              seed=seed)
    default = DefaultAudit(name, DEFAULT_AUDIT["q"], recorded.audit, recorded.rut)
    arms = {s: {"kind": a.kind, "label": a.label} for s, a in pools.substitutes.items()}
    settings = {"n_prompts": n_prompts, "m": m, "n_trials": n_trials, "alpha": 0.05, "n_resamples": n_resamples,
                "seed": seed, "score": "log_rank", "q": [float(q) for q in next(iter(curves.values())).q],
                "score_selection": {"n_prompts": min(10, len(pools.prompts)), "n_trials": n_trials},
                "model": "SmolLM2-135M-Instruct Q4_1 (packaged) as the reference",
                "source": "assets/recorded/audits/rut_pools.npz (scripts/record_rut.py)",
                "prompts_recorded": len(pools.prompts),
                **{k: v for k, v in pools.meta.items() if k in ("protocol", "recording", "prompts")}}
    return RUTStudy(curves, selection, arms, default, settings)

