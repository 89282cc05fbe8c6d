"""Plain JSONL: one output per line, ``{"prompt": "...", "arm": "...", "text": "..."}``.

Fields:

* ``prompt`` (text, required): the prompt as shown; it identifies the prompt unless ``prompt_id`` is given.
* ``prompt_id`` (text or integer, optional): identifies the prompt when two prompts share a text or one
  prompt is worded differently in two files.
* ``arm`` (text): required in a file holding several arms; a file without ``arm`` fields is one arm
  (its stem, or the name given in ``arms``) and is compared with another file.  A line's ``arm`` in a
  file given as one of several files must be absent or equal that file's arm.
* ``text`` (text or null): the output; null or empty, or an ``error`` field that is not null/false,
  makes the line a skipped one (counted).

Repeats are simply several lines with the same prompt and arm.
"""

from __future__ import annotations

from pathlib import Path

from ._rows import Row, decode, output_text, parse_json, read_bytes, shown

EXAMPLE = '{"prompt": "Is aspirin safe?", "arm": "baseline", "text": "…"}'


def rows(path: Path, arm: str | None, arms: list[str] | None) -> tuple[list[Row], list[str]]:
    text = decode(read_bytes(path), path.name)
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}, line {number}"
        row = parse_json(line, where, f"each line must be one JSON object like {EXAMPLE}.")
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected a JSON object like {EXAMPLE}.")
        prompt = row.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"{where}: `prompt` is missing or not a text; give each line the prompt it answers.")
        prompt_id = row.get("prompt_id", prompt)
        if isinstance(prompt_id, bool) or not isinstance(prompt_id, str | int):
            raise ValueError(f"{where}: `prompt_id` must be a text or an integer; got {shown(prompt_id, 30)}.")
        line_arm = row.get("arm")
        if line_arm is not None and (not isinstance(line_arm, str) or not line_arm.strip()):
            raise ValueError(f"{where}: `arm` must be a non-empty text, e.g. \"baseline\"; got {shown(line_arm, 30)}.")
        if arm is not None and line_arm is not None and line_arm.strip() != arm:
            raise ValueError(f"{where}: `arm` is {shown(line_arm, 30)!r} but this file is arm {shown(arm, 30)!r} (one "
                             "arm per file when several files are given); drop `arm` or give one file.")
        if arm is None and line_arm is None:
            raise ValueError(f"{where}: no `arm`; in a single file every line names its arm (e.g. \"baseline\" / "
                             "\"candidate\"), or give one file per arm.")
        error = row.get("error")
        value = row.get("text")
        if error not in (None, False, ""):
            out.append(Row(where, str(prompt_id), prompt, arm or line_arm.strip(), None,
                           f"error: {shown(error, 80)}"))
            continue
        if "text" not in row:
            raise ValueError(f"{where}: `text` is missing; give the output (null for a failed call).")
        out.append(Row(where, str(prompt_id), prompt, arm or line_arm.strip(), output_text(value, where, "text")))
    if not out:
        raise ValueError(f"{path.name}: no lines; give one JSON object per output, like {EXAMPLE}.")
    return out, []
