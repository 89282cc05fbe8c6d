"""Appendix C's tables as a CSV reads them: one value per cell (issue 45).

On screen a C.2 / C.4 cell reads "0.41 ***", the statistic and its stars, as the paper prints it
(:func:`dbpa_core.present.reproduction_tables.grid_frame`).  A spreadsheet cannot sort or plot such a cell,
so the CSV splits it: per choice, this project's statistic, p, stars and decision, and the printed value and
stars, each in its own column.
"""

from __future__ import annotations

from ..paper import printed as pr
from ..paper.appendix_c import ChoiceGrid
from dbpa_core.present.formatting import significance_stars
from .reproduction_tables import col

#: The level the stars' first class and the decision column use (the paper's tables, unadjusted).
ALPHA = 0.05


def grid_values_frame(grid: ChoiceGrid, *, alpha: float = ALPHA):
    """C.2 / C.4 with one value per cell: per persona and choice, the statistic, p, stars, decision (this
    project) and the printed value and stars."""
    import pandas as pd

    printed = pr.TABLES[grid.table]
    columns: dict[str, list] = {"persona": list(grid.personas)}
    for j, choice in enumerate(grid.choices):
        statistics, pvalues = grid.statistics[:, j], grid.pvalues[:, j]
        columns[col(f"{choice} value", pr.THIS_PROJECT)] = [float(s) for s in statistics]
        columns[col(f"{choice} p", pr.THIS_PROJECT)] = [float(p) for p in pvalues]
        columns[col(f"{choice} stars", pr.THIS_PROJECT)] = [significance_stars(p) for p in pvalues]
        columns[col(f"{choice} decision at {alpha:g}", pr.THIS_PROJECT)] = [
            "significant" if p < alpha else "not significant" for p in pvalues]
        cells = [printed.value(persona, choice) for persona in grid.personas]
        columns[col(f"{choice} value", pr.PRINTED)] = [float(cell.value) for cell in cells]
        columns[col(f"{choice} stars", pr.PRINTED)] = [cell.stars for cell in cells]
    return pd.DataFrame(columns)
