"""JSON-ready records of results (the ``report.json`` side of the exports)."""

from __future__ import annotations

from .formatting import significance_stars
from .readings import read_sequential


def result_to_dict(result, **context) -> dict:
    """A JSON-ready record of a :class:`~dbpa_core.stats.permutation.DBPAResult` and its context."""
    import numpy as np

    record = {
        "statistic": result.statistic, "pvalue": result.pvalue, "effect_size": result.effect_size,
        "standardized_effect": result.standardized_effect, "n_original": result.n_original,
        "n_perturbed": result.n_perturbed, "n_resamples": result.n_resamples, "exact": result.exact,
        "similarity": result.similarity, "discrepancy": result.discrepancy, "alternative": result.alternative,
        "warnings": list(result.warnings), "stars": significance_stars(result.pvalue),
        "null_distribution": np.asarray(result.null_distribution).tolist(),
    }
    if result.kind == "sequential":
        # A sequential test decides by its boundary (its stage-wise p against the α spent so far): the record
        # says so and carries the plan and the looks, which a fixed-k record has no place for (trial 7).
        record.update({
            "design": "sequential", "pvalue_kind": "stage-wise ordering p-value at the stop",
            "reject": bool(result.reject), "stopped": result.stopped, "n_per_arm": result.n_per_arm,
            "k_max": result.k_max, "batch_size": result.batch_size, "spending": result.spending,
            "futility": result.futility, "alpha_spent_over_looks": result.alpha,
            "looks": [{"n_per_arm": look.n_per_arm, "statistic": look.statistic,
                       "boundary": None if np.isinf(look.boundary) else look.boundary, "pvalue": look.pvalue,
                       "alpha_spent": look.alpha_spent} for look in result.looks],
            "reading": read_sequential(result)})
    record.update(context)
    return record
