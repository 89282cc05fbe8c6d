"""Figs 1–2 (paper §4.2): TPR/FPR over α for controls vs targets, per model, on the shipped responses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from .._validation import check_probability
from ..audit.experiments import RatesComparison
from ..stats.permutation import dbpa_test_precomputed
from ..stats.roc import ROCResult, roc_analysis
from ..stats.similarity import embedding_similarity_matrix
from . import loaders as paper
from .embeddings import Progress, default_embedder, embed_groups, settings_iv


@dataclass(frozen=True, eq=False)
class ModelROC:
    """One model of Figs 1–2: per-seed ROC of controls vs targets, and all seeds pooled.

    Attributes
    ----------
    model : paper.PaperModel
    seeds : tuple of int
    rocs : tuple of ROCResult
        One per seed (28 controls, 8 targets each).
    pooled : ROCResult
        All seeds' p-values together; TPR at an allowed FPR is read here
        (with 28 controls per seed, an FPR of 1 % could not be resolved per seed).
    control_pvalues, target_pvalues : ndarray of shape (n_seeds, 28) and (n_seeds, 8)
    reported_pvalues : ndarray of shape (n_seeds, 8)
        The reference run's ``base`` vs paraphrase p-values (its targets; it
        ran no controls).
    """

    model: paper.PaperModel
    seeds: tuple[int, ...]
    rocs: tuple[ROCResult, ...]
    pooled: ROCResult
    control_pvalues: np.ndarray = field(repr=False)
    target_pvalues: np.ndarray = field(repr=False)
    reported_pvalues: np.ndarray = field(repr=False)

    @property
    def label(self) -> str:
        return self.model.label

    @property
    def aucs(self) -> np.ndarray:
        return np.array([roc.auc for roc in self.rocs])

    @property
    def auc_mean(self) -> float:
        return float(self.aucs.mean())

    @property
    def auc_sd(self) -> float:
        """Standard deviation over seeds (``np.std``, as the reference code's summaries)."""
        return float(self.aucs.std())

    def tpr_at_fpr(self, max_fpr: float) -> float:
        """Best TPR of the pooled ROC whose FPR does not exceed ``max_fpr``."""
        return self.pooled.tpr_at_fpr(max_fpr)[0]

    def target_rejection_rate(self, alpha: float = 0.05, *, reported: bool = False) -> float:
        """Share of ``base`` vs paraphrase tests with p < ``alpha`` (the reference run's "rejection rate")."""
        alpha = check_probability(alpha, "alpha")
        return float(np.mean((self.reported_pvalues if reported else self.target_pvalues) < alpha))


@dataclass(frozen=True, eq=False)
class ROCStudy:
    """Figs 1–2 reproduced: one :class:`ModelROC` per model."""

    models: tuple[ModelROC, ...]
    settings: dict

    @property
    def comparison(self) -> RatesComparison:
        """The pooled ROCs as a :class:`~dbpa_core.audit.experiments.RatesComparison`, what the TPR/FPR
        page shows (``summary(max_fpr)``, ``best_model_at(max_fpr)``)."""
        return RatesComparison(tuple(m.label for m in self.models), {m.label: m.pooled for m in self.models})

    def best_model_at(self, max_fpr: float) -> str:
        """The model with the highest pooled TPR at FPR ≤ ``max_fpr`` (ties: larger AUC, then earlier)."""
        return self.comparison.best_model_at(max_fpr)

    def model(self, label: str) -> ModelROC:
        """The :class:`ModelROC` of a model by its label."""
        for model in self.models:
            if model.label == label:
                return model
        raise KeyError(f"no model {label!r}; known: {', '.join(m.label for m in self.models)}.")

    def best_depends_on_fpr(self, fprs: Sequence[float] = (0.01, 0.05)) -> bool | None:
        """Whether the best model changes between the allowed FPRs (the paper's finding).

        Only allowed FPRs at which some model flags a target count (a "best" with TPR 0 is a tie
        broken by AUC, not a finding); None when fewer than two such FPRs remain.
        """
        decided = {self.best_model_at(f) for f in fprs if self.model(self.best_model_at(f)).tpr_at_fpr(f) > 0}
        counted = sum(self.model(self.best_model_at(f)).tpr_at_fpr(f) > 0 for f in fprs)
        return None if counted < 2 else len(decided) > 1


CONTROL_PAIRS = tuple(combinations(range(len(paper.PARAPHRASE_PROMPTS)), 2))


def roc_study(models: Sequence[str] | None = None, *, seeds: Sequence[int] = paper.SEEDS, embedder=None, store=None,
              n_resamples: int = 1000, seed: int = 0, discrepancy: str = "js_distance",
              progress: Progress | None = None) -> ROCStudy:
    """Figs 1–2: TPR/FPR over α for controls vs targets, per model (paper §4.2).

    Controls are the 28 pairs of paraphrases of the same question (a change
    of wording only); targets are ``base`` (another, randomly drawn patient)
    against each of the 8 paraphrases (a content change).  Each seed gives
    28 control and 8 target p-values.

    Parameters
    ----------
    models : sequence of str, optional
        Keys of :data:`dbpa_core.paper.loaders.PARAPHRASE_MODELS` (default all 9).
    seeds : sequence of int
        Subset of :data:`dbpa_core.paper.loaders.SEEDS`.
    embedder, store, n_resamples, seed, progress
        As in :func:`persona_table`.
    discrepancy : str
        ω (default the JS distance, as the paper).

    Returns
    -------
    ROCStudy
    """
    n_resamples, seed = settings_iv(n_resamples, seed, discrepancy)
    embedder = default_embedder(embedder)
    models = list(paper.PARAPHRASE_MODELS) if models is None else list(models)
    if not models:
        raise ValueError("`models` must name at least one model.")
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("`seeds` must name at least one of the paper's seeds.")
    runs = {(m, s): paper.load_paraphrases(m, s) for m in models for s in seeds}
    vectors = embed_groups({key: run.base + sum(run.paraphrases, ()) for key, run in runs.items()},
                           embedder=embedder, store=store, progress=progress)
    results, total, done = [], len(runs) * (len(CONTROL_PAIRS) + len(paper.PARAPHRASE_PROMPTS)), 0
    for model in models:
        rocs, controls, targets, reported = [], [], [], []
        for s in seeds:
            # One similarity matrix per run: arm a is rows [20a, 20a + 20); arm 0 is base.
            matrix = embedding_similarity_matrix(vectors[model, s].astype(np.float64), "cosine")
            rows = [np.arange(a * paper.ARM_SIZE, (a + 1) * paper.ARM_SIZE) for a in range(9)]

            def pvalue(a, b):
                index = np.concatenate([rows[a], rows[b]])
                return dbpa_test_precomputed(matrix[np.ix_(index, index)], paper.ARM_SIZE, discrepancy=discrepancy,
                                             n_resamples=n_resamples, rng=np.random.default_rng(seed)).pvalue

            control = [pvalue(i + 1, j + 1) for i, j in CONTROL_PAIRS]
            target = [pvalue(0, i + 1) for i in range(len(paper.PARAPHRASE_PROMPTS))]
            done += len(control) + len(target)
            if progress:
                progress("testing controls and targets", done, total)
            rocs.append(roc_analysis(control + target, [False] * len(control) + [True] * len(target)))
            controls.append(control)
            targets.append(target)
            reference = paper.reported_paraphrases(model, s)
            reported.append([reference[str(i)].pvalue for i in range(len(paper.PARAPHRASE_PROMPTS))])
        controls, targets = np.array(controls), np.array(targets)
        pooled = roc_analysis(np.concatenate([controls.ravel(), targets.ravel()]),
                              [False] * controls.size + [True] * targets.size)
        results.append(ModelROC(paper.PARAPHRASE_MODELS[model], seeds, tuple(rocs), pooled, controls, targets,
                                np.array(reported)))
    settings = {"embedder": embedder.key, "similarity": "cosine", "discrepancy": discrepancy,
                "n_resamples": n_resamples, "seed": seed, "seeds": list(seeds),
                "controls": "paraphrase i vs paraphrase j of the same patient (28 pairs per seed)",
                "targets": "base (randomly drawn patient) vs each paraphrase (8 per seed)",
                "source": "assets/paper (Hypo-Test c586dfe, exps/SFLLM/4.2-Table2)"}
    return ROCStudy(tuple(results), settings)
