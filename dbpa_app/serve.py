"""The server ``python -m dbpa_app`` starts: Streamlit's ``st.App`` on app.py, with the frontend files from memory.

``python -m dbpa_app`` runs ``streamlit run`` on this file (when the installed Streamlit has ``st.App``);
Streamlit finds ``app`` below and serves it with its own server (uvicorn), its routes, middleware and
runtime — the same pages, sessions and settings as ``streamlit run app.py`` — with one middleware in front:
:class:`dbpa_app.static_cache.StaticFromMemory`, which answers Streamlit's content-hashed frontend files
from memory once Streamlit has served each the first time (the bulk of a new visitor's cost to the server;
``tests/test_static_cache.py`` counts it, ``bench/bench_static.py`` measures it).
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

import streamlit as st
from starlette.middleware import Middleware

from dbpa_app.static_cache import StaticFromMemory


def _open_browser() -> None:
    """What ``streamlit run app.py`` does once the server is up, unless headless: open the app's address."""
    from streamlit import cli_util, config
    from streamlit.web.server import server_util

    if config.is_manually_set("browser.serverAddress"):
        address = config.get_option("browser.serverAddress")
    elif config.is_manually_set("server.address"):
        address = server_util.get_display_address(config.get_option("server.address"))
    else:
        address = "localhost"
    cli_util.open_browser(server_util.get_url(address))


@asynccontextmanager
async def _started(_app):
    from streamlit import config

    # st.App's runner prints the address but, unlike `streamlit run app.py`, opens no browser.
    if not config.get_option("server.headless"):
        asyncio.get_running_loop().call_soon(_open_browser)
    yield


app = st.App("app.py", middleware=[Middleware(StaticFromMemory)], lifespan=_started)
