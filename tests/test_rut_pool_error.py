"""Tests of dbpa_core.rut.pool_error: the prompt bootstrap of a power-AUC difference between two methods."""

from __future__ import annotations

import numpy as np
import pytest

from dbpa_core.rut.pool_error import PoolError, prompt_bootstrap, resample_prompts
from dbpa_core.rut.pools import Arm, RUTPools
from dbpa_core.rut.scoring import SCORES

SETTINGS = dict(n_prompts=20, m=10, q_values=[0.0, 0.5, 1.0], n_resamples=19)


def heterogeneous_pools(seed, prompts=30):
    """A substitute that shifts the log-rank score on some prompts a lot and on others not at all: which prompts
    a pool holds moves every method's power, so the pool carries an error of its own."""
    rng = np.random.default_rng(seed)
    shift = np.where(rng.random((prompts, 1)) < 0.3, 2.0, 0.0)

    def arm(name, kind, n, moved):
        scores = {s: rng.normal(size=(prompts, n)) for s in SCORES}
        scores["log_rank"] = shift * moved + rng.standard_t(2, size=(prompts, n))
        return Arm(name, kind, name, rng.integers(0, 3, size=(prompts, n, 4)), scores)

    return RUTPools(tuple(f"p{i}" for i in range(prompts)), arm("reference", "reference", 24, 0),
                    {"sub": arm("sub", "quantization", 6, 1)})


def test_resampled_prompts_keep_their_answers():
    pools = heterogeneous_pools(0)
    rows = [3, 3, 0]
    again = resample_prompts(pools, rows)
    assert again.prompts == ("p3", "p3", "p0")
    for name, arm in (("reference", again.reference), ("sub", again.substitutes["sub"])):
        source = pools.reference if name == "reference" else pools.substitutes["sub"]
        np.testing.assert_array_equal(arm.tokens, source.tokens[rows])
        for s in SCORES:
            np.testing.assert_array_equal(arm.scores[s], source.scores[s][rows])


def test_bootstrap_error_matches_the_spread_over_fresh_pools():
    """The SE with the pool counted ≈ the SD of the difference over pools drawn afresh from the generator (the
    truth the shipped study cannot see), and the pool's part is found above zero."""
    fresh = [prompt_bootstrap(heterogeneous_pools(100 + s), "sub", n_boot=2, n_trials=40, rng=s, **SETTINGS)
             for s in range(16)]
    spread = np.std([f.difference for f in fresh], ddof=1)
    found = prompt_bootstrap(heterogeneous_pools(7), "sub", n_boot=30, n_trials=40, rng=1, **SETTINGS)
    assert isinstance(found, PoolError) and found.replicates.shape == (30,)
    assert found.pool_se > 0
    assert 0.5 < found.se / spread < 2.0, (found.se, found.mc_se, spread)
    assert found.reading.startswith("rut − ks power AUC against sub:")


def test_bad_input_names_the_field():
    pools = heterogeneous_pools(0)
    with pytest.raises(ValueError, match="`first`"):
        prompt_bootstrap(pools, "sub", "lrt", n_boot=2, n_trials=2, **SETTINGS)
    with pytest.raises(ValueError, match="`n_boot`"):
        prompt_bootstrap(pools, "sub", n_boot=1, n_trials=2, **SETTINGS)
