"""The package's layers: data flows one way, and no module imports from a layer above it.

Layers, lowest first (DESIGN.md): validation (and _redact, its secrets half) → stats → data →
samplers → embedders → audit → the sibling audits (rut, stability) → the papers'
experiments (paper) → every analysis as a request with its runner and the dispatch table (requests) → present →
the command line (cli, __main__).  A module may import its own layer and the ones below; the
package's ``__init__`` (a lazy name map) is exempt.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dbpa_core"
RANK = {"_validation": 0, "_redact": 0, "stats": 1, "data": 2, "samplers": 3, "embedders": 4, "audit": 5, "rut": 6,
        "stability": 6, "paper": 7, "requests": 8, "present": 9, "cli": 10, "__main__": 10}
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).as_posix() != "__init__.py")


def layer_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported_layers(path: Path, root: Path = PACKAGE):
    """(line, layer) of every dbpa_core module a file imports, at any depth (lazy imports included)."""
    package = path.relative_to(root).parent.parts
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - (node.level - 1)])
                parts = base + (node.module.split(".") if node.module else [])
                names = [parts + [alias.name] for alias in node.names] if not parts else [parts]
            elif node.module and node.module.split(".")[0] == "dbpa_core":
                names = [node.module.split(".")[1:]]
            else:
                continue
            for parts in names:
                if parts:
                    yield node.lineno, parts[0].removesuffix(".py")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "dbpa_core" and len(parts) > 1:
                    yield node.lineno, parts[1]


def test_every_module_is_in_a_known_layer():
    assert {layer_of(p) for p in MODULES} <= set(RANK)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_import_from_a_layer_above(path):
    own = RANK[layer_of(path)]
    above = [f"line {line}: {layer}" for line, layer in imported_layers(path) if RANK.get(layer, -1) > own]
    assert not above, f"{path.relative_to(PACKAGE)} imports from a layer above it: {above}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_dbpa_core_never_imports_streamlit(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in modules if m.split(".")[0] == "streamlit"]


def test_the_checker_sees_a_violation(tmp_path):
    """The layer check can fail: a stats module importing the audit runner is caught."""
    root = tmp_path / "dbpa_core"
    (root / "stats").mkdir(parents=True)
    probe = root / "stats" / "probe.py"
    probe.write_text("from ..audit.runner import compare_arms\nfrom . import _kernels\n", encoding="utf-8")
    assert [layer for _, layer in imported_layers(probe, root)] == ["audit", "stats"]
