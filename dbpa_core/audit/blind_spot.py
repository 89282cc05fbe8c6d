"""What DBPA's default cannot see: an original arm spread evenly in every direction.

DBPA (Rauba, Wei & van der Schaar, ICML 2025, §3) compares P0, the
similarities of the original outputs with each other, with P1, their
similarities with the perturbed outputs.  When the original outputs point
every way evenly (an isotropic cloud), a cosine similarity with any output —
changed or not — is distributed as one between two original outputs, so P1
looks like P0 however far the perturbed arm moved: ω on P0 vs P1 (JSD, JS
distance, W1, KS) then has power ≈ α at every k.  The energy distance and
MMD compare the outputs themselves and see the move.  This module runs that
example live (:func:`blind_spot_example`); tests/test_blind_spot.py pins it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._validation import check_positive_float, check_positive_int, check_probability
from ..stats.power import gaussian_shift, simulate_power

#: The example's settings: 16-D standard normal original outputs, the perturbed ones shifted along one axis.
DIM, SHIFT, K = 16, 1.5, 40


@dataclass(frozen=True, eq=False)
class BlindSpotExample:
    """Result of :func:`blind_spot_example`.

    Attributes
    ----------
    k, dim : int
        Outputs per arm and their dimension.
    shift : float
        How far the perturbed arm moved, in standard deviations of one output.
    alpha : float
    n_trials, n_resamples : int
        Simulated audits and the re-splits B of each.
    rates : dict of str -> (float, float, float)
        ω → (share of audits that rejected, 95 % interval low, high).
    """

    k: int
    dim: int
    shift: float
    alpha: float
    n_trials: int
    n_resamples: int
    rates: dict

    @property
    def reading(self) -> str:
        """The example in plain words, with its measured rates."""
        shares = "; ".join(f"{name}: {rate * 100:.0f} % (95 % interval {low * 100:.0f}–{high * 100:.0f} %)"
                           for name, (rate, low, high) in self.rates.items())
        return (f"The original arm's {self.k} outputs are spread evenly in every direction ({self.dim} "
                f"dimensions); the perturbed arm's are moved {self.shift:g} standard deviations along one. Of "
                f"{self.n_trials} such audits at α = {self.alpha:g}, the share that found the change: {shares}. "
                "A rate near α is what a test gives when nothing changed: DBPA's default compares how similar "
                "the original outputs are to each other (P0) with how similar they are to the perturbed ones "
                "(P1), and when the originals point every way evenly, any output is as similar to them as they "
                "are to each other, so P1 looks like P0 whatever moved. The energy distance and MMD compare the "
                "outputs themselves: choose one of them when the original answers vary widely.")


def blind_spot_example(*, k: int = K, dim: int = DIM, shift: float = SHIFT, discrepancies=("jsd", "energy"),
                       n_trials: int = 100, n_resamples: int = 199, alpha: float = 0.05,
                       rng=0) -> BlindSpotExample:
    """Rejection rate of DBPA (cosine similarity) per ω on an isotropic original arm and a shifted perturbed one.

    Parameters
    ----------
    k : int
        Outputs per arm.
    dim : int
        Dimension of the outputs (standard normal in the original arm).
    shift : float
        Shift of the perturbed arm along the first axis, in standard deviations.
    discrepancies : sequence of str
        ω compared (each on the same seed).
    n_trials, n_resamples, alpha
        Simulated audits, re-splits B per audit, level.
    rng : int
        Seed (each ω sees the same arms).

    Returns
    -------
    BlindSpotExample
    """
    k = check_positive_int(k, "k", minimum=2)
    dim = check_positive_int(dim, "dim", minimum=2)
    shift = check_positive_float(shift, "shift")
    alpha = check_probability(alpha, "alpha")
    names = list(discrepancies)
    if not names:
        raise ValueError("`discrepancies` must name at least one ω.")
    rates = {}
    for name in names:
        curve = simulate_power([k], generator=gaussian_shift(shift, dim=dim), n_trials=n_trials, alpha=alpha,
                               similarity="cosine", discrepancy=name, n_resamples=n_resamples, rng=rng)
        rates[str(name)] = (float(curve.power[0]), float(curve.ci_low[0]), float(curve.ci_high[0]))
    return BlindSpotExample(k, dim, shift, alpha, int(n_trials), int(n_resamples), rates)
