"""The project's shipped data: where ``assets/`` is, and how its YAML files are read.

Every module that reads a shipped file (scenarios, recorded samples, the
sibling audits' prompts and questions, prices) takes its path from here, so
there is one place that knows the layout of ``assets/``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ASSETS = Path(__file__).resolve().parents[2] / "assets"
SCENARIO_DIR = ASSETS / "scenarios"
RECORDED_DIR = ASSETS / "recorded"
AUDITS_DIR = ASSETS / "audits"
RECORDED_AUDITS_DIR = RECORDED_DIR / "audits"


def read_yaml(path: str | Path, error: type[ValueError] = ValueError):
    """Parse a YAML file; a missing file or bad YAML raises ``error`` naming the file."""
    path = Path(path)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: file not found.") from None
    except yaml.YAMLError as problem:
        raise error(f"{path}: not valid YAML ({problem}).") from None
