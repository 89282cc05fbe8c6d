"""The decision rule of a DBPA test, fixed-k or sequential: one home, read by every page, command and report."""

from __future__ import annotations


def declares_change(result, alpha: float) -> bool:
    """Whether ``result`` declares a change: p ≤ α for a fixed-k test; a sequential test by its own boundary
    at the stop (``reject``: its stage-wise p against the α spent, not p against ``alpha``)."""
    return bool(result.reject) if result.kind == "sequential" else result.pvalue <= alpha
