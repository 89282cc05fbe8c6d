"""Tests of dbpa_core._validation, through the public functions that use it."""

from __future__ import annotations

import numpy as np
import pytest

import dbpa_core as d
from dbpa_core._validation import (check_base_url, check_choice, check_positive_int,
                                   check_temperature, is_secret_name)
from dbpa_core.stats.permutation import MAX_RESAMPLES


def test_huge_norms_are_refused_not_read_as_identical_outputs():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(10, 4)), rng.normal(size=(10, 4)) + 1
    with pytest.raises(ValueError, match="`x` row 0 has a norm too large to compute"):
        d.dbpa_test(x * 1e160, y, rng=0)
    with pytest.raises(ValueError, match="`y` row 0 has a norm too large"):
        d.dbpa_test(x, y * 1e160, rng=0)
    # large but computable norms are fine, and cosine does not care about scale
    assert d.dbpa_test(x * 1e100, y, rng=0).pvalue == d.dbpa_test(x, y, rng=0).pvalue


def test_complex_embeddings_are_refused():
    x = np.ones((5, 3)) + 1j
    with pytest.raises(ValueError, match="`x` is complex; embeddings must be real"):
        d.dbpa_test(x, np.ones((5, 3)), rng=0)
    with pytest.raises(ValueError, match="`similarity_matrix` is complex"):
        d.dbpa_test_precomputed(np.eye(6) * (1 + 1j), 3)


def test_resamples_are_bounded():
    x, y = np.eye(6)[:3], np.eye(6)[3:]
    for call in (lambda b: d.dbpa_test(x, y, n_resamples=b), lambda b: d.dbpa_test_precomputed(np.eye(6), 3,
                                                                                             n_resamples=b)):
        with pytest.raises(ValueError, match=r"`n_resamples` must be an integer >= 1 and <= 1,000,000 \(10⁶ re-splits "
                                             r"resolve p-values down to 10⁻⁶.*\); got 100,000,000,000"):
            call(10**11)
    assert check_positive_int(MAX_RESAMPLES, "n_resamples", maximum=MAX_RESAMPLES) == MAX_RESAMPLES


def test_check_choice_matches_case_and_returns_the_listed_spelling():
    assert check_choice("HOLM", "method", ("bonferroni", "holm")) == "holm"
    assert check_choice("ELI5", "perturbations", ("ELI5", "x")) == "ELI5"
    assert check_choice("eli5", "perturbations", ("ELI5", "x")) == "ELI5"
    with pytest.raises(ValueError, match="`method` must be one of 'bonferroni', 'holm'; got 'bh'"):
        check_choice("bh", "method", ("bonferroni", "holm"))
    with pytest.raises(ValueError, match="got 3"):
        check_choice(3, "method", ("bonferroni",))


@pytest.mark.parametrize("value", [-0.1, 5.5, float("nan"), "hot", None])
def test_check_temperature(value):
    with pytest.raises(ValueError, match=r"`sampler.temperature` must be a number in \[0, 5\]"):
        check_temperature(value, "sampler.temperature")


def test_check_base_url():
    assert check_base_url("  http://127.0.0.1:8000/v1 ") == "http://127.0.0.1:8000/v1"
    assert check_base_url("") is None and check_base_url(None) is None
    with pytest.raises(ValueError, match="`base_url` has an invalid port"):
        check_base_url("http://host:99999999/v1")
    with pytest.raises(ValueError, match="got 'localhost:8000/v1'. Write e.g. http://localhost:8000/v1"):
        check_base_url("localhost:8000/v1")
    with pytest.raises(ValueError, match="must start with http:// or https://; got 'ftp://host/'"):
        check_base_url("ftp://u:SECRET@host/")  # the message itself never shows the credential


def test_secret_names():
    assert all(is_secret_name(n) for n in ("api_key", "apikey", "Authorization", "x-api-key", "token", "auth"))
    assert not any(is_secret_name(n) for n in ("max_tokens", "model", "keyword", "author"))


def test_has_credentials():
    from dbpa_core._validation import has_credentials

    assert has_credentials("http://u:p@h/v1") and has_credentials("http://h/v1?API-KEY=x")
    assert not has_credentials("http://h:8000/v1?model=a b#frag") and not has_credentials(None)
