"""Figs 1–2's design (paper §4.2): every perturbation, control or target, tested against one original arm.

§4.2 defines p_i as "the permutation-test p-value comparing D_x and D_{x'_i}": one original arm D_x per
family of perturbations, shared by its controls (outputs should not change) and its targets (they should).
DBPA is asymmetric — P0 holds the similarities *within the original arm* only (Algorithm 1, line 2) — so a
control and a target tested against different originals are judged against different baselines, and an
original with a wider spread of answers makes every perturbation tested against it look smaller.  Here a
:class:`PerturbationSet` names the one original of its controls and targets, :func:`compare_sets` tests each of
them against that original on one similarity matrix, and :class:`ROCStudy` pools a model's p-values into
its ROC over α (Figs 1) and reads the best model at an allowed FPR (Fig 2), declaring none on a tie.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..audit.experiments import BestModel, best_model
from ..stats.permutation import dbpa_test_precomputed
from ..stats.roc import ROCResult, roc_analysis
from ..stats.similarity import embedding_similarity_matrix

#: The ``design`` every Figs 1–2 result reports: controls and targets share their original arm.
DESIGN = "shared_original"
#: The allowed false-positive rates of Fig 2's text ("for an allowed FPR of 1 % … of 5 %").
ALLOWED_FPRS = (0.01, 0.05)


@dataclass(frozen=True)
class PerturbationSet:
    """One original arm and the perturbations tested against it (keys of the arms' vectors)."""

    original: Hashable
    controls: tuple[Hashable, ...]
    targets: tuple[Hashable, ...]


@dataclass(frozen=True)
class Comparison:
    """One test: ``perturbed`` against ``original`` (the original arm gives P0), in replicate ``replicate``."""

    replicate: int
    original: Hashable
    perturbed: Hashable
    is_target: bool
    statistic: float
    pvalue: float


def compare_sets(vectors: Mapping, sets: Sequence[PerturbationSet], *, replicate: int = 0,
              discrepancy: str = "js_distance", n_resamples: int = 1000, seed: int = 0) -> list[Comparison]:
    """Test every perturbation of every set against the set's own original arm.

    Parameters
    ----------
    vectors : mapping of arm key -> ndarray of shape (k, dim)
        Unit-norm embeddings of each arm's outputs.
    sets : sequence of PerturbationSet
    replicate : int
        Recorded on each :class:`Comparison` (the seed of the responses).
    discrepancy, n_resamples : as in :func:`dbpa_core.dbpa_test`
    seed : int
        Every test draws its re-splits from ``default_rng(seed)``, so a p-value depends only on its two arms.

    Returns
    -------
    list of Comparison
        In the order of ``sets``; within a set, controls then targets.
    """
    # One cosine matrix of every arm the sets name; each test reads its two arms' block of it.
    keys = list(dict.fromkeys(a for family in sets for a in (family.original, *family.controls, *family.targets)))
    matrix = embedding_similarity_matrix(np.vstack([vectors[a] for a in keys]).astype(np.float64), "cosine")
    bounds = np.cumsum([0] + [len(vectors[a]) for a in keys])
    rows = {a: np.arange(bounds[i], bounds[i + 1]) for i, a in enumerate(keys)}
    comparisons = []
    for family in sets:
        original = rows[family.original]
        for arm in (*family.controls, *family.targets):
            index = np.concatenate([original, rows[arm]])
            test = dbpa_test_precomputed(matrix[np.ix_(index, index)], len(original), discrepancy=discrepancy,
                                         n_resamples=n_resamples, rng=np.random.default_rng(seed))
            comparisons.append(Comparison(replicate, family.original, arm, arm in family.targets, test.statistic,
                                          test.pvalue))
    return comparisons


@dataclass(frozen=True, eq=False)
class ModelROC:
    """One model of Figs 1–2: its comparisons, the ROC of each replicate and of all of them pooled.

    Attributes
    ----------
    key, label : str
        The model's name in the data and on screen.
    comparisons : tuple of Comparison
    rocs : tuple of ROCResult
        One per replicate (the paper reports mean ± sd over its 5 seeds, §4).
    pooled : ROCResult
        Every replicate's p-values together: TPR at an allowed FPR is read here, where the FPR has the finest
        steps (1 / number of controls).
    reported_pvalues : ndarray, optional
        The reference run's p-values of the same model, where its files have them.
    """

    key: str
    label: str
    comparisons: tuple[Comparison, ...] = field(repr=False)
    rocs: tuple[ROCResult, ...] = field(repr=False)
    pooled: ROCResult = field(repr=False)
    reported_pvalues: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def from_comparisons(cls, key: str, label: str, comparisons: Sequence[Comparison],
                         reported_pvalues=None) -> ModelROC:
        comparisons = tuple(comparisons)
        replicates = sorted({c.replicate for c in comparisons})

        def roc(chosen):
            return roc_analysis([c.pvalue for c in chosen], [c.is_target for c in chosen])

        rocs = tuple(roc([c for c in comparisons if c.replicate == r]) for r in replicates)
        return cls(key, label, comparisons, rocs, roc(comparisons),
                   None if reported_pvalues is None else np.asarray(reported_pvalues, dtype=float))

    @property
    def control_pvalues(self) -> np.ndarray:
        return np.array([c.pvalue for c in self.comparisons if not c.is_target])

    @property
    def target_pvalues(self) -> np.ndarray:
        return np.array([c.pvalue for c in self.comparisons if c.is_target])

    @property
    def aucs(self) -> np.ndarray:
        return np.array([roc.auc for roc in self.rocs])

    @property
    def auc_mean(self) -> float:
        return float(self.aucs.mean())

    @property
    def auc_sd(self) -> float:
        """Standard deviation over replicates (``np.std``, as the reference code's summaries)."""
        return float(self.aucs.std())

    def tpr_at_fpr(self, max_fpr: float) -> float:
        """Best pooled TPR whose FPR does not exceed ``max_fpr``."""
        return self.pooled.tpr_at_fpr(max_fpr)[0]


@dataclass(frozen=True, eq=False)
class ROCStudy:
    """Figs 1–2 on one setup: one :class:`ModelROC` per model, every comparison against a shared original.

    Attributes
    ----------
    setup : str
        ``"shipped_paraphrases"`` (the paper's responses) or ``"recorded_cvd"`` (local models, recorded here).
    models : tuple of ModelROC
    settings : dict
        What was tested and how (embedder, ω, B, seed, controls, targets, data source).
    design : str
        Always :data:`DESIGN`.
    """

    setup: str
    models: tuple[ModelROC, ...]
    settings: dict
    design: str = DESIGN

    def model(self, label: str) -> ModelROC:
        """The :class:`ModelROC` of a model by its label."""
        for model in self.models:
            if model.label == label:
                return model
        raise KeyError(f"no model {label!r}; known: {', '.join(m.label for m in self.models)}.")

    def best_at(self, max_fpr: float) -> BestModel:
        """The model with the highest pooled TPR at FPR ≤ ``max_fpr`` (Fig 2); none on a tie or at TPR 0."""
        return best_model({m.label: m.tpr_at_fpr(max_fpr) for m in self.models}, max_fpr)

    def best_depends_on_fpr(self, fprs: Sequence[float] = ALLOWED_FPRS) -> bool | None:
        """Whether the best model differs between the allowed FPRs (the paper's Fig 2 finding).

        None when fewer than two of them have a declared best (ties and TPR 0 decide nothing).
        """
        named = [self.best_at(f).model for f in fprs]
        named = [m for m in named if m is not None]
        return None if len(named) < 2 else len(set(named)) > 1

    @property
    def rocs(self) -> dict[str, ROCResult]:
        """Pooled ROC per model label (what the TPR/FPR page draws)."""
        return {m.label: m.pooled for m in self.models}
