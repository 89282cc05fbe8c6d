"""The case studies' experiments: many families of tests, run and summarised for a page or a report.

A page supplies *how* one family is run (its sampler settings, memo and
progress bar) as a callable; this module owns *what* is run and how the
results are summarised, so the loops and the summaries are written once and
tested without Streamlit.

* :func:`rates_experiment` — controls vs targets for several models, TPR/FPR
  over α and the best model at an allowed FPR (paper §4.2, Figs 1–2).
* :func:`persona_grid` — personas × models, ω with significance stars
  (paper §4.1, Table 2).
* :func:`alignment_family` — several models against one reference model on
  one prompt, family-wise corrected (paper §4.3, Fig. 3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..stats.corrections import adjust_pvalues
from ..stats.roc import ROCResult, roc_analysis
from .results import FamilyResult, PerturbationResult, ReadOnly


@dataclass(frozen=True)
class BestModel:
    """Fig 2's reading at one allowed FPR: the model with the highest TPR, or None when no model stands out.

    ``model`` is None when no model flags any target at this FPR (TPR 0 everywhere) or when the highest
    TPR is shared (``tied`` lists the models sharing it): the paper names one model per allowed FPR
    (§4.2, Fig. 2), and breaking a tie by position or by AUC would name one the rates do not single out.
    :func:`dbpa_core.present.reproduction.best_model_sentence` reads it.
    """

    max_fpr: float
    model: str | None
    tpr: float
    tied: tuple[str, ...]


def best_model(tprs: Mapping[str, float], max_fpr: float) -> BestModel:
    """Fig 2's rule: the model with the highest TPR at FPR ≤ ``max_fpr``; none on a tie or at TPR 0.

    Parameters
    ----------
    tprs : mapping str -> float
        Each model's best TPR among the α whose FPR does not exceed ``max_fpr``.
    max_fpr : float
        The allowed false-positive rate the TPRs were read at.

    Returns
    -------
    BestModel
    """
    if not tprs:
        raise ValueError("`tprs` must hold at least one model's TPR; got none.")
    top = max(tprs.values())
    if top == 0:
        return BestModel(max_fpr, None, 0.0, ())
    leaders = tuple(label for label, tpr in tprs.items() if tpr == top)
    return BestModel(max_fpr, leaders[0] if len(leaders) == 1 else None, top, leaders if len(leaders) > 1 else ())


@dataclass(frozen=True, eq=False)
class RatesComparison:
    """TPR/FPR of several models on the same controls and targets (Figs 1–2).

    Attributes
    ----------
    models : tuple of str
        In the order they were run (the order of every table and colour).
    rocs : mapping str → ROCResult
        Each model's ROC over α, its p-values pooled over replicates and scenarios.
    settings : mapping
        What produced them: the scenarios, the replicates and the tests' k, B, similarity, ω and seed
        (the families' own settings; no correction or α: the ROC runs over every α).
    """

    models: tuple[str, ...]
    rocs: Mapping[str, ROCResult] = field(repr=False)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def best_model_at(self, max_fpr: float) -> BestModel:
        """The model with the highest TPR among α whose FPR ≤ ``max_fpr`` (:func:`best_model`: none on a
        tie or when no model flags a target)."""
        return best_model({name: self.rocs[name].tpr_at_fpr(max_fpr)[0] for name in self.models}, max_fpr)

    def summary(self, max_fpr: float):
        """One row per model: AUC, best TPR at FPR ≤ ``max_fpr``, the α achieving it, counts (a DataFrame)."""
        import pandas as pd

        rows = []
        for name in self.models:
            roc = self.rocs[name]
            tpr, alpha = roc.tpr_at_fpr(max_fpr)
            rows.append({"model": name, "AUC": roc.auc, f"TPR at FPR ≤ {max_fpr * 100:g} %": tpr, "α achieving it": alpha,
                         "targets": roc.n_targets, "controls": roc.n_controls})
        return pd.DataFrame(rows)


def rates_experiment(run_family: Callable[[str, int, str], FamilyResult], models: Sequence[str],
                     scenarios: Sequence[str], *, replicates: int = 1) -> RatesComparison:
    """Run every model × replicate × scenario family and pool each model's p-values into one ROC.

    Parameters
    ----------
    run_family : callable (model, replicate, scenario) → FamilyResult
        Runs all perturbations of one scenario for one model; replicate r must
        use its own seed, so replicates are independent draws.
    models, scenarios : sequence of str
    replicates : int

    Returns
    -------
    RatesComparison
    """
    if not models:
        raise ValueError("`models` must name at least one model.")
    if not scenarios:
        raise ValueError("`scenarios` must name at least one scenario.")
    rocs, tests = {}, {}
    for name in models:
        pvalues, is_target = [], []
        for replicate in range(int(replicates)):
            for scenario in scenarios:
                family = run_family(name, replicate, scenario)
                pvalues += [r.test.pvalue for r in family.results]
                is_target += [r.kind == "target" for r in family.results]
                tests = tests or _tests_settings(family, without=("correction", "alpha", "replicate"))
        rocs[name] = roc_analysis(pvalues, np.array(is_target, dtype=bool))
    return RatesComparison(tuple(models), rocs, {"scenarios": list(scenarios), "replicates": int(replicates),
                                                 **tests})


@dataclass(frozen=True, eq=False)
class PersonaGrid:
    """ω and p of each persona (rows) for each model (columns), Table 2's layout.

    Stars are unadjusted significance (* p < 0.05, ** < 0.01, *** < 0.001), as in the paper.
    """

    personas: tuple[str, ...]
    kinds: tuple[str, ...]
    models: tuple[str, ...]
    statistics: np.ndarray = field(repr=False)
    pvalues: np.ndarray = field(repr=False)
    discrepancy: str = "jsd"
    #: Per model, its tests' (B, exact): where a p sits at its floor 1/(B+1) (or 1/N) it reads "≤".
    resamplings: tuple[tuple[int, bool], ...] | None = None
    #: What produced the grid: the tests' k, B, similarity, ω and seed (the first model's family's settings;
    #: every model runs the same request but its sampler), for the downloads.
    settings: Mapping[str, Any] = field(default_factory=dict)

    def table(self, *, statistic_label: str = "ω"):
        """The grid as a DataFrame: persona, kind, then the statistic and p per model (``attrs["resamplings"]``:
        each p column's (B, exact), so the screen writes a p at its floor "≤ 0.001", as the paper view does).

        ``statistic_label`` names the statistic's columns (a page passes the discrepancy's own name, "JSD",
        where the paper view's ω is the JS distance: one symbol for two scales read as one)."""
        import pandas as pd

        table = pd.DataFrame({"persona": list(self.personas), "kind": list(self.kinds)})
        for column, name in enumerate(self.models):
            table[f"{statistic_label} {name}"] = self.statistics[:, column]
            table[f"p {name}"] = self.pvalues[:, column]
        if self.resamplings is not None:
            table.attrs["resamplings"] = {f"p {name}": floor for name, floor in zip(self.models, self.resamplings)}
        return table


def _tests_settings(family: FamilyResult, *, without: Sequence[str]) -> dict:
    """``family``'s test settings (k, B, similarity, ω, seed, …) less the keys ``without``: the ones that do not
    apply to a study built from its p-values (an ROC runs over every α; Table 2's stars are unadjusted)."""
    return {key: value for key, value in family.settings.items() if key not in without}


def persona_grid(run_family: Callable[[str], FamilyResult], models: Sequence[str], *,
                 discrepancy: str = "jsd") -> PersonaGrid:
    """Run the persona family once per model and lay the results out as Table 2.

    ``run_family(model)`` returns the family of persona perturbations for that
    model; every model's family must hold the same perturbations in the same order.
    """
    if not models:
        raise ValueError("`models` must name at least one model.")
    families = [run_family(name) for name in models]
    labels = [r.label for r in families[0].results]
    for name, family in zip(models, families):
        if [r.label for r in family.results] != labels:
            raise ValueError(f"model {name!r} was run on other perturbations than {models[0]!r}.")
    statistics = np.array([[r.test.statistic for r in f.results] for f in families]).T
    pvalues = np.array([[r.test.pvalue for r in f.results] for f in families]).T
    personas = tuple(label.removeprefix("Act as ").rstrip(". ") for label in labels)
    floors = tuple((f.results[0].test.n_resamples, bool(f.results[0].test.exact)) for f in families)
    settings = _tests_settings(families[0], without=("correction", "alpha"))
    return PersonaGrid(personas, tuple(r.kind for r in families[0].results), tuple(models), statistics, pvalues,
                       discrepancy, floors, settings)


def alignment_family(results: Sequence[PerturbationResult], *, correction: str = "bonferroni",
                     alpha: float = 0.05, settings: Mapping | None = None) -> FamilyResult:
    """Several models' tests against one reference, corrected as one family (Fig. 3).

    Each result compares the reference model's outputs (its ``original`` arm)
    with another model's outputs on the same prompt (its ``perturbed`` arm).
    """
    if not results:
        raise ValueError("`results` must hold at least one model's test against the reference.")
    adjusted = adjust_pvalues([r.test.pvalue for r in results], method=correction, alpha=alpha)
    first = results[0].test
    return FamilyResult(tuple(results), adjusted, ReadOnly({
        "k": first.n_original, "n_resamples": first.n_resamples, "similarity": first.similarity,
        "discrepancy": first.discrepancy, "correction": correction, "alpha": alpha, **(settings or {})}))


def aligned(family: FamilyResult) -> tuple[bool, ...]:
    """Whether each model answers like the reference: no difference declared after the family's correction.

    "Aligned" here means only that this sample size shows no difference at
    the family-wise level (paper §4.3), not that the distributions are equal.
    """
    return tuple(not bool(reject) for reject in family.adjusted.reject)
