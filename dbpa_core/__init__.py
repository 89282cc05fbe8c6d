"""dbpa_core: distribution-based perturbation analysis of LLM outputs.

Data flows one way: samplers → embedders → statistics → figures → pages.
This package never imports streamlit.  Public names are imported on first
use (PEP 562), so importing one submodule (e.g. ``dbpa_core.scenarios``) does
not pay for numba, scipy.stats and statsmodels: the app's first page appears
sooner.
"""

from importlib import import_module

_PUBLIC = {
    "AdjustedPValues": "corrections",
    "adjust_pvalues": "corrections",
    "DISCREPANCIES": "discrepancy",
    "get_discrepancy": "discrepancy",
    "DBPAResult": "permutation",
    "DegenerateSampleWarning": "permutation",
    "dbpa_test": "permutation",
    "dbpa_test_precomputed": "permutation",
    "PowerCurve": "power",
    "required_sample_size": "power",
    "simulate_power": "power",
    "significance_stars": "reporting",
    "ROCResult": "roc",
    "roc_analysis": "roc",
    "RUTResult": "uniformity",
    "rank_uniformity_test": "uniformity",
    "SIMILARITIES": "similarity",
    "similarity_matrix": "similarity",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(import_module(f".{_PUBLIC[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dbpa_core' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
