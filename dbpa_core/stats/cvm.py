"""The Cramér–von Mises statistic's null law under uniformity, as the RUT reads it (Anderson & Darling 1952;
Csörgő & Faraway 1996 for finite n)."""

from __future__ import annotations


#: Below this, a RUT p-value is reported as a bound only.  scipy computes the Cramér–von Mises
#: p-value as 1 − F_n(T) with Csörgő & Faraway's (1996) finite-n approximation of the null: against
#: 2·10⁶ simulated uniform samples (n = 4 … 50) it is within 20 % of the truth down to p ≈ 0.001, but
#: further out it loses accuracy (14× too small at p ≈ 4·10⁻⁵, n = 8) and is clipped to exactly 0.
RUT_PVALUE_RESOLUTION = 0.001


def cvm_critical_value(n: int, level: float = 0.95) -> float:
    """The ``level`` point of W² under uniformity for n ranks: the law scipy's ``cramervonmises`` p-value uses.

    n = 4 gives 0.445, n → ∞ 0.461 (Anderson & Darling 1952); a sentence quoting 0.461 beside a p-value
    computed for n = 4 contradicted it (W² = 0.456 with p = 0.046 read "more than 0.46 in only 5 %").
    """
    from scipy.optimize import brentq

    try:
        from scipy.stats._hypotests import _cdf_cvm  # scipy's finite-n law (Csörgő & Faraway 1996)
    except ImportError:  # pragma: no cover - a scipy without it: the asymptotic point
        return 0.461
    return float(brentq(lambda x: _cdf_cvm(x, n) - level, 1e-3, 5.0, xtol=1e-6))
