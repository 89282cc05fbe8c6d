"""Presenting results: plain-language readings, exports, figures, 2-D projections.

=================  ==========================================================
readings           one sentence per number; stars; decisions; p formats
exports            JSON records, CSV tables, self-contained HTML reports
figures            Plotly figures built from result objects (compute nothing)
explanation        tables and figures of "What changed" (themes, representatives)
projection         PCA / UMAP of embeddings for the output clouds
=================  ==========================================================

Everything here takes result objects made upstream and never recomputes a
statistic, so the screen and every export show the same numbers.
"""
