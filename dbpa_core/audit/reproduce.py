"""The paper's experiments on its own responses, beside the numbers its reference run reported.

Rauba, Wei & van der Schaar, "Quantifying perturbation impacts for large
language models" (ICML 2025), run on the responses shipped in
``assets/paper/`` (:mod:`dbpa_core.data.paper`), embedded with the packaged
MiniLM (its vectors of these responses ship in ``assets/paper/`` and are put
into the sample store on first use, :func:`load_shipped_embeddings`) and
tested with :mod:`dbpa_core.stats`:

=====================  =====================================================
:func:`persona_table`  Table 2 (§4.1): each persona against the doctor
                       baseline, ω and stars, the reported column beside.
:func:`roc_study`      Figs 1–2 (§4.2): controls (paraphrase vs paraphrase)
                       against targets (``base`` vs paraphrase), ROC per
                       model over 5 seeds, TPR at an allowed FPR.
:func:`alignment_study` Fig 3 (§4.3): GPT-3.5 against 7 open models, ω and p
                       over 5 seeds.
:func:`omega_choices`, :func:`similarity_choices`, :func:`embedding_costs`
                       Appendix C.2, C.4 and C.3 on the persona data.
=====================  =====================================================

ω is the JS distance by default, the number the reference code reported
(``scipy.spatial.distance.jensenshannon`` of 30-bin histograms, natural log);
Table 2 also gives the JSD in bits (the app's default ω): with the same
histograms JSD_bits = distance² / ln 2, a monotone function, so both have the
same permutation p-value.  Every test draws its re-splits from
``default_rng(seed)`` (as :func:`~dbpa_core.audit.runner.compare_family`
does), so a number depends only on its own arms and the settings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from .._validation import check_positive_int, check_probability
from ..data import paper
from ..data.store import text_hash
from ..embedders.base import unit_rows
from ..stats.permutation import DBPAResult, dbpa_test, dbpa_test_precomputed
from ..stats.roc import ROCResult, roc_analysis
from ..stats.similarity import embedding_similarity_matrix
from .experiments import RatesComparison

#: progress(stage, done, total), as :data:`dbpa_core.audit.runner.StageProgress`.
Progress = Callable[[str, int, int], object]
NOT_GIVEN = "not given in the shipped data"
EXPERIMENTS = ("table2", "fig1", "fig3", "appendix")


def _settings_iv(n_resamples, seed, discrepancy="js_distance"):
    from ..stats.discrepancy import get_discrepancy

    get_discrepancy(discrepancy)  # raises naming `discrepancy`
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    seed = check_positive_int(seed, "seed", minimum=0)
    return n_resamples, seed


def _embedder(embedder):
    if embedder is not None:
        return embedder
    from ..embedders import get_embedder

    return get_embedder("minilm")


def load_shipped_embeddings(texts: Sequence[str], *, embedder_key: str, store=None) -> dict[str, np.ndarray]:
    """Serve the shipped vectors of the texts the store lacks, and put them into the store.

    The packaged MiniLM's vectors of every response the experiments embed
    ship as float16 (:func:`dbpa_core.data.paper.shipped_embeddings`); they
    are renormalised to unit norm as float32, as the embedder returns them,
    and written to the store in one bulk write, so later runs (and the page's
    warm opens) read them like any cached embedding.  A vector the store
    already holds is never replaced.

    Parameters
    ----------
    texts : sequence of str
    embedder_key : str
        The experiment's embedder (``Embedder.key``); another embedder than
        the one that wrote the file gets nothing from it.
    store : SampleStore, optional

    Returns
    -------
    dict of text_hash -> ndarray of shape (dim,), float32
        The vectors served from the file (texts the file lacks are absent).
    """
    shipped = paper.shipped_embeddings()
    distinct = list(dict.fromkeys(texts))
    if embedder_key != shipped.embedder_key or not distinct:
        return {}
    held = store.get_embeddings(embedder_key, distinct) if store is not None else {}
    found = [t for t in distinct if text_hash(t) not in held and text_hash(t) in shipped.rows]
    if not found:
        return {}
    rows = shipped.vectors[[shipped.rows[text_hash(t)] for t in found]].astype(np.float32)
    vectors = unit_rows(rows, paper.EMBEDDINGS_FILE.name)
    if store is not None:
        store.put_embeddings(embedder_key, found, vectors)
    return {text_hash(t): v for t, v in zip(found, vectors)}


def embed_groups(groups: dict, *, embedder=None, store=None, progress: Progress | None = None,
                 stage: str = "embedding the paper's responses") -> dict:
    """Embed several arms in one call (one progress bar, one store lookup).

    Vectors come from the store, else from the shipped file
    (:func:`load_shipped_embeddings`), else from the embedder, which then
    embeds only what neither holds.

    Parameters
    ----------
    groups : dict of key -> sequence of str
    embedder : Embedder, optional
        Default: the packaged MiniLM.
    store : SampleStore, optional
        Caches every vector, so a second run embeds nothing.

    Returns
    -------
    dict of key -> ndarray of shape (len(texts), dim)
    """
    embedder = _embedder(embedder)
    texts = [text for group in groups.values() for text in group]
    known = store.get_embeddings(embedder.key, texts) if store is not None else {}
    known.update(load_shipped_embeddings([t for t in texts if text_hash(t) not in known], embedder_key=embedder.key,
                                         store=store))
    rest = list(dict.fromkeys(t for t in texts if text_hash(t) not in known))
    if rest:
        fresh = embedder.embed(rest, store=store,
                               progress=(lambda done, total: progress(stage, done, total)) if progress else None)
        known.update(zip(map(text_hash, rest), fresh))
    vectors = np.stack([known[text_hash(t)] for t in texts])
    out, start = {}, 0
    for key, group in groups.items():
        out[key] = vectors[start : start + len(group)]
        start += len(group)
    return out


# ------------------------------------------------------------------ Table 2
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
    n_resamples, seed = _settings_iv(n_resamples, seed)
    embedder = _embedder(embedder)
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


# -------------------------------------------------------------- Figs 1–2
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
        Keys of :data:`dbpa_core.data.paper.PARAPHRASE_MODELS` (default all 9).
    seeds : sequence of int
        Subset of :data:`dbpa_core.data.paper.SEEDS`.
    embedder, store, n_resamples, seed, progress
        As in :func:`persona_table`.
    discrepancy : str
        ω (default the JS distance, as the paper).

    Returns
    -------
    ROCStudy
    """
    n_resamples, seed = _settings_iv(n_resamples, seed, discrepancy)
    embedder = _embedder(embedder)
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


