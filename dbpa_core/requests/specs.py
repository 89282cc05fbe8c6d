"""The SPECs of the sibling audits (``dbpa rut SPEC.yaml``, ``dbpa stability SPEC.yaml``): YAML → request.

A SPEC is a mapping whose keys are the request's fields (nested ``sampler``
mappings as in the audit SPEC: ``{backend: local}``); unknown keys are
refused with the allowed ones, and every error names the file, the key and
its line (never the value: a SPEC may hold a key typed into the wrong field).
Shipped examples: ``dbpa_core/assets/specs/rut_*.yaml`` and ``stability_*.yaml``.
"""

from __future__ import annotations

from pathlib import Path

from ..data.assets import key_lines, read_yaml
from ..audit.spec import SpecError

#: The shipped example SPECs of the sibling audits.
SPECS_DIR = Path(__file__).resolve().parent.parent / "assets" / "specs"


def check_keys(mapping, allowed, where: str = "") -> dict:
    """``mapping`` as a dict, refusing a key not in ``allowed`` (the message names it and lists the allowed)."""
    if not isinstance(mapping, dict):
        raise SpecError(f"`{where or 'the SPEC'}` must be a mapping of keys to values.", where or None)
    for key in mapping:
        if key not in allowed:
            name = f"{where}.{key}" if where else str(key)
            raise SpecError(f"`{name}` is not a key of this SPEC; allowed: {', '.join(sorted(allowed))}.", name)
    return dict(mapping)


def load_request(path: str | Path, parse):
    """Read the SPEC at ``path`` and build its request with ``parse(mapping, base=folder)``.

    An error names the file and, when the key is in it, its line.
    """
    path = Path(path)
    data = read_yaml(path, SpecError)
    try:
        return parse(data if data is not None else {}, base=path.parent)
    except SpecError as error:
        key = error.key
        lines = key_lines(path) if key else {}
        while key and key not in lines:
            key = key.rpartition(".")[0]
        line = lines.get(key) if key else None
        raise SpecError(f"{path.name}{f', line {line}' if line else ''}: {error}", error.key) from None
    except ValueError as error:
        raise SpecError(f"{path.name}: {error}") from None


def spec_name(mapping: dict, default: str) -> str:
    """The SPEC's ``name`` (it names the output folder): a file name, never a path."""
    from ..audit.spec import _NAME

    name = str(mapping.get("name") or default)
    if not _NAME.fullmatch(name):
        raise SpecError("`name` must be a file name (letters, digits, '.', '_', '-'), not a path.", "name")
    return name


def sampler_config(value, where: str):
    """A SPEC's sampler mapping (``{backend: local}``) as a :class:`~dbpa_core.audit.configs.SamplerConfig`."""
    from ..audit.configs import SamplerConfig

    if not isinstance(value, dict):
        raise SpecError(f"`{where}` must be a mapping such as {{backend: local}}.", where)
    return SamplerConfig.from_mapping(value)
