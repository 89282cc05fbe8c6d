"""lm-evaluation-harness ``--log_samples``: ``samples_<task>_<date>.jsonl``, one line per doc.

A line holds the doc (``doc_id``, ``doc``), the request (``arguments``: the prompt as sent) and
``resps``: one list per request, holding the ``repeats`` generations of it (a task's ``repeats: 3``
gives ``[["a", "b", "c"]]``).  Only generation tasks (``output_type: generate_until``) have output
texts; a log-likelihood task's ``resps`` are numbers and are refused.  A task with several
``filter_list`` entries writes each doc once per filter with the same ``resps``: those are one doc,
read once (otherwise every sample would count twice).  Arms are runs: one file each.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._rows import Row, decode, output_text, parse_json, read_bytes, shown

FIX = "give the samples_*.jsonl file that `lm_eval --log_samples` wrote, unedited"


def _prompt(arguments, where: str) -> str:
    """The prompt as sent: ``arguments`` is ``{"gen_args_0": {"arg_0": prompt, ...}}`` (lm-eval ≥ 0.4.3) or
    ``[[prompt, gen_kwargs], ...]`` (earlier); a chat prompt is a JSON list of messages, shown as their texts."""
    first = None
    if isinstance(arguments, dict) and arguments:
        request = next(iter(arguments.values()))
        first = request.get("arg_0") if isinstance(request, dict) else None
    elif isinstance(arguments, list) and arguments and isinstance(arguments[0], list) and arguments[0]:
        first = arguments[0][0]
    if isinstance(first, list) and first:
        first = first[0]
    if not isinstance(first, str):
        raise ValueError(f"{where}: `arguments` holds no prompt text; {FIX}.")
    try:
        messages = json.loads(first)
    except (ValueError, RecursionError):
        return first
    if isinstance(messages, list) and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
        return "\n".join(m["content"] for m in messages)
    return first


def rows(path: Path, arm: str | None, arms: list[str] | None) -> tuple[list[Row], list[str]]:
    """The generations of ``path`` (one run: every row is ``arm``, default the file stem)."""
    arm = arm if arm is not None else path.stem
    text = decode(read_bytes(path), path.name)
    out, notes, seen, repeated_filters = [], {}, set(), 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}, line {number}"
        row = parse_json(line, where, FIX + " (one JSON object per line; a cut-off line means a truncated file).")
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected a JSON object (a logged sample); {FIX}.")
        doc_id = row.get("doc_id")
        if isinstance(doc_id, bool) or not isinstance(doc_id, int | str):
            raise ValueError(f"{where}: `doc_id` is missing or not an integer; {FIX}.")
        resps = row.get("resps")
        if not isinstance(resps, list) or not all(isinstance(r, list) for r in resps):
            raise ValueError(f"{where}: `resps` must be a list of lists of generations (got "
                             f"{type(resps).__name__}); {FIX}.")
        key = str(doc_id)
        if key in notes:
            # the same doc again: another filter of the same generations, or a file of two runs joined
            if notes[key] != resps:
                raise ValueError(f"{where}: doc {doc_id} appears twice with different generations (two runs in one "
                                 "file?); give each run's samples file separately.")
            repeated_filters += 1
            continue
        notes[key] = resps
        prompt = _prompt(row.get("arguments"), where)
        for request, generations in enumerate(resps):
            for index, value in enumerate(generations):
                spot = f"{where} (resps[{request}][{index}])"
                if isinstance(value, list):  # a log-likelihood (or multiple-choice) request: [logprob, is_greedy]
                    raise ValueError(f"{spot}: {shown(value, 30)} is a log-likelihood, not a generation; only "
                                     "generate_until tasks have output texts to compare.")
                out.append(Row(spot, key, prompt, arm, output_text(value, spot, "resps")))
        seen.add(key)
    if not seen:
        raise ValueError(f"{path.name}: no logged samples; {FIX}.")
    extra = [f"{path.name}: {repeated_filters} line(s) repeat a doc under another filter with the same generations; "
             "each doc is read once."] if repeated_filters else []
    return out, extra
