"""Appendix C.2 (choices of ω, Table 4), C.4 (text similarities, Table 6) and C.3 (embedding cost, Table 5).

C.2 and C.4 re-run the persona tests of Table 2 (each persona's GPT answers against the doctor baseline, the
shipped responses) with the columns of the paper's tables; C.3 recomputes Table 5 from ``assets/pricing.yaml``
in its own form (perturbations × embedding models, US cents) and measures the token count it assumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import check_positive_int
from ..stats.permutation import dbpa_test
from . import loaders as paper
from .embeddings import Progress, default_embedder, embed_groups, settings_iv
from .printed import TABLE5, TABLE5_PRINTED_TOKENS_PER_PERTURBATION

#: Table 4's columns, in its order: (label, similarity, ω).  "Euclidean" and "Wasserstein" are not defined
#: by the paper: ours are the distance of the two similarity densities and W1 between P0 and P1.
OMEGA_CHOICES = (
    ("Energy (Cosine)", "cosine", "energy"), ("Euclidean", "cosine", "euclidean"),
    ("Wasserstein", "cosine", "wasserstein"), ("JSD", "cosine", "js_distance"),
    ("Energy (L1)", "neg_l1", "energy"), ("Energy (L2)", "neg_l2", "energy"),
)
#: Table 6's columns: the similarity replaced by a text metric, ω the JS distance (as Table 2's).
SIMILARITY_CHOICES = (("BLEU", "bleu", "js_distance"), ("ROUGE-1", "rouge_1", "js_distance"),
                      ("ROUGE-2", "rouge_2", "js_distance"), ("ROUGE-L", "rouge_l", "js_distance"))


@dataclass(frozen=True, eq=False)
class ChoiceGrid:
    """Personas × choices of one appendix table: ``statistics[i, j]``, ``pvalues[i, j]``.

    ``table`` is the paper's table it reproduces ("Table 4", "Table 6").
    """

    experiment: str
    table: str
    personas: tuple[str, ...]
    choices: tuple[str, ...]
    statistics: np.ndarray
    pvalues: np.ndarray
    settings: dict


def _choice_grid(experiment: str, table: str, choices, *, embedder, store, n_resamples, seed, progress,
                 **settings) -> ChoiceGrid:
    """Every persona against the doctor under each (label, similarity, discrepancy) choice.

    The doctor row compares two random halves of the doctor arm (as Table 2's: the separately drawn doctor
    baseline of the reference run was not kept).
    """
    from ..stats.similarity import TEXT_SIMILARITIES

    n_resamples, seed = settings_iv(n_resamples, seed)
    embedder = default_embedder(embedder)
    arms = paper.load_personas()
    vectors = embed_groups(arms, embedder=embedder, store=store, progress=progress)
    order = np.random.default_rng(seed).permutation(paper.ARM_SIZE)
    halves = order[: paper.ARM_SIZE // 2], order[paper.ARM_SIZE // 2:]

    def data(persona, similarity):
        # text similarities compare the answers' words, the others their embeddings
        return list(arms[persona]) if similarity in TEXT_SIMILARITIES else vectors[persona]

    def arms_of(persona, similarity):
        baseline = data(paper.BASELINE_PERSONA, similarity)
        if persona != paper.BASELINE_PERSONA:
            return baseline, data(persona, similarity)
        pick = (lambda rows: [baseline[i] for i in rows]) if isinstance(baseline, list) else baseline.__getitem__
        return pick(halves[0]), pick(halves[1])

    tests = [[dbpa_test(*arms_of(persona, similarity), similarity=similarity, discrepancy=omega,
                        n_resamples=n_resamples, rng=np.random.default_rng(seed))
              for _, similarity, omega in choices] for persona in paper.PERSONAS]
    return ChoiceGrid(experiment, table, paper.PERSONAS, tuple(label for label, _, _ in choices),
                      np.array([[t.statistic for t in row] for row in tests]),
                      np.array([[t.pvalue for t in row] for row in tests]),
                      {"embedder": embedder.key, "n_resamples": n_resamples, "seed": seed,
                       "baseline": "Act as a doctor. (the doctor row: two random halves of it, 10 vs 10)",
                       "choices": {label: f"similarity {s}, ω {o}" for label, s, o in choices}, **settings})


def omega_choices(*, embedder=None, store=None, n_resamples: int = 1000, seed: int = 0,
                  progress: Progress | None = None) -> ChoiceGrid:
    """Appendix C.2 (Table 4): the persona tests under each ω of :data:`OMEGA_CHOICES`, side by side."""
    return _choice_grid("C.2", "Table 4", OMEGA_CHOICES, embedder=embedder, store=store, n_resamples=n_resamples,
                        seed=seed, progress=progress)


def similarity_choices(*, embedder=None, store=None, n_resamples: int = 1000, seed: int = 0,
                       progress: Progress | None = None) -> ChoiceGrid:
    """Appendix C.4 (Table 6): the persona tests with BLEU, ROUGE-1, ROUGE-2, ROUGE-L as the similarity."""
    return _choice_grid("C.4", "Table 6", SIMILARITY_CHOICES, embedder=embedder, store=store,
                        n_resamples=n_resamples, seed=seed, progress=progress)


@dataclass(frozen=True)
class CostRow:
    """One row of Table 5: embedding ``tokens`` for ``perturbations`` perturbations, per model in US cents."""

    perturbations: int
    tokens: int
    cents: dict


@dataclass(frozen=True, eq=False)
class CostTable:
    """Table 5 recomputed in its form, and the token count it assumes set beside the measured one.

    Attributes
    ----------
    rows : tuple of CostRow
        tokens = :attr:`tokens_per_perturbation` × perturbations, priced from ``assets/pricing.yaml``.
    tokens_per_perturbation : int
        2 000 by default: what Table 5's "Total Tokens" column uses (its text says 200).
    models : tuple of str
        The three OpenAI embedding models of the table.
    tokens_per_answer : float
        Mean tokens of a shipped persona answer (≈ 4 characters per token).
    k : int
        Answers per arm of the paper's runs (20).
    """

    rows: tuple[CostRow, ...]
    tokens_per_perturbation: int
    models: tuple[str, ...]
    tokens_per_answer: float
    k: int

    @property
    def measured_tokens_per_perturbation(self) -> float:
        """What one perturbation embeds: its k answers (the original arm's are shared by the family)."""
        return self.k * self.tokens_per_answer

    def undercount(self, tokens_per_perturbation: int) -> float:
        """How many times more tokens a perturbation embeds than ``tokens_per_perturbation`` assumes."""
        return self.measured_tokens_per_perturbation / tokens_per_perturbation


def embedding_costs(perturbations: Sequence[int] | None = None, *,
                    tokens_per_perturbation: int = TABLE5_PRINTED_TOKENS_PER_PERTURBATION) -> CostTable:
    """Appendix C.3 (Table 5): embedding cost by number of perturbations, priced from ``assets/pricing.yaml``.

    Parameters
    ----------
    perturbations : sequence of int, optional
        Table 5's rows (default 100 … 50 000, as printed).
    tokens_per_perturbation : int
        Default 2 000, the count behind Table 5's "Total Tokens" column (100 perturbations → 200,000 tokens);
        the paper's text states 200 (:data:`~dbpa_core.paper.printed.TABLE5_STATED_TOKENS_PER_PERTURBATION`),
        which gives a tenth of every printed cost.

    Returns
    -------
    CostTable
    """
    from ..audit.costs import estimate_tokens, prices

    counts = [check_positive_int(n, "perturbations") for n in (perturbations or [int(r) for r in TABLE5.rows])]
    tokens_per_perturbation = check_positive_int(tokens_per_perturbation, "tokens_per_perturbation")
    models = tuple(c for c in TABLE5.columns if c != "tokens")
    per_million = {m: float(prices()["embedding"][m]) for m in models}
    rows = tuple(CostRow(n, n * tokens_per_perturbation,
                         {m: n * tokens_per_perturbation * per_million[m] / 1e6 * 100 for m in models})
                 for n in counts)
    responses = [t for texts in paper.load_personas().values() for t in texts]
    per_answer = sum(estimate_tokens(t) for t in responses) / len(responses)
    return CostTable(rows, tokens_per_perturbation, models, per_answer, paper.ARM_SIZE)


@dataclass(frozen=True, eq=False)
class AppendixResult:
    """Appendix C.2, C.4 and C.3 on the persona data."""

    omega: ChoiceGrid
    similarity: ChoiceGrid
    costs: CostTable


def appendix(*, embedder=None, store=None, n_resamples: int = 1000, seed: int = 0,
             progress: Progress | None = None) -> AppendixResult:
    """Appendix C.2, C.4 and C.3 together (the persona arms are embedded once)."""
    shared = {"embedder": default_embedder(embedder), "store": store, "n_resamples": n_resamples, "seed": seed,
              "progress": progress}
    return AppendixResult(omega_choices(**shared), similarity_choices(**shared), embedding_costs())
