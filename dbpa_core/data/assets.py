"""The project's shipped data: where ``dbpa_core/assets/`` is, and how its YAML files are read.

Every module that reads a shipped file (scenarios, recorded samples, the
sibling audits' prompts and questions, prices) takes its path from here, so
there is one place that knows the layout of ``assets/``.  The same reader
parses the files users write (a SPEC, a scenario): YAML without anchors and
aliases (a few lines of ``&a [*a, *a, …]`` expand to billions of items: the
"billion laughs"), nested at most :data:`MAX_YAML_DEPTH` levels, at most
:data:`MAX_YAML_BYTES` long; an error names the file, line and column and
never quotes the line (it may hold a key written in the wrong place).
"""

from __future__ import annotations

from pathlib import Path

import yaml

# Inside the package, so that an installed wheel finds its data without the checkout.
ASSETS = Path(__file__).resolve().parents[1] / "assets"
SCENARIO_DIR = ASSETS / "scenarios"
RECORDED_DIR = ASSETS / "recorded"
AUDITS_DIR = ASSETS / "audits"
RECORDED_AUDITS_DIR = RECORDED_DIR / "audits"

#: Largest YAML file read (a SPEC or a scenario is a few kB; the largest shipped file is 11 kB).
MAX_YAML_BYTES = 1 * 2**20
#: Deepest nesting of mappings and lists accepted (a SPEC needs 4).
MAX_YAML_DEPTH = 32


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader without aliases and with a nesting limit (its composer recurses per level)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "anchors and aliases (&name, *name) are not allowed here",
                                              self.peek_event().start_mark)
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                                                  self.peek_event().start_mark)
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, yaml.MappingNode):
            _check_keys(node)
        return node


_STRING_TAG = "tag:yaml.org,2002:str"


def _check_keys(node: yaml.MappingNode) -> None:
    """Refuse a repeated key (PyYAML keeps the last silently: ``alpha: 0.05`` then ``alpha: 0.5`` would run at
    0.5) and a key that is not text (``1: 2``, a list), naming the key and its line."""
    seen: dict[str, int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag != _STRING_TAG:
            shown = repr(key.value[:40]) if isinstance(key, yaml.ScalarNode) else f"a {key.id}"
            raise yaml.composer.ComposerError(None, None, f"the key {shown} is not text; keys are names such as "
                                              "`alpha` (quote it if it must be a number)", key.start_mark)
        if key.value in seen:
            raise yaml.composer.ComposerError(None, None, f"the key `{key.value[:60]}` is repeated (first on line "
                                              f"{seen[key.value]}); keep one", key.start_mark)
        seen[key.value] = key.start_mark.line + 1


def _yaml_problem(path: Path, problem: yaml.YAMLError) -> str:
    """Where and what, without the excerpt of the line that PyYAML's own message quotes."""
    mark = getattr(problem, "problem_mark", None) or getattr(problem, "context_mark", None)
    where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    what = getattr(problem, "problem", None) or getattr(problem, "context", None) or type(problem).__name__
    return f"{path}{where}: not valid YAML ({what})."


def _text(path: Path, error: type[ValueError]) -> str:
    from .files import check_kind

    try:  # type before open: a named pipe would block, a device would never end
        check_kind(path, "SPEC" if error.__name__ == "SpecError" else "file", folder_ok=True)
    except ValueError as problem:
        raise error(str(problem)) from None
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_YAML_BYTES + 1)
    except FileNotFoundError:
        raise error(f"{path}: file not found.") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder; give a YAML file.") from None
    except OSError as problem:
        raise error(f"{path}: cannot be read ({problem.strerror}).") from None
    if len(data) > MAX_YAML_BYTES:
        raise error(f"{path}: larger than {MAX_YAML_BYTES // 2**20} MB; a SPEC or scenario is a few kB. Is it the "
                    "right file?")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        raise error(f"{path}: not UTF-8 text (byte {problem.start}); save it as UTF-8.") from None


def read_yaml(path: str | Path, error: type[ValueError] = ValueError):
    """Parse a YAML file; a missing, oversized, too deeply nested or bad file raises ``error`` naming it."""
    path = Path(path)
    text = _text(path, error)
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as problem:
        raise error(_yaml_problem(path, problem)) from None
    except (ValueError, RecursionError, OverflowError):
        # e.g. an integer of more than 4 300 digits (Python's limit on converting text to int)
        raise error(f"{path}: holds a value that cannot be read (a number too long?).") from None


def key_lines(path: str | Path) -> dict[str, int]:
    """Line (1-based) of every key of a YAML mapping file, by dotted path (``sampler.temperature``,
    ``prompts.perturbations[0].kind``), so that an error can point at the line without quoting it."""
    lines: dict[str, int] = {}

    def walk(node, prefix: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = f"{prefix}.{key.value}" if prefix else str(key.value)
                lines.setdefault(name, key.start_mark.line + 1)
                walk(value, name)
        elif isinstance(node, yaml.SequenceNode):
            for position, item in enumerate(node.value):
                name = f"{prefix}[{position}]"
                lines.setdefault(name, item.start_mark.line + 1)
                walk(item, name)

    try:
        walk(yaml.compose(_text(Path(path), ValueError), Loader=_StrictLoader), "")
    except (yaml.YAMLError, ValueError, RecursionError):
        return {}
    return lines
