"""dbpa_core: distribution-based perturbation analysis of LLM outputs.

Data flows one way: samplers → embedders → statistics → figures → pages.
This package never imports streamlit.
"""

from .corrections import AdjustedPValues, adjust_pvalues
from .discrepancy import DISCREPANCIES, get_discrepancy
from .permutation import DBPAResult, DegenerateSampleWarning, dbpa_test, dbpa_test_precomputed
from .power import PowerCurve, required_sample_size, simulate_power
from .reporting import significance_stars
from .roc import ROCResult, roc_analysis
from .uniformity import RUTResult, rank_uniformity_test
from .similarity import SIMILARITIES, similarity_matrix

__all__ = [
    "AdjustedPValues",
    "DBPAResult",
    "DISCREPANCIES",
    "DegenerateSampleWarning",
    "PowerCurve",
    "ROCResult",
    "RUTResult",
    "SIMILARITIES",
    "adjust_pvalues",
    "dbpa_test",
    "dbpa_test_precomputed",
    "get_discrepancy",
    "rank_uniformity_test",
    "required_sample_size",
    "roc_analysis",
    "significance_stars",
    "simulate_power",
    "similarity_matrix",
]
