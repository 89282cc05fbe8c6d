"""Presenting results: plain-language readings, exports, figures, 2-D projections.

=====================  ======================================================
formatting             numbers, p-values (and their floors), stars, shares
readings               one sentence per number of the DBPA test; decisions
rut_readings           the RUT audit's sentences
explanation_readings   "What changed"'s sentences
paper_readings         the papers' experiments' sentences
records                JSON-ready records of results
tables                 result tables (DataFrames)
exports                JSON records, CSV tables, self-contained HTML reports
figures                Plotly figures built from result objects (compute nothing)
explanation            tables and figures of "What changed" (themes, representatives)
projection             PCA / UMAP of embeddings for the output clouds
=====================  ======================================================

Everything here takes result objects made upstream and never recomputes a
statistic, so the screen and every export show the same numbers.
"""
