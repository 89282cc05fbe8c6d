"""Table 2 (paper §4.1): each persona's GPT responses against the doctor baseline.

Rauba, Wei & van der Schaar, "Quantifying perturbation impacts for large
language models" (ICML 2025), on the responses shipped in ``assets/paper/``
(:mod:`dbpa_core.paper.loaders`), embedded with the packaged MiniLM
(:mod:`dbpa_core.paper.embeddings`).  ω is the JS distance, the number the
reference code reported (``scipy.spatial.distance.jensenshannon`` of 30-bin
histograms, natural log); the table also gives the JSD in bits (the app's
default ω): with the same histograms JSD_bits = distance² / ln 2, a monotone
function, so both have the same permutation p-value.  Every test draws its
re-splits from ``default_rng(seed)`` (as
:func:`~dbpa_core.audit.runner.compare_family` does), so a number depends only
on its own arms and the settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_probability
from ..stats.permutation import DBPAResult, dbpa_test
from . import loaders as paper
from .embeddings import Progress, default_embedder, embed_groups, settings_iv


@dataclass(frozen=True, eq=False)
class PersonaRow:
    """One persona of Table 2: our test against the doctor baseline and the reported value.

    ``statistic`` is the JS distance (the paper's ω), ``jsd_bits`` the same
    comparison as a JS divergence in bits; ``reported_*`` come from the
    reference run (``cvd_guidelines_results.json``).
    """

    persona: str
    kind: str  # "control" (medical) or "target"
    statistic: float
    jsd_bits: float
    pvalue: float
    reported_statistic: float
    reported_pvalue: float
    test: DBPAResult = field(repr=False)
    note: str = ""


@dataclass(frozen=True, eq=False)
class PersonaTable:
    """Table 2 reproduced: :attr:`rows` in the paper's persona order."""

    rows: tuple[PersonaRow, ...]
    settings: dict

    def significant(self, alpha: float = 0.05, *, reported: bool = False) -> tuple[str, ...]:
        """Personas with p < ``alpha`` (the paper's stars are strict), ours or the reported ones."""
        alpha = check_probability(alpha, "alpha")
        return tuple(r.persona for r in self.rows if (r.reported_pvalue if reported else r.pvalue) < alpha)


def persona_table(*, embedder=None, store=None, n_resamples: int = 1000, seed: int = 0,
                  progress: Progress | None = None) -> PersonaTable:
    """Table 2: each persona's GPT responses against the doctor baseline (paper §4.1).

    The reference code drew a separate doctor baseline; only one doctor arm
    was kept, so the doctor row compares two random halves of it (10 vs 10,
    split by ``default_rng(seed)``): a check of the test's calibration on
    real responses, not the paper's exact comparison.

    Parameters
    ----------
    embedder : Embedder, optional
        Default: the packaged MiniLM.
    store : SampleStore, optional
        Caches the embeddings.
    n_resamples : int
        Permutations B per test.
    seed : int
        Seed of every test's re-splits (and of the doctor halves).
    progress : callable(stage, done, total), optional

    Returns
    -------
    PersonaTable
    """
    n_resamples, seed = settings_iv(n_resamples, seed)
    embedder = default_embedder(embedder)
    arms = paper.load_personas()
    reported = paper.reported_personas()
    vectors = embed_groups(arms, embedder=embedder, store=store, progress=progress)
    baseline = vectors[paper.BASELINE_PERSONA]
    rows = []
    for persona in paper.PERSONAS:
        note = ""
        if persona == paper.BASELINE_PERSONA:
            order = np.random.default_rng(seed).permutation(len(baseline))
            half = len(order) // 2
            x, y = baseline[order[:half]], baseline[order[half:]]
            note = "two random halves of the doctor arm (10 vs 10): the baseline's own repeat"
        else:
            x, y = baseline, vectors[persona]
        test = dbpa_test(x, y, discrepancy="js_distance", n_resamples=n_resamples, rng=np.random.default_rng(seed))
        rows.append(PersonaRow(persona, "control" if persona in paper.MEDICAL_PERSONAS else "target",
                               test.statistic, test.statistic**2 / math.log(2), test.pvalue,
                               reported[persona].statistic, reported[persona].pvalue, test, note))
    settings = {"embedder": embedder.key, "similarity": "cosine",
                "discrepancy": "js_distance (30 bins, natural log); jsd_bits = statistic² / ln 2",
                "n_resamples": n_resamples, "seed": seed, "baseline": "Act as a doctor. ",
                "source": "assets/paper (Hypo-Test c586dfe, exps/SFLLM/4.1-Figure3)"}
    return PersonaTable(tuple(rows), settings)