# ------------------------------------------------------------------ Fig 3
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

    Parameters are as in :func:`roc_study`.

    Returns
    -------
    AlignmentStudy
    """
    n_resamples, seed = _settings_iv(n_resamples, seed, discrepancy)
    embedder = _embedder(embedder)
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


# --------------------------------------------------------------- appendix
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

    n_resamples, seed = _settings_iv(n_resamples, seed)
    embedder = _embedder(embedder)
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
    from .costs import estimate_tokens, prices

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
    shared = {"embedder": _embedder(embedder), "store": store, "n_resamples": n_resamples, "seed": seed,
              "progress": progress}
    return AppendixResult(omega_choices(**shared), similarity_choices(**shared), embedding_costs())


#: The command line's experiment names → functions (each returns a result with ``record()``).
REPRODUCERS = {"table2": persona_table, "fig1": roc_study, "fig3": alignment_study, "appendix": appendix}


def experiment_texts(experiment: str) -> list[str]:
    """Every response an experiment embeds (echoes stripped), to check the store before a long first run."""
    if experiment in ("table2", "appendix"):
        return [t for texts in paper.load_personas().values() for t in texts]
    if experiment == "fig1":
        runs = [paper.load_paraphrases(m, s) for m in paper.PARAPHRASE_MODELS for s in paper.SEEDS]
        return [t for run in runs for arm in (run.base, *run.paraphrases) for t in arm]
    if experiment == "fig3":
        runs = [paper.load_alignment(s) for s in paper.SEEDS]
        return [t for run in runs for arm in (run.reference, *run.models.values()) for t in arm]
    raise ValueError(f"`experiment` must be one of {', '.join(map(repr, EXPERIMENTS))}; got {experiment!r}.")


def missing_embeddings(experiment: str, *, embedder_key: str, store) -> int:
    """How many distinct responses of ``experiment`` the embedder would have to embed (0 = nothing to embed).

    A response counts when neither the store nor, for the embedder that wrote
    it, the shipped file (:func:`dbpa_core.data.paper.shipped_embeddings`) has
    its vector.
    """
    texts = list(dict.fromkeys(experiment_texts(experiment)))
    held = store.get_embeddings(embedder_key, texts)
    shipped = paper.shipped_embeddings()
    from_file = shipped.rows if embedder_key == shipped.embedder_key else {}
    return sum(1 for t in texts if text_hash(t) not in held and text_hash(t) not in from_file)
