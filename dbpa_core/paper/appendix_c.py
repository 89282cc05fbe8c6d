"""Appendix C.2 (choices of ω), C.4 (choices of similarity) and C.3 (embedding cost) on the persona data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import check_positive_int
from ..stats.permutation import dbpa_test
from . import loaders as paper
from .embeddings import Progress, default_embedder, embed_groups, settings_iv


#: Appendix C.2's ω choices: (label, similarity, discrepancy).
OMEGA_CHOICES = (
    ("JSD (bits)", "cosine", "jsd"), ("JS distance", "cosine", "js_distance"),
    ("energy, cosine", "cosine", "energy"), ("energy, L1", "neg_l1", "energy"), ("energy, L2", "neg_l2", "energy"),
    ("Wasserstein", "cosine", "wasserstein"), ("KS", "cosine", "ks"), ("MMD (RBF)", "cosine", "mmd"),
)
#: Appendix C.4's similarities, each with the JSD: (label, similarity, discrepancy).
SIMILARITY_CHOICES = (("cosine", "cosine", "jsd"), ("BLEU", "bleu", "jsd"), ("ROUGE-L", "rouge_l", "jsd"))


@dataclass(frozen=True, eq=False)
class ChoiceGrid:
    """Personas × choices of one appendix table: ``statistics[i, j]``, ``pvalues[i, j]``."""

    experiment: str
    personas: tuple[str, ...]
    choices: tuple[str, ...]
    statistics: np.ndarray
    pvalues: np.ndarray
    settings: dict


def _choice_grid(experiment: str, choices, *, embedder, store, n_resamples, seed, progress, **settings) -> ChoiceGrid:
    """Every non-baseline persona against the doctor under each (label, similarity, discrepancy) choice."""
    from ..stats.similarity import TEXT_SIMILARITIES

    n_resamples, seed = settings_iv(n_resamples, seed)
    embedder = default_embedder(embedder)
    arms = paper.load_personas()
    vectors = embed_groups(arms, embedder=embedder, store=store, progress=progress)
    personas = tuple(p for p in paper.PERSONAS if p != paper.BASELINE_PERSONA)

    def data(persona, similarity):
        # text similarities compare the answers' words, the others their embeddings
        return list(arms[persona]) if similarity in TEXT_SIMILARITIES else vectors[persona]

    tests = [[dbpa_test(data(paper.BASELINE_PERSONA, similarity), data(persona, similarity), similarity=similarity,
                        discrepancy=omega, n_resamples=n_resamples, rng=np.random.default_rng(seed))
              for _, similarity, omega in choices] for persona in personas]
    return ChoiceGrid(experiment, personas, tuple(label for label, _, _ in choices),
                      np.array([[t.statistic for t in row] for row in tests]),
                      np.array([[t.pvalue for t in row] for row in tests]),
                      {"embedder": embedder.key, "n_resamples": n_resamples, "seed": seed,
                       "baseline": "Act as a doctor. ", **settings})


def omega_choices(*, embedder=None, store=None, n_resamples: int = 1000, seed: int = 0,
                  progress: Progress | None = None) -> ChoiceGrid:
    """Appendix C.2: the persona tests under each ω of :data:`OMEGA_CHOICES`, side by side."""
    return _choice_grid("C.2", OMEGA_CHOICES, embedder=embedder, store=store, n_resamples=n_resamples, seed=seed,
                        progress=progress)


def similarity_choices(*, embedder=None, store=None, n_resamples: int = 1000, seed: int = 0,
                       progress: Progress | None = None) -> ChoiceGrid:
    """Appendix C.4: the persona tests with cosine (MiniLM), BLEU and ROUGE-L similarities, ω = JSD."""
    return _choice_grid("C.4", SIMILARITY_CHOICES, embedder=embedder, store=store, n_resamples=n_resamples,
                        seed=seed, progress=progress, discrepancy="jsd")


@dataclass(frozen=True)
class CostRow:
    """Embedding cost of a persona study of ``arms`` arms with ``k`` responses each."""

    embedder: str
    k: int
    arms: int
    tokens: int
    dollars: float


def embedding_costs(ks: Sequence[int] = (20, 50, 100, 500, 1000), *, arms: int = len(paper.PERSONAS)
                    ) -> tuple[CostRow, ...]:
    """Appendix C.3: embedding cost as k grows, priced from ``assets/pricing.yaml``.

    Tokens per response are the mean of the shipped persona responses
    (≈ 4 characters per token, :func:`dbpa_core.audit.costs.estimate_tokens`);
    the cost is linear in k × arms.
    """
    from ..audit.costs import estimate_tokens, prices

    ks = [check_positive_int(k, "ks") for k in ks]
    arms = check_positive_int(arms, "arms")
    responses = [t for texts in paper.load_personas().values() for t in texts]
    per_response = sum(estimate_tokens(t) for t in responses) / len(responses)
    rows = []
    for name, per_million in prices()["embedding"].items():
        for k in ks:
            tokens = round(per_response * k * arms)
            rows.append(CostRow(name, k, arms, tokens, tokens * float(per_million) / 1e6))
    return tuple(rows)


@dataclass(frozen=True, eq=False)
class AppendixResult:
    """Appendix C.2, C.4 and C.3 on the persona data."""

    omega: ChoiceGrid
    similarity: ChoiceGrid
    costs: tuple[CostRow, ...]


def appendix(*, embedder=None, store=None, n_resamples: int = 1000, seed: int = 0,
             progress: Progress | None = None) -> AppendixResult:
    """Appendix C.2, C.4 and C.3 together (the persona arms are embedded once)."""
    shared = {"embedder": default_embedder(embedder), "store": store, "n_resamples": n_resamples, "seed": seed,
              "progress": progress}
    return AppendixResult(omega_choices(**shared), similarity_choices(**shared), embedding_costs())
