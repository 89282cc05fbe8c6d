"""``python -m dbpa_app [STREAMLIT OPTIONS]``: run Streamlit on the packaged app with the packaged settings.

Streamlit reads ``.streamlit/config.toml`` from the working directory, which an
installed app does not have; the packaged ``config.toml`` (why each setting is
set is written there) is passed as command-line options instead, and options
given here come after it, so they win (``--server.port 8601``).
"""

from __future__ import annotations

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


def streamlit_command(user_options: list[str]) -> list[str]:
    """The command that starts the app: this interpreter's Streamlit on ``app.py``."""
    return [sys.executable, "-m", "streamlit", "run", str(HERE / "app.py"), *config_options(), *user_options]


def main(argv: list[str] | None = None) -> None:
    command = streamlit_command(list(sys.argv[1:] if argv is None else argv))
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
