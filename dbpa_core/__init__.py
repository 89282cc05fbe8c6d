"""dbpa_core: distribution-based perturbation analysis of LLM outputs.

Data flows one way: samplers → embedders → statistics → figures → pages.
This package never imports streamlit.  Public names are imported on first
use (PEP 562), so importing one submodule (e.g. ``dbpa_core.data.scenarios``) does
not pay for numba, scipy.stats and statsmodels: the app's first page appears
sooner.
"""

from importlib import import_module, metadata

try:
    #: The installed distribution's version; every report (JSON, CSV, HTML) records it.
    __version__ = metadata.version("dbpa-explorer")
except metadata.PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"

_PUBLIC = {
    "AdjustedPValues": "stats.corrections",
    "adjust_pvalues": "stats.corrections",
    "DISCREPANCIES": "stats.discrepancy",
    "get_discrepancy": "stats.discrepancy",
    "ChangeExplanation": "stats.explain",
    "explain_change": "stats.explain",
    "DBPAResult": "stats.permutation",
    "DegenerateSampleWarning": "stats.permutation",
    "dbpa_test": "stats.permutation",
    "dbpa_test_precomputed": "stats.permutation",
    "ManyPromptsResult": "stats.many",
    "dbpa_test_many": "stats.many",
    "PowerCurve": "stats.power",
    "required_sample_size": "stats.power",
    "simulate_power": "stats.power",
    "SampleSizePlan": "stats.planning",
    "compare_discrepancies": "stats.planning",
    "plan_sample_size": "stats.planning",
    "SequentialResult": "stats.sequential",
    "sequential_dbpa_test": "stats.sequential",
    "significance_stars": "present.formatting",
    "ROCResult": "stats.roc",
    "roc_analysis": "stats.roc",
    "RUTResult": "rut.uniformity",
    "rank_uniformity_test": "rut.uniformity",
    "SIMILARITIES": "stats.similarity",
    "similarity_matrix": "stats.similarity",
    "redact": "_validation",
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
