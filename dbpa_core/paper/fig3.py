"""Fig 3 (paper §4.3): GPT-3.5's answers against seven open models', per seed, on the shipped responses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import check_probability
from ..stats.permutation import dbpa_test
from . import loaders as paper
from .embeddings import Progress, default_embedder, embed_groups, settings_iv


@dataclass(frozen=True, eq=False)
class AlignmentRow:
    """One open model against GPT-3.5 over the seeds, ours and the reference run's."""

    model: paper.PaperModel
    statistics: np.ndarray
    pvalues: np.ndarray
    reported_statistics: np.ndarray
    reported_pvalues: np.ndarray
    n_resamples: int

    @property
    def label(self) -> str:
        return self.model.label

    def n_significant(self, alpha: float = 0.05, *, reported: bool = False) -> int:
        alpha = check_probability(alpha, "alpha")
        return int(np.sum((self.reported_pvalues if reported else self.pvalues) <= alpha))

    def differs(self, alpha: float = 0.05, *, reported: bool = False) -> bool:
        """Significant at ``alpha`` in a majority of the seeds (each seed is an independent experiment)."""
        return self.n_significant(alpha, reported=reported) > len(self.pvalues) / 2


@dataclass(frozen=True, eq=False)
class AlignmentStudy:
    """Fig 3 reproduced: one :class:`AlignmentRow` per open model."""

    rows: tuple[AlignmentRow, ...]
    settings: dict

    def differing(self, alpha: float = 0.05, *, reported: bool = False) -> tuple[str, ...]:
        return tuple(r.label for r in self.rows if r.differs(alpha, reported=reported))


def alignment_study(*, seeds: Sequence[int] = paper.SEEDS, embedder=None, store=None, n_resamples: int = 1000,
                    seed: int = 0, discrepancy: str = "js_distance",
                    progress: Progress | None = None) -> AlignmentStudy:
    """Fig 3: GPT-3.5's answers (the reference) against each open model's, per seed (paper §4.3).

    Parameters are as in :func:`dbpa_core.paper.fig1.paraphrase_study`.

    Returns
    -------
    AlignmentStudy
    """
    n_resamples, seed = settings_iv(n_resamples, seed, discrepancy)
    embedder = default_embedder(embedder)
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("`seeds` must name at least one of the paper's seeds.")
    runs = {s: paper.load_alignment(s) for s in seeds}
    groups = {(s, "reference"): run.reference for s, run in runs.items()}
    groups.update({(s, key): texts for s, run in runs.items() for key, texts in run.models.items()})
    vectors = embed_groups(groups, embedder=embedder, store=store, progress=progress)
    rows = []
    for key, info in paper.ALIGNMENT_MODELS.items():
        tests = [dbpa_test(vectors[s, "reference"], vectors[s, key], discrepancy=discrepancy,
                           n_resamples=n_resamples, rng=np.random.default_rng(seed)) for s in seeds]
        reported = [paper.reported_alignment(s)[key] for s in seeds]
        rows.append(AlignmentRow(info, np.array([t.statistic for t in tests]), np.array([t.pvalue for t in tests]),
                                 np.array([r.statistic for r in reported]), np.array([r.pvalue for r in reported]),
                                 n_resamples))
    settings = {"embedder": embedder.key, "similarity": "cosine", "discrepancy": discrepancy,
                "n_resamples": n_resamples, "seed": seed, "seeds": list(seeds), "reference": "GPT-3.5 (base)",
                "source": "assets/paper (Hypo-Test c586dfe, exps/SFLLM/4.3-Table3)"}
    return AlignmentStudy(tuple(rows), settings)
