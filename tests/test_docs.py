"""The documentation: a short README whose links and example hold, and a site that builds without a warning.

The site is built here exactly as CI's docs step would (``sphinx -W --keep-going``): a broken reference,
link or anchor is an error, and the tour notebook is executed, so a notebook that stops running fails.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MAX_README_BYTES = 10 * 1024
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub and MyST give a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    found, fenced = set(), False
    for line in markdown.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.add(github_anchor(line.lstrip("#")))
    return found


def test_the_readme_is_short():
    assert README.stat().st_size <= MAX_README_BYTES, f"README.md is {README.stat().st_size} bytes (at most 10 KB)"


def test_every_relative_link_of_the_readme_and_the_docs_reaches_a_file_and_its_anchor():
    pages = [README, REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not checked offline
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_readme_python_example_prints_what_it_says():
    block = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    printed = out.getvalue()
    claimed = re.search(r"# (JSD = [\d.]+, p = [\d.]+)", block).group(1)
    assert claimed in printed, printed
    assert "None of the 999 random re-splits" in printed


def test_the_readme_screenshot_is_there_and_small():
    image = REPO / "docs" / "images" / "home.png"
    assert image.exists() and image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert image.stat().st_size < 400_000


def test_the_site_builds_without_a_warning_and_runs_the_notebook(tmp_path):
    build = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                            str(REPO / "docs"), str(tmp_path / "html")], capture_output=True, text=True, timeout=900)
    warnings = "\n".join(line for line in build.stderr.splitlines() if "IPKernelApp" not in line)
    assert build.returncode == 0, warnings[-4000:]
    tour = (tmp_path / "html" / "notebooks" / "tour.html").read_text(encoding="utf-8")
    assert "Bonferroni p =" in tour and "Plan k = " in tour  # the executed cells' output is in the page
    assert "dbpa audit" in (tmp_path / "html" / "reference" / "cli.html").read_text(encoding="utf-8")
    assert (tmp_path / "html" / "reference" / "api.html").read_text(encoding="utf-8").count("dbpa_test") > 2
