"""Streamlit glue shared by the pages: sidebar, cached resources, progress, errors.

Everything computational lives in :mod:`dbpa_core`; this package only turns
widgets into ``dbpa_core`` calls and results into elements.
"""
