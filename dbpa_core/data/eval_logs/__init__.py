"""Eval logs into per-prompt arms — PLACEHOLDER holding only the JSONL reader.

Branch logs43 writes the real module (promptfoo, lm-eval, Inspect AI and JSONL importers) with this
same interface; on merge its version replaces this file whole.  Here only ``fmt="jsonl"`` is read:
one JSON object per line with ``prompt`` (text), ``arm`` and ``text`` (an output), ``prompt_id``
optional; several files are one arm each (named by ``arms`` or the file stems).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

FORMATS = ("promptfoo", "lm-eval", "inspect", "jsonl")


@dataclass(frozen=True)
class PromptSamples:
    """One prompt of a log: its id, its text, and each arm's output texts."""

    prompt_id: str
    prompt: str
    texts: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class EvalLog:
    """A log read into prompts × arms."""

    source: str
    arms: tuple[str, ...]
    prompts: tuple[PromptSamples, ...]
    skipped: int
    notes: tuple[str, ...]


def load_eval_log(paths: Sequence[str | Path] | str | Path, *, fmt: str,
                  arms: Sequence[str] | None = None) -> EvalLog:
    """Read JSONL logs (this placeholder reads ``fmt="jsonl"`` only)."""
    if isinstance(paths, str | Path):
        paths = [paths]
    if fmt not in FORMATS:
        raise ValueError(f"`fmt` must be one of {', '.join(FORMATS)}; got {fmt!r}.")
    if fmt != "jsonl":
        raise ValueError(f"`fmt={fmt!r}` is not readable in this build; convert the log to JSONL "
                         '({"prompt", "arm", "text"} per line) and use --from jsonl.')
    paths = [Path(p) for p in paths]
    if len(paths) > 1 and arms is not None and len(arms) != len(paths):
        raise ValueError(f"`arms` must name one arm per file; got {len(arms)} names for {len(paths)} files.")
    rows, skipped, notes = [], 0, []
    for index, path in enumerate(paths):
        if not path.is_file():
            raise ValueError(f"{path}: no such file; give the path of a JSONL log.")
        file_arm = (arms[index] if arms is not None else path.stem) if len(paths) > 1 else None
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    raise ValueError(f"{path.name}, line {number}: not JSON; write one JSON object per line "
                                     '({"prompt", "arm", "text"}).') from None
                if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
                    raise ValueError(f'{path.name}, line {number}: needs a "prompt" text field.')
                arm = file_arm if file_arm is not None else row.get("arm")
                if not isinstance(arm, str) or not arm:
                    raise ValueError(f'{path.name}, line {number}: needs an "arm" field (or give one file per arm).')
                text = row.get("text")
                if not isinstance(text, str) or not text.strip():
                    skipped += 1
                    continue
                rows.append((str(row.get("prompt_id", row["prompt"])), row["prompt"], arm, text))
    found = list(dict.fromkeys(r[2] for r in rows))
    chosen = list(arms) if arms is not None and len(paths) == 1 else found
    unknown = [a for a in chosen if a not in found]
    if unknown:
        raise ValueError(f"{', '.join(p.name for p in paths)}: no arm {', '.join(map(repr, unknown))}; the arms "
                         f"found are {', '.join(map(repr, found)) or 'none'}.")
    if len(chosen) < 2:
        raise ValueError(f"{', '.join(p.name for p in paths)}: {len(chosen)} arm found; a comparison needs two.")
    texts: dict[str, dict[str, list[str]]] = {}
    shown: dict[str, str] = {}
    for pid, prompt, arm, text in rows:
        if arm in chosen:
            shown.setdefault(pid, prompt)
            texts.setdefault(pid, {a: [] for a in chosen})[arm].append(text)
    if skipped:
        notes.append(f"skipped {skipped} row(s) with an empty or missing text.")
    prompts = tuple(PromptSamples(pid, shown[pid], {a: tuple(v) for a, v in by_arm.items()})
                    for pid, by_arm in texts.items())
    return EvalLog("jsonl", tuple(chosen), prompts, skipped, tuple(notes))


__all__ = ["EvalLog", "PromptSamples", "load_eval_log", "FORMATS"]
