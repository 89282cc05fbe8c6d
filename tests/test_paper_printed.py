"""dbpa_core.paper.printed: every "paper (printed)" value is the paper's, checked against its text."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import REPO
from dbpa_core.paper import printed as pr

PAPER = Path(os.environ.get("DBPA_PAPERS_DIR", REPO.parent / "shared" / "papers")) / "dbpa-paper-icml2025.txt"
#: A printed number with its stars: "0.41**", "1,300.0¢(\$13.00)" → ("1,300.0", "").
CELL = re.compile(r"^(\d[\d,]*(?:\.\d+)?)(\**)")


@pytest.fixture(scope="module")
def paper_text() -> str:
    if not PAPER.exists():
        if os.environ.get("CI"):
            pytest.fail(f"the paper's text is missing in CI: {PAPER}")
        pytest.skip(f"the paper's text is not available: {PAPER}")
    return PAPER.read_text(encoding="utf-8")


def data_lines(text: str, caption: str, count: int) -> list[list[str]]:
    """The first ``count`` data rows after a table's caption, split at tabs (header rows skipped)."""
    start = text.index(caption)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if "\t" not in line or line.startswith(("\t", "Persona", "#")):
            continue
        rows.append(line.split("\t"))
        if len(rows) == count:
            return rows
    raise AssertionError(f"{caption}: fewer than {count} rows")


@pytest.mark.parametrize(("table", "caption"), [
    (pr.TABLE2, "Table 2: Effect-size estimates ω"), (pr.TABLE3, "Table 3: **Effect-size estimates by persona"),
    (pr.TABLE4, "Table 4: Distributional distance measures"), (pr.TABLE5, "Table 5: Cost analysis"),
    (pr.TABLE6, "Table 6: Effect-size estimates using traditional NLP"),
    (pr.TABLE7, "Table 7: **Effect-size estimates by persona across different embedding models"),
])
def test_every_cell_is_the_papers(paper_text, table, caption):
    lines = data_lines(paper_text, caption, len(table.rows))
    for row, line in zip(table.rows, lines):
        cells = [CELL.match(cell.strip()) for cell in line[1:]]
        assert len(cells) == len(table.columns), (table.reference, row, line)
        for column, match in zip(table.columns, cells):
            value = table.value(row, column)
            assert (value.value, value.stars) == (float(match.group(1).replace(",", "")), match.group(2)), \
                (table.reference, row, column)
            assert value.reference == table.reference and (value.row, value.column) == (row, column)
        # rows are in the paper's order: the row label names the same persona or count
        label = line[0].lower().replace("act as a ", "").replace(",", "")
        assert label.split()[0] in row.lower(), (row, label)


def plain(text: str) -> str:
    """The text without its markdown emphasis and TeX escapes, whitespace collapsed (quotes drop those)."""
    text = text.replace("*", "").replace("\\$", "$")
    return re.sub(r"\s+([,.])", r"\1", " ".join(text.split()))


def test_findings_are_quoted_verbatim(paper_text):
    flat = plain(paper_text)
    for key, finding in pr.FINDINGS.items():
        if key == "sample_size":
            # the rule is printed as LaTeX: its parts must all be there
            assert "k_{\\text{adj}} \\propto" in paper_text and "z_{1-\\alpha/(2m)} + z_{1-\\beta}" in paper_text
            continue
        assert plain(finding.quote) in flat, (key, finding.quote[:60])


def test_figure_choices_and_table5_assumption_are_the_texts(paper_text):
    assert "for an allowed FPR of 1%, we would choose *Phi-3* whereas an allowed FPR of 5% would suggest " \
           "*Mistral-7B*" in paper_text
    assert pr.FIG2_BEST == {0.01: "Phi-3-mini", 0.05: "Mistral-7B"}
    assert "only two models—*SmolLM* and *LLama-3.1*—had significantly different" in paper_text
    assert "base model (GPT-4)" in paper_text and pr.FIG3_REFERENCE == "GPT-4"
    assert "assuming 200 tokens per perturbation on average" in paper_text
    # the table's own token column is 2 000 per perturbation (100 → 200,000), not the stated 200
    for row in pr.TABLE5.rows:
        assert pr.TABLE5.value(row, "tokens").value == pr.TABLE5_PRINTED_TOKENS_PER_PERTURBATION * int(row)
    for model, cents in pr.TABLE5_CENTS_PER_MILLION.items():
        assert f"{model} ({cents:g}¢/1M)" in paper_text


def test_lookup_and_significance():
    assert pr.TABLE2.value("child", "GPT-3.5") == pr.PrintedValue(0.33, "**", "Table 2", "child", "GPT-3.5")
    assert pr.TABLE2.significant("GPT-4") == ("comedian", "NeurIPS reviewer")
    assert pr.TABLE2.significant("GPT-3.5") == ("robot from the future", "NeurIPS reviewer", "child")
    assert pr.TABLE3.significant("800") == () and pr.TABLE3.significant("900") == ()  # C.1's stated finding
    with pytest.raises(KeyError, match="Table 2 has no cell"):
        pr.TABLE2.value("child", "GPT-5")
    assert pr.SOURCES == ("paper (printed)", "reference run", "this project")
