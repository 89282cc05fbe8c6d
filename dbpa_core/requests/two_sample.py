"""The two-sample test of given outputs: two files on the command line, an uploaded file in the app.

A :class:`TwoSampleRequest` holds the two arms' outputs (texts, and
embeddings when the file brings them), the embedder for texts without
vectors, the test's settings (s, ω, B, α, seed) and whether to say what
changed (``explain``, ``fdr``).  :func:`run` is the one path from it to a
:class:`TwoSampleResult`: ``python -m dbpa_core test A.jsonl B.jsonl`` and the
"Bring your own samples" page both build a request and call it through
:data:`dbpa_core.requests.dispatch.RUNNERS`, so their sizes checks, embedder, seed
and explanation cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import check_choice, check_n_resamples, check_positive_int, check_probability, check_test_size
from ..audit.identity import Identified, test_seed
from ..audit.configs import EmbedderConfig


@dataclass(frozen=True, eq=False)
class SampleArm:
    """One arm of given outputs: its label, texts, and embeddings when they came with the file.

    ``missing_texts`` counts rows that carried only an embedding (their texts
    are "" placeholders: a text measure or the themes of ``explain`` refuse them).
    """

    label: str
    texts: tuple[str, ...]
    embeddings: np.ndarray | None = field(default=None, repr=False)
    missing_texts: int = 0

    def __post_init__(self):
        object.__setattr__(self, "label", str(self.label))
        object.__setattr__(self, "texts", tuple(str(t) for t in self.texts))
        if self.embeddings is not None:
            vectors = np.array(self.embeddings)  # a copy, as given: the test checks its values and norms
            if not np.issubdtype(vectors.dtype, np.floating):
                vectors = vectors.astype(np.float64)
            if vectors.ndim != 2 or vectors.shape[0] != len(self.texts):
                raise ValueError(f"`{self.label}.embeddings` must hold one vector per output "
                                 f"({len(self.texts)}); got shape {vectors.shape}.")
            vectors.setflags(write=False)
            object.__setattr__(self, "embeddings", vectors)

    @classmethod
    def from_table(cls, table, arm: str, *, label: str | None = None) -> SampleArm:
        """Arm ``arm`` of a :class:`~dbpa_core.data.uploads.SampleTable` (a read file)."""
        if arm not in table.texts:
            raise ValueError(f"`arm` must be one of the file's arms ({', '.join(table.texts)}); got {arm!r}.")
        embeddings = (table.embeddings or {}).get(arm)
        return cls(label or arm, tuple(table.texts[arm]), None if embeddings is None else np.asarray(embeddings),
                   table.missing_texts)


@dataclass(frozen=True, eq=False)
class TwoSampleRequest(Identified):
    """Everything a two-sample test of given outputs depends on; frozen, free of credentials.

    Attributes
    ----------
    original, perturbed : SampleArm
        The two arms (the file's embeddings for both, or for neither).
    embedder : EmbedderConfig
        Embeds the texts when the arms bring no embeddings.
    similarity, discrepancy, n_resamples, alpha
        s, ω, B and the level of the decision.
    seed : int
        Seed of the re-splits (and of the explanation's), through :func:`~dbpa_core.audit.identity.test_seed`.
    explain : bool
        Also say what changed (:func:`dbpa_core.explain_change` at ``fdr``, with the test's B and seed).
    fdr : float
    """

    original: SampleArm
    perturbed: SampleArm
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    similarity: str = "cosine"
    discrepancy: str = "jsd"
    n_resamples: int = 1000
    alpha: float = 0.05
    seed: int = 0
    explain: bool = False
    fdr: float = 0.1

    def __post_init__(self):
        from ..stats.discrepancy import DISCREPANCY_NAMES
        from ..stats.similarity import SIMILARITIES, TEXT_SIMILARITIES

        set_ = object.__setattr__
        set_(self, "similarity", check_choice(self.similarity, "similarity", SIMILARITIES))
        set_(self, "discrepancy", check_choice(self.discrepancy, "discrepancy", DISCREPANCY_NAMES))
        set_(self, "n_resamples", check_n_resamples(self.n_resamples))
        set_(self, "alpha", check_probability(self.alpha, "alpha"))
        set_(self, "seed", check_positive_int(self.seed, "seed", minimum=0))
        set_(self, "fdr", check_probability(self.fdr, "fdr"))
        set_(self, "explain", bool(self.explain))
        a, b = self.original, self.perturbed
        # Checked before anything is embedded: the sizes, and that a text measure has texts to read.
        check_test_size(len(a.texts), len(b.texts), self.n_resamples, names=(a.label, b.label))
        needs_texts = [purpose for purpose, needed in (
            (f"the text similarity {self.similarity!r}", self.similarity in TEXT_SIMILARITIES),
            ("`explain` (themes are named by the outputs' words)", self.explain)) if needed]
        for arm in (a, b):
            if arm.missing_texts and needs_texts:
                raise ValueError(f"{arm.label}: {needs_texts[0]} needs the output texts, but {arm.missing_texts:,} "
                                 "row(s) have only an `embedding`; add a `text` column, or choose an embedding "
                                 "similarity (cosine, neg_l1, neg_l2).")
        if (a.embeddings is None) != (b.embeddings is None):
            with_vectors, without = (a.label, b.label) if a.embeddings is not None else (b.label, a.label)
            raise ValueError(f"{with_vectors} has an `embedding` column but {without} has none; give embeddings for "
                             "both arms, or for neither (then the texts are embedded with the `embedder`).")
        if a.embeddings is not None and a.embeddings.shape[1] != b.embeddings.shape[1]:
            raise ValueError(f"The two arms' embeddings have different lengths ({a.embeddings.shape[1]} and "
                             f"{b.embeddings.shape[1]}); embed both with the same model.")

    @classmethod
    def from_table(cls, table, original: str, perturbed: str, **settings) -> TwoSampleRequest:
        """The test of two arms of one read file (the app's upload: one file, an ``arm`` column)."""
        return cls(SampleArm.from_table(table, original), SampleArm.from_table(table, perturbed), **settings)

    @property
    def embedded(self) -> bool:
        """Whether the arms bring their own embeddings (then no embedder is called)."""
        return self.original.embeddings is not None

    # ------------------------------------------------------------ identity

    def __eq__(self, other):
        return isinstance(other, TwoSampleRequest) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def settings(self) -> dict:
        """The settings a report records (JSON-ready; never a secret)."""
        return {"original": self.original.label, "perturbed": self.perturbed.label,
                "k": [len(self.original.texts), len(self.perturbed.texts)],
                "embedder": "from the file" if self.embedded else self.embedder.as_mapping(),
                "similarity": self.similarity, "discrepancy": self.discrepancy, "n_resamples": self.n_resamples,
                "alpha": self.alpha, "seed": self.seed,
                **({"explain": {"fdr": self.fdr}} if self.explain else {})}


@dataclass(frozen=True, eq=False)
class TwoSampleResult:
    """The test of a :class:`TwoSampleRequest`: both arms with their vectors, the test, what changed."""

    request: TwoSampleRequest = field(repr=False)
    result: object  # PerturbationResult
    explanation: object = None  # ChangeExplanation, when the request asked for it

    @property
    def test(self):
        return self.result.test

    @property
    def statistic(self) -> float:
        return float(self.test.statistic)

    @property
    def pvalue(self) -> float:
        return float(self.test.pvalue)

    @property
    def change_detected(self) -> bool:
        """p ≤ α (the reports' decision, worded by :func:`dbpa_core.present.readings.decision`)."""
        return self.pvalue <= self.request.alpha


def run(request: TwoSampleRequest, *, store=None, progress=None, embedder=None) -> TwoSampleResult:
    """Embed (when needed), test, and explain a :class:`TwoSampleRequest`.

    Parameters
    ----------
    request : TwoSampleRequest
    store : SampleStore, optional
        Embeddings are reused from it and written to it.
    progress : callable(RunUpdate), optional
        Told of the embedding of each arm.
    embedder : Embedder, optional
        Default ``build_embedder(request.embedder)`` (the key from the environment).

    Returns
    -------
    TwoSampleResult
    """
    from ..stats.explain import explain_change
    from ..audit.results import Arm
    from ..audit.arms import RunUpdate
    from ..audit.runner import build_embedder, compare_arms

    arms = []
    for side in (request.original, request.perturbed):
        if side.embeddings is not None:
            vectors = side.embeddings
        else:
            embedder = embedder if embedder is not None else build_embedder(request.embedder)
            report = None if progress is None else (
                lambda done, total, label=side.label: progress(RunUpdate("embedding", label, done, total)))
            vectors = embedder.embed(list(side.texts), store=store, progress=report)
        arms.append(Arm(side.label, "", "", side.texts, np.asarray(vectors), "uploaded"))
    seed = test_seed(request)
    result = compare_arms(*arms, label=request.perturbed.label, similarity=request.similarity,
                          discrepancy=request.discrepancy, n_resamples=request.n_resamples, rng=seed)
    explanation = None
    if request.explain:
        explanation = explain_change(list(arms[0].texts), list(arms[1].texts), arms[0].embeddings,
                                     arms[1].embeddings, fdr=request.fdr, n_resamples=request.n_resamples, rng=seed)
    return TwoSampleResult(request, result, explanation)
