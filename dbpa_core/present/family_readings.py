"""Sentences about a family of tests that carry a number (shown by the pages, usable by the reports)."""

from __future__ import annotations

from dbpa_core.present.formatting import format_percent

from ..stats.corrections import uncorrected_fwer


def read_uncorrected_fwer(alpha: float, m: int) -> str:
    """Why the family is corrected, with its number: the false-alarm risk of ``m`` uncorrected tests at α."""
    return (f"With {m} tests each at α = {alpha:g}, the chance of at least one false alarm could reach "
            f"{format_percent(uncorrected_fwer(alpha, m))} without correction.")
