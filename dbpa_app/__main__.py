"""``python -m dbpa_app [STREAMLIT OPTIONS]``: run Streamlit on the packaged app with the packaged settings.

Streamlit reads ``.streamlit/config.toml`` from the working directory, which an
installed app does not have; the packaged ``config.toml`` (why each setting is
set is written there) is passed as command-line options instead, and options
given here come after it, so they win (``--server.port 8601``).

With a Streamlit that has ``st.App`` (requirements.txt pins 1.67, which has it) the file run is
``serve.py``: the same app behind a middleware that answers Streamlit's frontend files from memory
(``static_cache.py``: a new visitor costs the server a fraction of the CPU).  An older Streamlit runs
``app.py`` as before.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent


def config_options(path: Path = HERE / "config.toml") -> list[str]:
    """The packaged settings as Streamlit options (``--section.name=value``)."""
    options = []
    for section, values in tomllib.loads(path.read_text(encoding="utf-8")).items():
        for name, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            options.append(f"--{section}.{name}={text}")
    return options


def serves_st_app() -> bool:
    """Whether the installed Streamlit serves an ``st.App`` found in the file given to ``streamlit run``.

    Read from its files, not by importing it (``import streamlit`` would cost this short-lived process ≈ 1 s
    before the server's own start).
    """
    spec = importlib.util.find_spec("streamlit")
    if spec is None or spec.origin is None:
        return False
    root = Path(spec.origin).parent
    return (root / "starlette.py").is_file() and (root / "web" / "server" / "app_discovery.py").is_file()


def streamlit_command(user_options: list[str]) -> list[str]:
    """The command that starts the app: this interpreter's Streamlit on ``serve.py`` (or ``app.py``)."""
    script = HERE / ("serve.py" if serves_st_app() else "app.py")
    return [sys.executable, "-m", "streamlit", "run", str(script), *config_options(), *user_options]


def main(argv: list[str] | None = None) -> None:
    command = streamlit_command(list(sys.argv[1:] if argv is None else argv))
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
