"""Result tables as pandas DataFrames (the ``results.csv`` side of the exports)."""

from __future__ import annotations

from .formatting import significance_stars
from .readings import correction_name, decision


def family_table(labels, kinds, statistics, pvalues, adjusted, *, true_effects=None):
    """The many-perturbations table as a pandas DataFrame (one row per perturbation)."""
    import pandas as pd

    table = pd.DataFrame({
        "perturbation": list(labels),
        "kind": list(kinds),
        "ω": list(statistics),
        "p": list(pvalues),
        f"p adjusted ({correction_name(adjusted.method)})": list(adjusted.pvalues_adjusted),
        "stars": [significance_stars(p) for p in adjusted.pvalues_adjusted],
        "decision": [decision(p, adjusted.alpha) for p in adjusted.pvalues_adjusted],
    })
    if true_effects is not None:
        table.insert(2, "true effect (simulated)", list(true_effects))
    return table
