"""Helpers of the bad-input suite: run the command line in-process and check what a user sees.

Every case asserts the exit code, that the message is one line with no traceback and no secret, and
(where something could be written) that the store and any output are byte for byte what they were.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from dbpa_core.__main__ import main

#: A key as OpenAI writes them, set as OPENAI_API_KEY in every case: it must never be printed or written.
SECRET = "sk-proj-T3stK3yAbcdEfghIjklMnopQrstUvwx9876"


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err

    @property
    def error(self) -> str:
        """The one ``error:`` line (asserting there is exactly one)."""
        lines = [line for line in self.err.splitlines() if line.startswith("error:")]
        assert len(lines) == 1, self.err
        return lines[0]


def cli(*argv) -> Outcome:
    """``python -m dbpa_core ARGV`` in this process; an exception escaping ``main`` fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return Outcome(code, out.getvalue(), err.getvalue())


def assert_clean(outcome: Outcome, code: int, *, secrets=(SECRET,), one_error: bool = True) -> Outcome:
    """The exit code, no traceback, no secret, and for a failure exactly one ``error:`` line (``one_error``;
    a batch import that refused some lines reports them on stdout instead)."""
    assert outcome.code == code, (outcome.code, outcome.text[-3000:])
    assert "Traceback" not in outcome.text and 'File "' not in outcome.text, outcome.text[-3000:]
    for secret in secrets:
        assert secret not in outcome.text, outcome.text[-3000:]
        assert secret[-6:] not in outcome.text, outcome.text[-3000:]
    if code in (2, 3) and one_error:
        outcome.error  # noqa: B018 - asserts a single error line
    return outcome


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones and journals included) → sha256; folders → "dir"."""
    return {str(path.relative_to(folder)): "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(Path(folder).rglob("*"))}


def write_spec(folder: Path, text: str | dict, name: str = "spec.yaml") -> Path:
    """A SPEC file; keys given as None are left out."""
    if isinstance(text, dict):
        text = {key: value for key, value in text.items() if value is not None}
    path = Path(folder) / name
    path.write_text(text if isinstance(text, str) else yaml.safe_dump(text, allow_unicode=True), encoding="utf-8")
    return path


def simulated_spec(**overrides) -> dict:
    return {"name": "t", "sampler": {"backend": "simulated"}, "scenario": "seasons_question",
            "perturbations": ["paraphrase_1", "mars"], "k": 6, "n_resamples": 50, "discrepancy": "energy",
            "seed": 0, **overrides}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """A store of the test's own and a key in the environment that must never show."""
    monkeypatch.chdir(tmp_path)  # a report folder written by mistake lands here, not in the repository
    monkeypatch.setenv("DBPA_STORE", str(tmp_path / "default-store" / "store.sqlite"))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("DBPA_DEBUG", raising=False)
