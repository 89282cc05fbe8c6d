"""DBPA Explorer's Streamlit app: the routing table (``app.py``), one view per panel (``views/``), and ``ui``.

Start it with ``dbpa app`` or ``python -m dbpa_app`` (both run Streamlit on the
packaged ``app.py`` with the packaged ``config.toml``).  Importing this package
imports nothing else: the launcher must start before Streamlit does.
"""
