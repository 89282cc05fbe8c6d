"""dbpa_core.present.verdicts: the plain headlines a room reads (issue 45), pinned word for word."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dbpa_core.present.verdicts import (CHANGED, NO_CHANGE, NO_EFFECT, effect_in_words, k_needed, missed_note,
                                        plain_verdict, rut_verdict, technical_label)


def test_plain_verdicts_and_their_technical_labels():
    assert plain_verdict(0.01, 0.05) == CHANGED == "Changed the answers"
    assert plain_verdict(0.05, 0.05) == "Changed the answers"  # p ≤ α rejects, as decision() does
    assert plain_verdict(0.2, 0.05) == NO_CHANGE == "No change detected (this does not prove there is none)"
    assert technical_label(0.01, 0.05) == "REJECT H₀ at α = 0.05"
    assert technical_label(0.2, 0.01) == "FAIL TO REJECT H₀ at α = 0.01"
    assert rut_verdict(0.001, 0.05) == "Likely not the claimed model"
    assert rut_verdict(0.4, 0.05) == "Consistent with the claimed model (this does not prove it is)"


def test_no_negative_effect_as_a_headline():
    assert effect_in_words(-0.00401, -0.6) == NO_EFFECT == "none beyond chance"
    assert effect_in_words(0.0, 0.0) == "none beyond chance"
    assert effect_in_words(float("nan"), 1.0) == "none beyond chance"
    assert effect_in_words(0.02, 0.4) == "small: 0.4 × chance's spread"
    assert effect_in_words(0.02, 1.5) == "moderate: 1.5 × chance's spread"
    assert effect_in_words(0.3, 12.04) == "large: 12.0 × chance's spread"


def test_k_needed_is_the_normal_approximation_scaled_by_root_k():
    from scipy.stats import norm

    target = norm.ppf(0.95) + norm.ppf(0.8)  # ≈ 2.49
    assert k_needed(40, target, 0.05) == pytest.approx(40)  # already at the planned z: the same k
    assert k_needed(40, target / 2, 0.05) == pytest.approx(160)  # half the z: four times the k
    # a family of 6 (Bonferroni) needs more
    assert k_needed(40, 1.0, 0.05, m=6) > k_needed(40, 1.0, 0.05)
    assert math.isinf(k_needed(40, 0.0, 0.05)) and math.isinf(k_needed(40, -1.2, 0.05))
    with pytest.raises(ValueError, match="`k`"):
        k_needed(0, 1.0, 0.05)
    with pytest.raises(ValueError, match="`alpha`"):
        k_needed(40, 1.0, 1.5)


def test_k_needed_predicts_a_simulated_permutation_test():
    """The approximation against the real test: a mean shift whose z at k = 20 is about 1.25 (half the planned
    2.49) is predicted to need k ≈ 80; the permutation test at that k detects it in most of 40 audits (80 %
    planned; a broken scaling, e.g. k not √k, would predict k ≈ 40 and fall near 50 %)."""
    from dbpa_core.stats.permutation import dbpa_test

    rng = np.random.default_rng(3)
    shift, dim = 0.4, 8  # Cohen's d of the centroid along one axis
    predicted = []
    for _ in range(10):
        x, y = rng.normal(size=(20, dim)), rng.normal(size=(20, dim))
        y[:, 0] += shift
        x, y = x / np.linalg.norm(x, axis=1, keepdims=True), y / np.linalg.norm(y, axis=1, keepdims=True)
        result = dbpa_test(x, y, discrepancy="centroid", n_resamples=200, rng=rng)
        predicted.append(k_needed(20, result.standardized_effect, 0.05))
    k = int(np.median([p for p in predicted if math.isfinite(p)]))
    detected = 0
    for _ in range(40):
        x, y = rng.normal(size=(k, dim)), rng.normal(size=(k, dim))
        y[:, 0] += shift
        x, y = x / np.linalg.norm(x, axis=1, keepdims=True), y / np.linalg.norm(y, axis=1, keepdims=True)
        detected += dbpa_test(x, y, discrepancy="centroid", n_resamples=200, rng=rng).pvalue <= 0.05
    assert 20 <= k <= 400, k
    assert detected / 40 >= 0.6, (k, detected)


def test_missed_note_says_the_miss_and_the_k_needed():
    note = missed_note(0.52, 40, 1.0, 0.05)
    assert note.startswith("Missed: true effect 52 %, not detected at k = 40 — at this effect size about k = ")
    assert "would be needed (normal approximation:" in note and "80 % power at α = 0.05)" in note
    stated = int(note.split("about k = ")[1].split(" ")[0].replace(",", ""))
    assert stated >= k_needed(40, 1.0, 0.05) and stated % 10 == 0
    assert "α = 0.05/6" in missed_note(0.52, 40, 1.0, 0.05, m=6)
    assert "more than k = 2,000" in missed_note(0.52, 40, 0.1, 0.05)
    assert "cannot be estimated" in missed_note(0.52, 40, -0.3, 0.05)
