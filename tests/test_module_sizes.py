"""Pages are widgets and calls, ui/ is caching and progress: every page ≤ 200 lines, every ui module ≤ 400.

A page past 200 lines holds logic or prose that belongs in ``dbpa_app/ui`` or ``dbpa_core/present`` (where the
reports can use it too); a ui module past 400 does more than one job and is split by concern.  No exception
is granted: a file that needs one is named in :data:`EXCEPTIONS` with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "dbpa_app"
LIMITS = {"views": 200, "ui": 400}
#: path relative to dbpa_app → (its limit, why): none at present.
EXCEPTIONS: dict[str, tuple[int, str]] = {}


def _modules():
    for folder, limit in LIMITS.items():
        for path in sorted((APP / folder).glob("*.py")):
            yield path, limit


@pytest.mark.parametrize(("path", "limit"), list(_modules()), ids=lambda v: v.name if isinstance(v, Path) else "")
def test_module_is_within_its_size_limit(path, limit):
    name = str(path.relative_to(APP))
    limit = EXCEPTIONS.get(name, (limit, ""))[0]
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= limit, f"{name} has {lines} lines, over the limit of {limit}: split it by concern"


def test_the_limits_see_every_page_and_ui_module():
    names = {str(path.relative_to(APP)) for path, _ in _modules()}
    assert {"views/how_it_works.py", "ui/runs.py", "ui/components.py", "ui/cache.py"} <= names
    assert set(EXCEPTIONS) <= names  # an exception for a file that no longer exists is dropped
