"""dbpa_core.audit.blind_spot: DBPA's default cannot see a move away from an isotropic original arm; energy can."""

import numpy as np
import pytest

from dbpa_core.audit.blind_spot import K, blind_spot_example


def test_jsd_power_is_alpha_while_energy_detects_the_move():
    example = blind_spot_example(n_trials=100)
    jsd, _, _ = example.rates["jsd"]
    energy, _, _ = example.rates["energy"]
    # Within Monte Carlo error of α (3 standard errors of 100 audits at 5 %), however far the arm moved.
    assert abs(jsd - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / 100), jsd
    assert energy >= 0.9, energy
    assert example.k == K == 40
    assert f"jsd: {jsd * 100:.0f} %" in example.reading and f"energy: {energy * 100:.0f} %" in example.reading
    assert "so P1 looks like P0 whatever moved" in example.reading


def test_a_non_isotropic_original_arm_is_not_blind():
    # Contrast: the same move seen with −L2 similarity breaks the symmetry, and the JSD sees it more often than α.
    from dbpa_core.stats.power import gaussian_shift, simulate_power

    curve = simulate_power([K], generator=gaussian_shift(1.5, dim=16), n_trials=60, similarity="neg_l2",
                           discrepancy="jsd", n_resamples=199, rng=0)
    assert curve.power[0] > 0.2


@pytest.mark.parametrize(("change", "match"), [(dict(k=1), "`k`"), (dict(dim=1), "`dim`"), (dict(shift=-1), "`shift`"),
                                           (dict(discrepancies=()), "`discrepancies`"), (dict(alpha=2), "`alpha`")])
def test_bad_input(change, match):
    with pytest.raises(ValueError, match=match):
        blind_spot_example(**change)
