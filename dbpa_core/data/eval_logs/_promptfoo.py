"""promptfoo ``eval --output results.json``: the rows of ``results.results[]``.

A row is one call: its test case (``vars``, ``testIdx``), its prompt (``prompt.raw`` as rendered,
``prompt.label`` the template), its provider (``provider.label``, else ``provider.id``) and its
``response.output``, or an ``error`` (``failureReason`` 2) instead.  ``--repeat N`` writes every test
case N times under new ``testIdx`` values, so a test case is identified by its ``vars`` and prompt
template, never by ``testIdx``; its N rows per provider are its N samples.

Arms: the providers when the file has several; else the prompt versions (templates, by label) when it
has several; else the file is one arm (a run) and two files are compared.  With ``arms`` given, names
that are prompt labels rather than providers choose the prompt versions as the arms.
A failed assertion (``failureReason`` 1) is still an output and is kept.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ._rows import Row, decode, output_text, parse_json, read_bytes, shown

FIX = "give the file `promptfoo eval --output results.json` wrote, unedited"


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]


def _load(path: Path) -> list[dict]:
    data = parse_json(decode(read_bytes(path), path.name), path.name, FIX + ".")
    results = data.get("results") if isinstance(data, dict) else None
    rows = results.get("results") if isinstance(results, dict) else None
    if not isinstance(rows, list):
        raise ValueError(f"{path.name}: no `results.results` list, so not a promptfoo results file; {FIX} "
                         "(a .json output, not .csv/.html/.yaml).")
    if not rows:
        raise ValueError(f"{path.name}: `results.results` is empty (no test ran); run the eval again.")
    return rows


def _provider(row: dict, where: str) -> str:
    provider = row.get("provider")
    if isinstance(provider, str) and provider:
        return provider
    if isinstance(provider, dict):
        name = provider.get("label") or provider.get("id")
        if isinstance(name, str) and name:
            return name
    raise ValueError(f"{where}: `provider` has no `label` or `id`; {FIX}.")


def _fields(row, where: str) -> tuple[dict, str, str]:
    """A row's vars, prompt template (label) and prompt as rendered, checked."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: a row must be an object; {FIX}.")
    variables = row.get("vars", (row.get("testCase") or {}).get("vars") if isinstance(row.get("testCase"), dict)
                        else None)
    if not isinstance(variables, dict):
        raise ValueError(f"{where}: `vars` is missing or not an object, so its test case is unknown; {FIX}.")
    prompt = row.get("prompt")
    if not isinstance(prompt, dict) or not isinstance(prompt.get("raw"), str):
        raise ValueError(f"{where}: `prompt.raw` is missing or not a text; {FIX}.")
    label = prompt.get("label") if isinstance(prompt.get("label"), str) and prompt.get("label") else prompt["raw"]
    return variables, label, prompt["raw"]


def rows(path: Path, arm: str | None, arms: list[str] | None) -> tuple[list[Row], list[str]]:
    """The outputs of ``path``, with ``arm`` for every row (a file per arm) or arms read from the rows."""
    raw = _load(path)
    checked = []
    for number, row in enumerate(raw, start=1):
        where = f"{path.name}, row {number} (results.results[{number - 1}])"
        variables, label, rendered = _fields(row, where)
        checked.append((where, row, variables, label, rendered, _provider(row, where)))
    providers = list(dict.fromkeys(c[5] for c in checked))
    labels = list(dict.fromkeys(c[3] for c in checked))
    if arm is not None and len(providers) > 1:
        # one arm per file: two providers' samples would be pooled into one arm
        raise ValueError(f"{path.name}: holds {len(providers)} providers ({', '.join(shown(p, 30) for p in providers)})"
                         " but several files make one arm per file; give this file alone, with `arms` naming two of "
                         "its providers.")
    by_prompt = arm is None and (
        (arms is not None and not set(arms) & set(providers) and set(arms) <= set(labels))
        or (arms is None and len(providers) == 1 and len(labels) > 1))
    notes = []
    if arm is None and not by_prompt and len(labels) > 1:
        notes.append(f"{path.name}: {len(labels)} prompt versions × {len(providers)} providers: the arms are the "
                     "providers and each prompt version's test cases are separate prompts.")
    out = []
    for where, row, variables, label, rendered, provider in checked:
        row_arm = arm if arm is not None else (label if by_prompt else provider)
        # The prompt versions are the arms: a test case is its vars; otherwise its vars and template.
        identity = {"vars": variables} if by_prompt else {"vars": variables, "prompt": label}
        shown_prompt = ("\n".join(f"{k}: {v}" for k, v in variables.items()) if by_prompt else rendered)
        response = row.get("response")
        if response is not None and not isinstance(response, dict):
            raise ValueError(f"{where}: `response` must be an object; {FIX}.")
        error = row.get("error") or (response or {}).get("error")
        output = (response or {}).get("output")
        if error or row.get("failureReason") == 2:
            reason = f"error: {shown(error, 80)}" if error else "error"
            out.append(Row(where, _digest(identity), shown_prompt, row_arm, None, reason))
            continue
        if response is None or "output" not in response:
            raise ValueError(f"{where}: no `response.output` and no `error`; {FIX}.")
        out.append(Row(where, _digest(identity), shown_prompt, row_arm, output_text(output, where,
                                                                                      "response.output")))
    return out, notes
