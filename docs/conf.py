"""Sphinx configuration of DBPA Explorer's documentation site.

Sphinx with numpydoc, as scipy and scikit-learn do: the package's docstrings
are numpydoc, so the API reference renders them as written; MyST reads the
Markdown pages; myst-nb executes the tour notebook on every build, so a
notebook that no longer runs fails the build.  Built in CI with ``-W
--keep-going``: a broken reference, link or anchor is an error.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

import dbpa_core  # noqa: E402

project = "DBPA Explorer"
author = "DBPA Explorer maintainers"
copyright = "2026, DBPA Explorer maintainers (MIT)"
release = dbpa_core.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "cli_help",
]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"

# Markdown: heading anchors so that `page.md#a-heading` links are checked.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

# The notebook runs on every build; an error in a cell fails the build.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 600

autodoc_default_options = {"members": False}
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
nitpicky = False

html_theme = "pydata_sphinx_theme"
html_title = f"DBPA Explorer {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path = []
