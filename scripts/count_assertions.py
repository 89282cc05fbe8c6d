"""Count the tests and the checks in the test suite, per file (issue 46: "the count of tests and of assertions
before and after").

A check is one place in the source that can fail a test: an ``assert`` statement, a ``pytest.raises`` /
``pytest.warns`` / ``pytest.fail`` call, or a browser wait that fails when its condition never comes
(Playwright's ``wait_for`` / ``wait_for_function`` / ``expect``).  The count is static (read with :mod:`ast`,
nothing is run): a check in a loop or in a helper counts once, a parametrized test once.  For the number of
tests pytest runs, add ``--collect``.

Usage::

    python scripts/count_assertions.py [--collect] [--json] [PATH ...]   # default: tests/
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RAISING = {"raises", "warns", "fail", "deprecated_call"}  # pytest.<name>(...)
WAITS = {"wait_for", "wait_for_function", "wait_for_selector", "expect"}


def count_file(path: Path) -> Counter:
    """``tests`` (test functions and methods), ``asserts``, ``raises`` (pytest.raises/warns/fail) and ``waits``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    counts: Counter = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            counts["tests"] += 1
        elif isinstance(node, ast.Assert):
            counts["asserts"] += 1
        elif isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            owner = getattr(function.value, "id", "") if isinstance(function, ast.Attribute) else ""
            if owner == "pytest" and name in RAISING:
                counts["raises"] += 1
            elif name in WAITS:
                counts["waits"] += 1
    counts["checks"] = counts["asserts"] + counts["raises"] + counts["waits"]
    return counts


def collected(paths: list[str]) -> Counter:
    """Tests pytest collects per file (parametrized cases counted one by one)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *paths],
                         cwd=REPO, capture_output=True, text=True)
    per_file: Counter = Counter()
    for line in out.stdout.splitlines():
        if "::" in line:
            per_file[line.split("::")[0]] += 1
    return per_file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=["tests"])
    parser.add_argument("--collect", action="store_true", help="also count the tests pytest collects (slower)")
    parser.add_argument("--json", action="store_true", help="one JSON object: file -> counts")
    args = parser.parse_args(argv)
    files = sorted({f for p in args.paths for f in ([Path(p)] if Path(p).is_file() else Path(p).rglob("test_*.py"))})
    table = {str(f.relative_to(REPO) if f.is_absolute() else f): count_file(f) for f in files}
    if args.collect:
        for name, n in collected([str(f) for f in files]).items():
            table.setdefault(name, Counter())["collected"] = n
    total = sum(table.values(), Counter())
    if args.json:
        print(json.dumps({**{k: dict(v) for k, v in table.items()}, "TOTAL": dict(total)}, indent=1))
        return 0
    columns = ["tests", *(["collected"] if args.collect else []), "asserts", "raises", "waits", "checks"]
    print(f"{'file':<48}" + "".join(f"{c:>10}" for c in columns))
    for name, counts in [*table.items(), ("TOTAL", total)]:
        print(f"{name:<48}" + "".join(f"{counts[c]:>10}" for c in columns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
