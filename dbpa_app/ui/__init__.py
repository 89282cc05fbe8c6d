"""Streamlit glue shared by the pages: sidebar, cached resources, progress, errors.

Everything computational lives in :mod:`dbpa_core`; this package only turns
widgets into ``dbpa_core`` calls and results into elements.  Importing it
prepares the server process once for many sessions
(:func:`ui.resources.prepare_process`): app.py and every page import it
before drawing anything, so no session draws while the process is prepared.
pandas and PIL are imported by each script run before its first figure
(:func:`ui.resources.import_figure_libraries`), not here: the home page's
verdict is drawn before them (issue 45).
"""

from .resources import prepare_process

prepare_process()
