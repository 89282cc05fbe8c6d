"""Exports read by spreadsheets: a cell that starts with `=`, `+`, `-` (not a number), `@`, a tab or a
carriage return is neutralised (OWASP's CSV injection rule) in every CSV the project writes — the
command line's results.csv and themes, and the app's table downloads — through one function."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbpa_core.present.tables import csv_safe

from .conftest import assert_clean, cli, write_spec

REPO = Path(__file__).resolve().parents[2]
FORMULAS = ["=HYPERLINK(\"http://evil.example\",\"click\")", "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
            "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1", "  =1+1", "＝1+1", "-", "+"]
NUMBERS = ["-0.5", "+3", "-1e-3", "12", "-.5"]
RISKY = re.compile(r"^\s*[=+\-@\t\r＝＋－＠]")


def test_streamlit_writes_no_csv_of_its_own():
    """st.dataframe's own "Download as CSV" bypasses csv_safe: the app's config turns it off."""
    import tomllib

    config = tomllib.loads((REPO / "dbpa_app" / "config.toml").read_text())
    assert config["client"]["disableDataExport"] is True


@pytest.mark.parametrize("text", FORMULAS)
def test_formula_cells_are_neutralised(text):
    assert csv_safe(text) == "'" + text


@pytest.mark.parametrize("value", [*NUMBERS, 3, -2.5, None, True, "plain text", "a = b"])
def test_numbers_and_plain_text_pass(value):
    assert csv_safe(value) == value


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=30))
def test_property_no_cell_can_start_a_formula(text):
    safe = csv_safe(text)
    assert safe in (text, "'" + text)
    if safe == text and RISKY.match(text):
        assert re.fullmatch(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*", text)  # a plain number


def cells(csv_text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(csv_text)) for cell in row]


def test_frame_csv_neutralises_cells_and_column_names():
    from dbpa_core.present.tables import frame_csv

    frame = pd.DataFrame({"=label": FORMULAS, "value": range(len(FORMULAS))})
    for cell in cells(frame_csv(frame)):
        assert not RISKY.match(cell) or cell.lstrip("-").replace(".", "").isdigit(), cell


def test_results_csv_of_an_audit_with_hostile_labels(tmp_path):
    spec = {"name": "t", "sampler": {"backend": "simulated"}, "k": 4, "n_resamples": 20, "discrepancy": "energy",
            "prompts": {"original": {"prompt": "What causes the seasons?"}, "perturbations": [
                {"id": f"p{i}", "label": formula, "prompt": f"Why do seasons happen, version {i}?"}
                for i, formula in enumerate(FORMULAS[:6])]}}
    assert_clean(cli("audit", write_spec(tmp_path, spec), "--out", tmp_path / "o", "--store", tmp_path / "s.sqlite"),
                 0)
    written = (tmp_path / "o" / "results.csv").read_bytes().decode("utf-8")  # no newline translation
    labels = [row[0] for row in csv.reader(io.StringIO(written))][1:]
    assert labels == ["'" + formula for formula in FORMULAS[:6]]


def test_every_csv_the_project_writes_goes_through_frame_csv():
    """No module writes a CSV by itself: `.to_csv(` appears only inside frame_csv."""
    offenders = []
    for path in [*REPO.glob("dbpa_core/**/*.py"), *REPO.glob("dbpa_app/**/*.py")]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if ".to_csv(" in line and not (path.name == "tables.py" and "safe.to_csv" in line):
                offenders.append(f"{path.relative_to(REPO)}:{number}")
            if "csv.writer(" in line or "DictWriter(" in line:
                offenders.append(f"{path.relative_to(REPO)}:{number}")
    assert not offenders, offenders
