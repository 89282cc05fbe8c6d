"""``{cli-help}`` directive: the command line's own ``--help`` text, so the reference never drifts from it.

    ```{cli-help} audit
    ```
"""

from __future__ import annotations

import contextlib
import io

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def help_text(command: str) -> str:
    from dbpa_core.__main__ import main

    out = io.StringIO()
    argv = [*command.split(), "--help"] if command else ["--help"]
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(argv)
    return out.getvalue().replace("python -m dbpa_core", "dbpa")


class CliHelp(SphinxDirective):
    optional_arguments = 1
    final_argument_whitespace = True

    def run(self):
        command = self.arguments[0] if self.arguments else ""
        block = nodes.literal_block(text=help_text(command))
        block["language"] = "text"
        return [block]


def setup(app):
    app.add_directive("cli-help", CliHelp)
    return {"version": "1", "parallel_read_safe": True}
