"""An audit's results: the arms as drawn, one test per perturbation, the family's correction.

Frozen, and picklable (the app's shared cache pickles them); every
intermediate (texts, embeddings, sample ids) is kept so that pages and
exports show them without recomputing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..stats.corrections import AdjustedPValues, adjust_pvalues
from ..stats.permutation import DBPAResult
from ..stats.sequential import SequentialResult


class ReadOnly(Mapping):
    """A read-only mapping that pickles (``types.MappingProxyType`` does not)."""

    def __init__(self, data: Mapping | None = None, **more):
        self._data = {**(data or {}), **more}

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"ReadOnly({self._data!r})"


@dataclass(frozen=True, eq=False)
class Arm:
    """One arm of a test: what was sent and what came back."""

    label: str
    prompt: str
    system: str
    texts: tuple[str, ...]
    embeddings: np.ndarray = field(repr=False)
    model: str = ""
    sample_ids: tuple[str, ...] = ()
    #: What each sample's reply said about itself (served model, fingerprint, usage), or None per sample.
    provenance: tuple = ()

    def head(self, n: int) -> Arm:
        """The first ``n`` outputs, as an arm.

        Sample i of a request depends only on (seed, i)
        (:func:`dbpa_core.samplers.base.sample_seed`), so the first n outputs
        are exactly what drawing n would have given: an honest smaller draw.
        """
        return Arm(self.label, self.prompt, self.system, self.texts[:n], self.embeddings[:n], self.model,
                   self.sample_ids[:n], self.provenance[:n])

    def halves(self) -> tuple[Arm, Arm]:
        """The first and the second half of the outputs (a comparison of an arm with itself)."""
        half = len(self.texts) // 2
        second = Arm(self.label, self.prompt, self.system, self.texts[half:2 * half],
                     self.embeddings[half:2 * half], self.model, self.sample_ids[half:2 * half],
                     self.provenance[half:2 * half])
        return self.head(half), second


@dataclass(frozen=True, eq=False)
class PerturbationResult:
    """The test of one perturbation, with both arms.

    ``kind`` is the perturbation's ("control", "target" or ""); the test's
    design is ``test.kind`` ("fixed" or "sequential").
    """

    label: str
    kind: str
    original: Arm
    perturbed: Arm
    test: DBPAResult | SequentialResult
    true_effect: float | None = None
    perturbation_id: str = ""


@dataclass(frozen=True, eq=False)
class FamilyResult:
    """Many perturbations of one original arm, with family-wise correction (paper §3.2).

    Attributes
    ----------
    results : tuple of PerturbationResult
    adjusted : AdjustedPValues
        The family's correction; its ``method`` and ``alpha`` are the ones every
        view of this family (screen, JSON, CSV, HTML) reports.
    settings : mapping
        The test settings the family was run with (k, n_resamples, similarity,
        discrepancy, correction, alpha, seed; ``sequential`` for a sequential
        family), so an export never has to be told them again by the caller.
    """

    results: tuple[PerturbationResult, ...]
    adjusted: AdjustedPValues
    settings: Mapping[str, Any] = field(default_factory=ReadOnly)
    #: One "What changed" account per perturbation, in order, when the request asked for them
    #: (:attr:`~dbpa_core.audit.request.AuditRequest.explain_fdr`); None otherwise.
    explanations: tuple | None = None

    @property
    def kind(self) -> str:
        """The tests' design: ``"fixed"`` or ``"sequential"`` (every test of a family shares it)."""
        return self.results[0].test.kind

    def recorrected(self, correction: str, alpha: float) -> FamilyResult:
        """The same tests under another correction or α (a new object; p-values are not recomputed)."""
        adjusted = adjust_pvalues([r.test.pvalue for r in self.results], method=correction, alpha=alpha)
        return FamilyResult(self.results, adjusted, ReadOnly(self.settings, correction=adjusted.method,
                                                             alpha=adjusted.alpha), self.explanations)
