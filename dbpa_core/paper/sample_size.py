"""§3.2's sample-size rule as a table for the paper's settings.

The paper prints the rule, not a table: with m perturbations tested at family-wise level α (Bonferroni,
α/m each) and power 1 − β, the Monte Carlo samples per arm grow as

.. math::  k_\\text{adj} \\propto \\left(\\frac{z_{1-\\alpha/(2m)} + z_{1-\\beta}}{\\omega}\\right)^2 .

Here the constant is 2 (:func:`dbpa_core.stats.power.required_sample_size`: ω is Cohen's d, a shift of the
outputs' mean in standard deviations of one output, and in the normal approximation two arms of k give a
z-score of ω√(k/2)), so the table reads in outputs per arm — and in ratios: how much more sampling a larger
family or a smaller effect costs — and against the paper's own k = 20, whose detectable effect is given per
family.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ..stats.power import detectable_effect, required_sample_size
from .loaders import ARM_SIZE

#: The family sizes m of the paper's experiments.
FAMILIES = MappingProxyType({
    1: "one perturbation",
    8: "Table 2: 8 personas of one model",
    16: "Figs 1–2 on cvd_nice: 8 controls + 8 targets",
    72: "Table 2 as one family: 8 personas × 9 models",
})
EFFECTS = (0.2, 0.5, 0.8, 1.0)


@dataclass(frozen=True, eq=False)
class SampleSizeTable:
    """k per arm for each family size m (rows) and standardised effect ω (columns).

    Attributes
    ----------
    families : mapping of int -> str
        m and what it counts in the paper.
    effects : tuple of float
    k : mapping of (m, effect) -> int
    alpha, power : float
    k_paper : int
        Samples per arm of the paper's runs (20).
    detectable : mapping of int -> float
        The smallest ω that ``k_paper`` detects with this power, per m.
    """

    families: dict
    effects: tuple[float, ...]
    k: dict
    alpha: float
    power: float
    k_paper: int
    detectable: dict


def sample_size_table(families: Sequence[int] | None = None, effects: Sequence[float] = EFFECTS, *,
                      alpha: float = 0.05, power: float = 0.8, k_paper: int = ARM_SIZE) -> SampleSizeTable:
    """§3.2's rule for the paper's family sizes (:data:`FAMILIES`) and a range of effects.

    Parameters
    ----------
    families : sequence of int, optional
        Family sizes m (default the keys of :data:`FAMILIES`).
    effects : sequence of float
        Effects ω (Cohen's d).
    alpha, power : float
        Family-wise level and power (the paper's α = 0.05; β = 0.2 is the usual choice).
    k_paper : int
        The sample size whose detectable effect is reported (default the paper's 20).

    Returns
    -------
    SampleSizeTable
    """
    ms = tuple(FAMILIES) if families is None else tuple(families)
    if not ms:
        raise ValueError("`families` must list at least one family size m.")
    effects = tuple(effects)
    if not effects:
        raise ValueError("`effects` must list at least one effect ω.")
    k = {(m, e): required_sample_size(e, alpha=alpha, power=power, m=m) for m in ms for e in effects}
    detectable = {m: detectable_effect(k_paper, alpha=alpha, power=power, m=m) for m in ms}
    # plain dicts: the app caches results by pickling them (a MappingProxyType does not pickle)
    return SampleSizeTable({m: FAMILIES.get(m, f"{m} perturbations") for m in ms}, effects, k, float(alpha),
                           float(power), int(k_paper), detectable)
