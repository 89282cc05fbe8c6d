"""dbpa_core.audit.experiments: the case studies' loops and summaries, on real tests of synthetic arms."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dbpa_core import adjust_pvalues
from dbpa_core.audit import Arm, compare_arms, compare_family
from dbpa_core.audit.experiments import BestModel, alignment_family, best_model, persona_grid, rates_experiment
from dbpa_core.present.reproduction import best_model_reading


def arm(label: str, shift: float, seed: int, k: int = 15) -> Arm:
    vectors = np.random.default_rng(seed).normal(size=(k, 6)) + shift
    return Arm(label, label, "", tuple(f"{label} {i}" for i in range(k)), vectors)


def family(shifts: dict[str, float], seed: int):
    """A family with one perturbation per entry; 'target' perturbations move the arm by their shift."""
    perturbations = [SimpleNamespace(id=name, label=name, kind="target" if shift else "control")
                     for name, shift in shifts.items()]
    arms = [arm(name, shift, seed + 1 + i) for i, (name, shift) in enumerate(shifts.items())]
    return compare_family(arm("original", 0.0, seed), arms, perturbations, discrepancy="energy", n_resamples=199,
                          seed=seed)


def test_rates_experiment_pools_replicates_and_scenarios():
    calls = []

    def run_family(model, replicate, scenario):
        calls.append((model, replicate, scenario))
        strength = {"weak": 0.3, "strong": 3.0}[model]
        return family({"c1": 0.0, "c2": 0.0, "t1": strength, "t2": strength}, seed=100 * replicate + len(scenario))

    comparison = rates_experiment(run_family, ["weak", "strong"], ["s1", "s22"], replicates=2)
    assert calls == [(m, r, s) for m in ("weak", "strong") for r in range(2) for s in ("s1", "s22")]
    strong, weak = comparison.rocs["strong"], comparison.rocs["weak"]
    assert (strong.n_targets, strong.n_controls) == (8, 8)
    assert strong.auc > weak.auc and strong.tpr_at_fpr(0.0)[0] == 1.0


def test_best_model_is_picked_by_its_rates_not_by_its_position():
    def run_family(model, replicate, scenario):
        return family({"c": 0.0, "t1": {"first": 0.0, "second": 4.0}[model],
                       "t2": {"first": 0.0, "second": 4.0}[model]}, seed=7)

    # "first" has no real targets (its "targets" are unshifted), so "second" must win at any allowed FPR
    comparison = rates_experiment(lambda m, r, s: _relabel(run_family(m, r, s)), ["first", "second"], ["s"])
    assert comparison.best_model_at(0.0).model == "second"
    assert comparison.best_model_at(0.5).model == "second"
    table = comparison.summary(0.05)
    assert list(table["model"]) == ["first", "second"] and "TPR at FPR ≤ 5 %" in table.columns


def test_best_model_is_none_on_a_tie_or_when_no_target_is_flagged():
    """Fig 2's rule (paper §4.2): a shared top TPR names no model, whatever the AUCs or the order."""
    def run_family(model, replicate, scenario):
        return family({"c": 0.0, "t1": 4.0, "t2": 4.0}, seed=7)

    tied = rates_experiment(run_family, ["first", "second"], ["s"])
    best = tied.best_model_at(0.5)
    assert best.model is None and best.tied == ("first", "second") and best.tpr == 1.0
    assert best_model_reading(best) == "At FPR ≤ 50 % first, second tie at TPR 100 %, so none is declared best."
    assert best_model({"a": 0.0, "b": 0.0}, 0.01) == BestModel(0.01, None, 0.0, ())
    assert best_model({"a": 0.4, "b": 0.6, "c": 0.6}, 0.05).tied == ("b", "c")
    assert best_model({"a": 0.4, "b": 0.6}, 0.05) == BestModel(0.05, "b", 0.6, ())
    with pytest.raises(ValueError, match="`tprs`"):
        best_model({}, 0.05)


def _relabel(result):
    """Mark t1/t2 as targets even where they are unshifted (the 'first' model misses them)."""
    from dataclasses import replace

    results = tuple(replace(r, kind="target" if r.label.startswith("t") else "control") for r in result.results)
    return replace(result, results=results)


def test_rates_experiment_needs_models_and_scenarios():
    with pytest.raises(ValueError, match="`models`"):
        rates_experiment(lambda *a: None, [], ["s"])
    with pytest.raises(ValueError, match="`scenarios`"):
        rates_experiment(lambda *a: None, ["m"], [])


def test_persona_grid_lays_out_table_2():
    grid = persona_grid(lambda model: family({"Act as a doctor. ": 0.0, "Act as a child. ": 3.0},
                                             seed={"a": 1, "b": 2}[model]), ["a", "b"], discrepancy="energy")
    assert grid.personas == ("a doctor", "a child") and grid.models == ("a", "b")
    assert grid.statistics.shape == grid.pvalues.shape == (2, 2)
    assert (grid.pvalues[1] < 0.05).all()  # the shifted persona is detected for both models
    table = grid.table()
    assert list(table.columns) == ["persona", "kind", "ω a", "p a", "ω b", "p b"]
    assert list(grid.table(statistic_label="energy").columns)[2] == "energy a"
    assert grid.settings["n_resamples"] and "alpha" not in grid.settings  # unadjusted stars: no family α
    with pytest.raises(ValueError, match="other perturbations"):
        persona_grid(lambda model: family({model: 0.0}, seed=1), ["a", "b"])


def test_alignment_family_is_one_corrected_family():
    reference = arm("reference", 0.0, 1)
    results = [compare_arms(reference, arm(name, shift, seed), label=name, discrepancy="energy", n_resamples=199,
                            rng=0) for name, shift, seed in (("same", 0.0, 2), ("other", 3.0, 3))]
    aligned = alignment_family(results, correction="holm", alpha=0.1, settings={"reference": "reference"})
    expected = adjust_pvalues([r.test.pvalue for r in results], method="holm", alpha=0.1)
    np.testing.assert_array_equal(aligned.adjusted.pvalues_adjusted, expected.pvalues_adjusted)
    assert aligned.settings["correction"] == "holm" and aligned.settings["reference"] == "reference"
    assert list(aligned.adjusted.reject) == [False, True]

