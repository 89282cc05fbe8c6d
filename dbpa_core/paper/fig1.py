"""Figs 1–2 (paper §4.2): TPR/FPR over α of controls vs targets per model, in §4.2's shared-original design.

Two setups, each reported with ``design = "shared_original"`` (:mod:`dbpa_core.paper.design`):

* **shipped paraphrases** — the paper's own responses (9 models × 5 seeds, :mod:`dbpa_core.paper.loaders`).
  Each of the eight paraphrases k of the fixed patient is in turn the original; the other seven paraphrases
  are its controls (a change of wording only) and ``base`` is its target.  Per model and seed: 8 sets of
  7 controls and 1 target; pooled over k and seeds, 280 controls and 40 targets per model.
  *Confound:* ``base`` describes another, randomly drawn patient **and** is a structured prompt ("John has
  these features: Age: …") where the paraphrases are free text, so a target's effect mixes a change of
  patient with a change of prompt format.
* **recorded cvd_nice** — local models' answers to the cvd_nice patient with 8 controls and 8 targets
  justified against QRISK3/NICE thresholds (:mod:`dbpa_core.paper.cvd_roc`), the paper's own setup.

:func:`figs_1_2` runs both; :func:`paraphrase_study` the first alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import loaders as paper
from .design import ROCStudy, ModelROC, PerturbationSet, compare_sets
from .embeddings import Progress, default_embedder, embed_groups, settings_iv

#: The paraphrase setup's confound, stated wherever its result is shown.
PARAPHRASE_CONFOUND = ("base describes another, randomly drawn patient and is a structured prompt ('John has "
                       "these features: Age: …') where the paraphrases are free text: a target's effect mixes a "
                       "change of patient with a change of prompt format")


def paraphrase_sets() -> tuple[PerturbationSet, ...]:
    """Each paraphrase k as the original, the other seven as its controls, ``base`` as its target."""
    n = len(paper.PARAPHRASE_PROMPTS)
    return tuple(PerturbationSet(k, tuple(j for j in range(n) if j != k), ("base",)) for k in range(n))


def _models_and_seeds(models, seeds):
    models = list(paper.PARAPHRASE_MODELS) if models is None else list(models)
    if not models:
        raise ValueError("`models` must name at least one model.")
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("`seeds` must name at least one of the paper's seeds.")
    return models, seeds


def paraphrase_study(models: Sequence[str] | None = None, *, seeds: Sequence[int] = paper.SEEDS, embedder=None,
                     store=None, n_resamples: int = 1000, seed: int = 0, discrepancy: str = "js_distance",
                     progress: Progress | None = None) -> ROCStudy:
    """Figs 1–2 on the paper's shipped paraphrase responses, in the shared-original design.

    Parameters
    ----------
    models : sequence of str, optional
        Keys of :data:`dbpa_core.paper.loaders.PARAPHRASE_MODELS` (default all 9).
    seeds : sequence of int
        Subset of :data:`dbpa_core.paper.loaders.SEEDS`.
    embedder, store, n_resamples, seed, progress
        As in :func:`dbpa_core.paper.table2.persona_table`.
    discrepancy : str
        ω (default the JS distance, as the paper).

    Returns
    -------
    ROCStudy
        ``setup = "shipped_paraphrases"``; each model's ``reported_pvalues`` are the reference run's
        ``base`` vs paraphrase p-values (its only tests: it ran no controls).
    """
    n_resamples, seed = settings_iv(n_resamples, seed, discrepancy)
    embedder = default_embedder(embedder)
    models, seeds = _models_and_seeds(models, seeds)
    runs = {(m, s): paper.load_paraphrases(m, s) for m in models for s in seeds}
    groups = {(m, s, "base"): run.base for (m, s), run in runs.items()}
    groups.update({(m, s, k): texts for (m, s), run in runs.items() for k, texts in enumerate(run.paraphrases)})
    vectors = embed_groups(groups, embedder=embedder, store=store, progress=progress)
    sets = paraphrase_sets()
    results, done, total = [], 0, len(runs)
    for model in models:
        comparisons, reported = [], []
        for s in seeds:
            arms = {arm: vectors[m, t, arm] for (m, t, arm) in vectors if (m, t) == (model, s)}
            comparisons += compare_sets(arms, sets, replicate=s, discrepancy=discrepancy, n_resamples=n_resamples,
                                        seed=seed)
            reference = paper.reported_paraphrases(model, s)
            reported += [reference[str(k)].pvalue for k in range(len(paper.PARAPHRASE_PROMPTS))]
            done += 1
            if progress:
                progress("testing controls and targets", done, total)
        info = paper.PARAPHRASE_MODELS[model]
        results.append(ModelROC.from_comparisons(info.key, info.label, comparisons, reported))
    settings = {"embedder": embedder.key, "similarity": "cosine", "discrepancy": discrepancy,
                "n_resamples": n_resamples, "seed": seed, "seeds": list(seeds),
                "originals": "each paraphrase k of the fixed patient in turn (8 per seed)",
                "controls": "the other 7 paraphrases, each tested against paraphrase k",
                "targets": "base (another patient, structured prompt) tested against paraphrase k",
                "confound": PARAPHRASE_CONFOUND,
                "replicates": "GPT-3.5's paraphrase answers are identical in all 5 seeds (only base is new): its "
                              "seeds are not independent replicates",
                "source": "assets/paper (Hypo-Test c586dfe, exps/SFLLM/4.2-Table2)"}
    return ROCStudy("shipped_paraphrases", tuple(results), settings)


@dataclass(frozen=True, eq=False)
class Figs12:
    """Figs 1–2 on both setups: the paper's shipped paraphrases and the recorded cvd_nice design."""

    shipped: ROCStudy
    recorded: ROCStudy

    @property
    def studies(self) -> tuple[ROCStudy, ...]:
        return (self.shipped, self.recorded)


def figs_1_2(*, embedder=None, store=None, n_resamples: int = 1000, seed: int = 0,
             discrepancy: str = "js_distance", progress: Progress | None = None) -> Figs12:
    """Figs 1–2 on the shipped paraphrases and on the recorded cvd_nice answers (both shared-original)."""
    from .cvd_roc import cvd_study

    shared = {"embedder": default_embedder(embedder), "store": store, "n_resamples": n_resamples, "seed": seed,
              "discrepancy": discrepancy, "progress": progress}
    return Figs12(paraphrase_study(**shared), cvd_study(**shared))
