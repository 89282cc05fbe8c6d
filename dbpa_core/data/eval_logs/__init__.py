"""Reading the eval logs people already have into per-prompt arms of output texts.

One perturbation across many prompts (issue 43) needs, for every prompt, the
outputs of each arm: the logs of promptfoo, lm-evaluation-harness and Inspect
AI already hold that design (many prompts, repeats or epochs, two providers,
two prompt versions or two runs).  :func:`load_eval_log` reads them; the
statistics (:func:`dbpa_core.dbpa_test_many`) read the :class:`EvalLog`.

=========  ==================================================  =================================
``fmt``    file                                                arms
=========  ==================================================  =================================
promptfoo  ``promptfoo eval --output results.json``            providers (label, else id); or
                                                               prompt versions (label) when the
                                                               file has one provider; or files
lm-eval    ``lm_eval --log_samples`` ``samples_*.jsonl``       one file per arm (two runs)
inspect    Inspect AI logs, ``.eval`` (zip) or ``.json``        one log per arm (two runs/models)
jsonl      ``{"prompt", "arm", "text"}`` per line              the ``arm`` field; or files
=========  ==================================================  =================================

Rules shared by every format:

* Several files are several arms, one per file, named by the file stems or by
  ``arms`` (in the order of the files); one file holding several arms is
  narrowed to ``arms`` when given.
* A prompt's outputs are every sample of it in the file — repeats, epochs and
  ``repeats`` of a doc — in file order; two arms' samples are never pooled.
* An output that is empty, or a row that records an error instead of an
  output, is skipped and counted in :attr:`EvalLog.skipped` (the reasons and
  rows in :attr:`EvalLog.notes`): an error is not an answer, and an empty text
  is almost always a failed call.
* Every arm has an entry in every prompt's ``texts``, possibly empty (a
  prompt one run never reached); the notes say which.
* A malformed file is refused with a :class:`ValueError` whose one-line
  message names the file, the row (or sample) and the fix.  Nothing read from
  a log is put in a message without :func:`dbpa_core._redact.redact` (a
  promptfoo file holds its provider config, API keys included).
* Files larger than :data:`MAX_LOG_BYTES` are refused unread, and so is any
  path that is not a regular file (a folder, a pipe, ``/dev/zero``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..._validation import MAX_SAMPLES, SAMPLES_WHY
from ._rows import (MAX_LOG_BYTES, Row, check_file, decode, output_text, parse_json,  # noqa: F401 - the package's API
                    read_bytes, shown)

FORMATS = ("promptfoo", "lm-eval", "inspect", "jsonl")


@dataclass(frozen=True)
class PromptSamples:
    """One prompt (test case) of a log and the output texts of each arm.

    Attributes
    ----------
    prompt_id : str
        Stable across files and runs: promptfoo ``vars`` (and prompt template) hashed, lm-eval ``doc_id``,
        Inspect sample ``id``, or the JSONL ``prompt_id`` (else its prompt).
    prompt : str
        The prompt as shown to a reader.
    texts : Mapping of str to tuple of str
        Arm name -> that arm's output texts for this prompt, in file order; every arm of the log has an entry.
    """

    prompt_id: str
    prompt: str
    texts: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class EvalLog:
    """Per-prompt output texts of two or more arms, read from eval logs.

    Attributes
    ----------
    source : {"promptfoo", "lm-eval", "inspect", "jsonl"}
    arms : tuple of str
        The arm names, in the order given (``arms``) or found.
    prompts : tuple of PromptSamples
        In the order first seen.
    skipped : int
        Rows (samples) not read as outputs: errors and empty outputs.
    notes : tuple of str
        Why rows were skipped (with their rows), and anything else worth knowing.
    """

    source: str
    arms: tuple[str, ...]
    prompts: tuple[PromptSamples, ...]
    skipped: int
    notes: tuple[str, ...]


# --------------------------------------------------------------------------- rows -> EvalLog
def file_arms(paths: Sequence[Path], arms: Sequence[str] | None) -> list[str]:
    """The arm of each file when there are several: ``arms`` in order, else the file stems."""
    if arms is not None:
        if len(arms) != len(paths):
            raise ValueError(f"`arms`: {len(paths)} files are {len(paths)} arms, one per file, but {len(arms)} "
                             f"names were given; give one name per file, in the files' order.")
        return list(arms)
    stems = [path.stem for path in paths]
    if len(set(stems)) < len(stems):
        raise ValueError(f"`arms`: the files {', '.join(str(p) for p in paths)} have the same name; name the arms "
                         "(one per file, in order).")
    return stems


def check_arms(arms: Sequence[str] | None) -> list[str] | None:
    if arms is None:
        return None
    if isinstance(arms, str) or not isinstance(arms, Sequence):
        raise ValueError(f"`arms` must be a list of arm names, e.g. ['baseline', 'candidate']; got {shown(arms)}.")
    names = [a.strip() if isinstance(a, str) else a for a in arms]
    if len(names) < 2 or not all(isinstance(a, str) and a for a in names):
        raise ValueError(f"`arms` must name at least two arms (non-empty texts); got {shown(list(arms))}.")
    if len(set(names)) < len(names):
        raise ValueError(f"`arms` names an arm twice ({shown(', '.join(names))}); name each arm once.")
    return names


def assemble(source: str, rows: Sequence[Row], arms: Sequence[str] | None, names: str,
             extra_notes: Sequence[str] = ()) -> EvalLog:
    """Group ``rows`` by prompt and arm (first-seen order), keep ``arms`` only, count what was skipped.

    ``names`` describes the files in messages.  Rows of arms not selected are neither outputs nor skipped:
    the notes say how many were left out.
    """
    found = list(dict.fromkeys(row.arm for row in rows))
    if arms is not None:
        unknown = [a for a in arms if a not in found]
        if unknown:
            raise ValueError(f"{names}: no arm {', '.join(repr(a) for a in unknown)}; the arms found are "
                             f"{', '.join(repr(shown(a, 40)) for a in found) or 'none'}. Give those names in `arms`.")
        chosen = list(arms)
    else:
        chosen = found
    if len(chosen) < 2:
        raise ValueError(f"{names}: {len(chosen)} arm found ({', '.join(repr(shown(a, 40)) for a in chosen)}); a "
                         "comparison needs two: give two files (one per run) or a log with two providers/models.")
    selected = set(chosen)
    texts: dict[str, dict[str, list[str]]] = {}
    prompts: dict[str, str] = {}
    skipped: dict[tuple[str, str], list[str]] = {}
    left_out = 0
    for row in rows:
        if row.arm not in selected:
            left_out += 1
            continue
        prompts.setdefault(row.prompt_id, row.prompt)
        outputs = texts.setdefault(row.prompt_id, {arm: [] for arm in chosen})[row.arm]
        if row.text is None or not row.text.strip():
            reason = row.skip or "empty output"
            skipped.setdefault((row.where.split(",")[0], reason.split(":")[0]), []).append(row.where)
            continue
        outputs.append(row.text)
        if len(outputs) > MAX_SAMPLES:
            raise ValueError(f"{row.where}: arm {shown(row.arm, 40)!r} has more than {MAX_SAMPLES:,} outputs for "
                             f"prompt {shown(row.prompt_id, 40)!r} ({SAMPLES_WHY}); keep a random subset.")
    if not texts:
        raise ValueError(f"{names}: no outputs of the arms {', '.join(shown(a, 40) for a in chosen)}; give a log "
                         "with outputs.")
    notes = list(extra_notes)
    for (file, reason), wheres in skipped.items():
        rows_named = ", ".join(w.split(", ", 1)[-1].split(" (")[0] for w in wheres[:5]) + (", …" if len(wheres) > 5 else "")
        notes.append(f"{file}: skipped {len(wheres)} {reason} row(s) ({rows_named}).")
    if left_out:
        notes.append(f"{names}: {left_out} row(s) of arms other than {', '.join(shown(a, 40) for a in chosen)} "
                     "left out.")
    for arm in chosen:
        missing = [pid for pid, by_arm in texts.items() if not by_arm[arm]]
        if missing:
            notes.append(f"arm {shown(arm, 40)!r} has no output for {len(missing)} prompt(s) "
                         f"({', '.join(shown(m, 30) for m in missing[:5])}{', …' if len(missing) > 5 else ''}).")
    samples = tuple(PromptSamples(pid, prompts[pid], {arm: tuple(by_arm[arm]) for arm in chosen})
                    for pid, by_arm in texts.items())
    return EvalLog(source, tuple(chosen), samples, sum(len(w) for w in skipped.values()), tuple(notes))


def load_eval_log(paths: Sequence[str | Path] | str | Path, *, fmt: str,
                  arms: Sequence[str] | None = None) -> EvalLog:
    """Read eval logs into per-prompt output texts of each arm.

    Parameters
    ----------
    paths : sequence of str or Path
        One log (whose providers, prompt versions or models are the arms) or several (one arm each).
    fmt : {"promptfoo", "lm-eval", "inspect", "jsonl"}
        The tool that wrote the files (see the module's table).
    arms : sequence of str, optional
        With one file: the arms to keep, in this order (at least two; each must be in the file).  With several
        files: the name of each file's arm, in the files' order (default: the file stems).

    Returns
    -------
    EvalLog

    Raises
    ------
    ValueError
        A missing, oversized or malformed file (the message names the file, the row and the fix), an unknown
        arm, fewer than two arms.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    if fmt not in FORMATS:
        raise ValueError(f"`fmt` must be one of {', '.join(FORMATS)}; got {shown(fmt, 30)!r}.")
    if not isinstance(paths, Sequence) or not paths:
        raise ValueError("`paths` must name at least one log file.")
    arms = check_arms(arms)
    files = [check_file(p) for p in paths]
    if len(set(p.resolve() for p in files)) < len(files):
        raise ValueError(f"`paths` names one file twice ({', '.join(map(str, files))}): its samples would be "
                         "counted as two arms; give each run's file once.")
    from . import _inspect, _jsonl, _lm_eval, _promptfoo

    reader = {"promptfoo": _promptfoo.rows, "lm-eval": _lm_eval.rows, "inspect": _inspect.rows,
              "jsonl": _jsonl.rows}[fmt]
    names = ", ".join(p.name for p in files)
    if len(files) == 1:
        rows, notes = reader(files[0], None, arms)
        return assemble(fmt, rows, arms, names, notes)
    rows, notes = [], []
    for path, arm in zip(files, file_arms(files, arms), strict=True):
        file_rows, file_notes = reader(path, arm, None)
        rows += file_rows
        notes += file_notes
    return assemble(fmt, rows, None, names, notes)


__all__ = ["EvalLog", "PromptSamples", "load_eval_log", "MAX_LOG_BYTES", "FORMATS"]
