"""The command line's progress bar on stderr: one line redrawn in place on a terminal, one line per finished stage in a log."""

from __future__ import annotations

import sys
import time

from .._validation import shown


class ProgressBar:
    """A one-line progress bar on stderr (redrawn in place on a terminal)."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.last = 0.0

    def __call__(self, stage: str, done: int, total: int):
        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return None
        self.last = now
        width = 30
        filled = int(width * done / max(total, 1))
        line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {shown(stage)}"
        end = "\r" if self.stream.isatty() and done < total else "\n"
        if end == "\n" and done < total and not self.stream.isatty():
            return None  # a log file gets one line per finished stage
        self.stream.write(f"\r{line[:120]:<120}{end}" if self.stream.isatty() else line + "\n")
        self.stream.flush()
        return None

    def update(self, update) -> None:
        """The bar of a :class:`dbpa_core.audit.arms.RunUpdate` (the audit runner's progress hook)."""
        if update.stage in ("sampling", "embedding"):  # not each output, nor each drawn arm
            self(update.text, update.done, update.total)
