"""Tests of dbpa_core.stats.roc against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.metrics import roc_auc_score, roc_curve

from dbpa_core import roc_analysis


def test_exact_small_case():
    res = roc_analysis([0.01, 0.2, 0.03, 0.5], [True, True, False, False])
    # α = 0.01: one target; α = 0.03: one target, one control; α = 0.2: both targets.
    assert res.rates_at_alpha(0.01) == (0.0, 0.5)
    assert res.rates_at_alpha(0.03) == (0.5, 0.5)
    assert res.rates_at_alpha(0.2) == (0.5, 1.0)
    assert res.auc == pytest.approx(0.75, rel=1e-15)
    assert res.tpr_at_fpr(0.0) == (0.5, 0.01)
    assert res.tpr_at_fpr(0.5) == (1.0, 0.2)


@pytest.mark.parametrize("seed", range(5))
def test_auc_matches_sklearn_with_ties(seed):
    rng = np.random.default_rng(seed)
    labels = rng.random(60) < 0.4
    labels[:2] = [True, False]
    # discrete permutation p-values produce ties
    pvalues = np.round(np.where(labels, rng.beta(0.5, 3, 60), rng.random(60)), 2)
    res = roc_analysis(pvalues, labels)
    assert_allclose(res.auc, roc_auc_score(labels, -pvalues), rtol=1e-12)
    fpr, tpr, _ = roc_curve(labels, -pvalues)
    # every sklearn operating point lies on our curve
    ours = set(zip(np.round(res.fpr, 12), np.round(res.tpr, 12)))
    assert set(zip(np.round(fpr, 12), np.round(tpr, 12))) - {(0.0, 0.0)} <= ours


def test_rates_non_decreasing():
    rng = np.random.default_rng(1)
    res = roc_analysis(rng.random(30), rng.random(30) < 0.5)
    assert np.all(np.diff(res.fpr) >= 0) and np.all(np.diff(res.tpr) >= 0)
    assert res.thresholds[0] == 0.0 and res.thresholds[-1] == 1.0


@pytest.mark.parametrize(("pvalues", "labels", "match"), [
    ([0.1, 0.2], [True, True], "both targets"),
    ([0.1, 0.2], [True], "same shape"),
    ([0.1, 0.2], ["yes", "no"], "`is_target` must hold booleans"),
    ([0.1, 2.0], [True, False], "`pvalues` must lie in"),
])
def test_bad_inputs(pvalues, labels, match):
    with pytest.raises(ValueError, match=match):
        roc_analysis(pvalues, labels)


def test_bad_fpr():
    res = roc_analysis([0.1, 0.2], [True, False])
    with pytest.raises(ValueError, match="`max_fpr`"):
        res.tpr_at_fpr(1.5)
    with pytest.raises(ValueError, match="`alpha`"):
        res.rates_at_alpha(-0.1)
