"""Statistical footguns: a warning when B cannot reach α (the p-value floor 1/(B + 1), or one over the
number of distinct splits when all are enumerated; at α/m under Bonferroni or Holm), and when a sequential
test's per-look budget makes rejection impossible.  The run goes on (exit 0): the warning says why "no
change" would say nothing, and the B that would do."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dbpa_core as d

from .conftest import assert_clean, cli, simulated_spec, write_jsonl, write_spec


def pvalue_floor(*args, **kwargs):
    from dbpa_core.stats.permutation import pvalue_floor as floor  # here: each case fails on its own without it

    return floor(*args, **kwargs)


def resolution_warning(*args, **kwargs):
    from dbpa_core.stats.permutation import resolution_warning as warning

    return warning(*args, **kwargs)


@pytest.mark.parametrize(("k0", "k1", "b", "alternative", "floor"), [
    (20, 20, 99, "greater", 0.01), (20, 20, 999, "two-sided", 0.002), (3, 3, 1000, "greater", 1 / 20),
    (2, 2, 5, "greater", 1 / 6), (2, 2, 6, "greater", 1 / 6), (2, 3, 1000, "greater", 1 / 10),
])
def test_the_floor_is_exact(k0, k1, b, alternative, floor):
    assert pvalue_floor(k0, k1, b, alternative) == pytest.approx(floor)


def test_the_floor_is_the_smallest_p_the_test_returns():
    """Arms that cannot be told apart more clearly: the observed split is the most extreme, p is the floor."""
    x, y = np.zeros((5, 2)) + [1, 0], np.zeros((5, 2)) + [0, 1]
    x[:, 1], y[:, 0] = np.linspace(0, 0.01, 5), np.linspace(0, 0.01, 5)
    for b in (9, 99):
        assert d.dbpa_test(x, y, discrepancy="energy", n_resamples=b, rng=0).pvalue == pvalue_floor(5, 5, b)


@pytest.mark.parametrize(("alpha", "b", "m", "correction", "warned"), [
    (0.05, 10, 1, "bonferroni", True), (0.05, 19, 1, "bonferroni", False), (0.05, 100, 10, "bonferroni", True),
    (0.05, 199, 10, "bonferroni", False), (0.05, 100, 10, "holm", True), (0.05, 100, 10, "fdr_bh", False),
    (0.001, 500, 1, "bonferroni", True),
])
def test_when_the_level_is_out_of_reach(alpha, b, m, correction, warned):
    message = resolution_warning(alpha, n_original=20, n_perturbed=20, n_resamples=b, m=m, correction=correction)
    assert (message is not None) == warned
    if warned:
        assert "cannot find a change" in message and "Use B ≥" in message


def test_the_command_line_test_warns_and_still_runs(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", ({"text": f"a{i}", "embedding": [1.0, 0.1 * i]} for i in range(10)))
    b = write_jsonl(tmp_path / "b.jsonl", ({"text": f"b{i}", "embedding": [0.1 * i, 1.0]} for i in range(10)))
    outcome = assert_clean(cli("test", a, b, "--n-resamples", 10, "--alpha", 0.05), 0)
    assert "warning: No p-value can reach the level: with B = 10 the smallest possible p is 0.0909" in outcome.err
    assert "Use B ≥ 19." in outcome.err
    assert "No p-value" not in assert_clean(cli("test", a, b, "--n-resamples", 100), 0).err


def test_an_audit_warns_for_bonferroni_over_its_perturbations(tmp_path):
    spec = write_spec(tmp_path, simulated_spec(n_resamples=30))  # 2 perturbations: p must reach 0.025 < 1/31
    outcome = assert_clean(cli("audit", spec, "--out", tmp_path / "o", "--store", tmp_path / "s.sqlite"), 0)
    assert outcome.err.count("warning: No p-value can reach the level") == 1
    assert "bonferroni over 2 perturbations at α = 0.05 needs p ≤ 0.025" in outcome.err


def test_too_few_outputs_for_any_b(tmp_path):
    spec = write_spec(tmp_path, simulated_spec(k=3, n_resamples=1000))  # C(6, 3) = 20 splits: p ≥ 0.05
    outcome = assert_clean(cli("audit", spec, "--out", tmp_path / "o", "--store", tmp_path / "s.sqlite"), 0)
    assert "every one of its distinct splits enumerated" in outcome.err and "more outputs per arm" in outcome.err


def test_a_sequential_test_whose_budget_allows_no_look_to_reject():
    from dbpa_core.stats.permutation import ResolutionWarning

    draw = np.random.default_rng(0)
    with pytest.warns(ResolutionWarning, match="No look can reject"):
        result = d.sequential_dbpa_test(lambda n: draw.normal(size=(n, 4)), lambda n: draw.normal(size=(n, 4)) + 3,
                                        alpha=0.01, k_max=20, batch_size=10, n_resamples=50, rng=0)
    assert not result.reject and any("No look can reject" in w for w in result.warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResolutionWarning)
        d.sequential_dbpa_test(lambda n: draw.normal(size=(n, 4)), lambda n: draw.normal(size=(n, 4)) + 3,
                               alpha=0.05, k_max=20, batch_size=10, n_resamples=200, rng=0)


def test_a_sequential_audit_at_alpha_over_m_warns_once(tmp_path):
    spec = write_spec(tmp_path, simulated_spec(k=None, sequential={"k_max": 10, "batch_size": 5},
                                               n_resamples=30, alpha=0.05))
    outcome = assert_clean(cli("audit", spec, "--out", tmp_path / "o", "--store", tmp_path / "s.sqlite"), 0)
    assert outcome.err.count("warning: No look can reject") == 1
