"""Tests of dbpa_core.stats.corrections: exact cases and agreement with reference libraries."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import false_discovery_control
from statsmodels.stats.multitest import multipletests

from dbpa_core import adjust_pvalues
from dbpa_core.stats.corrections import METHODS

PVALUES = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216])


def test_bonferroni_exact():
    res = adjust_pvalues([0.01, 0.02, 0.5])
    assert_allclose(res.pvalues_adjusted, [0.03, 0.06, 1.0], rtol=1e-15)
    assert_array_equal(res.reject, [True, False, False])
    assert res.n_rejected == 1


def test_holm_exact():
    # Holm: sorted p times (m, m-1, ...), running maximum
    res = adjust_pvalues([0.01, 0.04, 0.03], method="holm")
    assert_allclose(res.pvalues_adjusted, [0.03, 0.06, 0.06], rtol=1e-15)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_agrees_with_statsmodels(method):
    res = adjust_pvalues(PVALUES, method=method, alpha=0.05)
    reject, adjusted, _, _ = multipletests(PVALUES, alpha=0.05, method=method)
    assert_allclose(res.pvalues_adjusted, np.minimum(adjusted, 1), rtol=1e-14)
    assert_array_equal(res.reject, reject)


def test_bh_agrees_with_scipy():
    res = adjust_pvalues(PVALUES, method="fdr_bh")
    assert_allclose(res.pvalues_adjusted, false_discovery_control(PVALUES), rtol=1e-14)


def test_ordering_bonferroni_most_conservative():
    bonf = adjust_pvalues(PVALUES).pvalues_adjusted
    holm = adjust_pvalues(PVALUES, method="holm").pvalues_adjusted
    bh = adjust_pvalues(PVALUES, method="fdr_bh").pvalues_adjusted
    assert np.all(bonf >= holm) and np.all(holm >= bh)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"pvalues": []}, "`pvalues` must contain"),
    ({"pvalues": [0.1, 1.2]}, "`pvalues` must lie in"),
    ({"pvalues": [0.1, np.nan]}, "entry 1"),
    ({"pvalues": [[0.1]]}, "`pvalues` must be 1-D"),
    ({"pvalues": ["a"]}, "`pvalues`"),
    ({"method": "bonf"}, "`method` must be one of"),
    ({"alpha": 0}, "`alpha` must lie in"),
    ({"alpha": 1.5}, "`alpha`"),
])
def test_bad_inputs(kwargs, match):
    args = {"pvalues": [0.1, 0.2], **kwargs}
    with pytest.raises(ValueError, match=match):
        adjust_pvalues(args.pop("pvalues"), **args)
