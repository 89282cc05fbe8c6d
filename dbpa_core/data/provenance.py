"""What each sample's reply said about itself, kept beside the sample store, and its summary for a report.

An OpenAI-compatible server says, with every completion, which model
actually answered (``model``: the dated snapshot behind an alias), the
provider's ``system_fingerprint`` (its serving configuration) and the
tokens it billed (``usage``).  :func:`put_sample_meta` keeps that beside the
sample in a side table of the store, :func:`get_sample_meta` reads it back
(a resumed run's report still describes every sample), and
:func:`provenance_record` sums it for the report's ``provenance``: which
models served the run, under which fingerprints, and what it cost.

The side table ``sample_meta`` (request key, sample index, JSON) is created
on the first write: a store written before it existed opens and reads as
before (it simply describes no sample), and the store's schema version is
unchanged, so an older version of this program still opens a store that has
it (and ignores it).  As for the sample itself, the first write of a slot
wins: the meta kept is the one of the reply whose text the store holds.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping

from . import store_rows
from .store import SampleStore, request_key

_TABLE = ("CREATE TABLE IF NOT EXISTS sample_meta (request_key TEXT NOT NULL, sample_index INTEGER NOT NULL, "
          "meta TEXT NOT NULL, PRIMARY KEY (request_key, sample_index))")


def put_sample_meta(store, description: dict, index: int, meta: Mapping | None) -> None:
    """Keep ``meta`` beside sample ``index`` of ``description`` (nothing for a store that cannot keep it)."""
    if not meta or store is None:
        return
    own = getattr(store, "put_sample_meta", None)  # an in-memory store (dbpa_core.audit.runner)
    if own is not None:
        own(description, index, dict(meta))
        return
    if not isinstance(store, SampleStore):
        return
    with store._transaction() as connection:
        connection.execute(_TABLE)
        connection.execute("INSERT OR IGNORE INTO sample_meta VALUES (?, ?, ?)",
                           (request_key(description), int(index), json.dumps(dict(meta), sort_keys=True)))


def put_samples_meta(store, rows: Iterable[tuple[dict, int, Mapping | None]]) -> None:
    """:func:`put_sample_meta` for many (description, index, meta) rows in one transaction (a batch import)."""
    rows = [(request_key(description), int(index), json.dumps(dict(meta), sort_keys=True))
            for description, index, meta in rows if meta]
    if not rows or not isinstance(store, SampleStore):
        return
    with store._transaction() as connection:
        connection.execute(_TABLE)
        connection.executemany("INSERT OR IGNORE INTO sample_meta VALUES (?, ?, ?)", rows)


def get_sample_meta(store, description: dict, indices: Iterable[int]) -> dict[int, dict]:
    """The kept meta of the given samples; samples without any are absent."""
    indices = [int(i) for i in indices]
    if store is None or not indices:
        return {}
    own = getattr(store, "get_sample_meta", None)
    if own is not None:
        return own(description, indices)
    if not isinstance(store, SampleStore):
        return {}
    with store._transaction(write=False) as connection:
        if connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sample_meta'"
                              ).fetchone() is None:
            return {}  # a store that never kept any
    rows = store._select_in("SELECT sample_index, meta FROM sample_meta WHERE request_key = ? AND sample_index "
                            "IN ({})", request_key(description), indices)
    return {index: store_rows.meta(store.path, f"sample_meta, index {index}", meta) for index, meta in rows}


def provenance_record(arms) -> dict:
    """The report's ``provenance``: what the replies of the arms' samples said about themselves, summed.

    Parameters
    ----------
    arms : iterable of Arm
        Each arm once (the shared original arm counted once); their
        ``provenance`` holds one meta (or None) per sample.

    Returns
    -------
    dict
        ``n_samples``; ``n_described`` (samples whose reply said anything);
        ``served_models`` and ``system_fingerprints`` (each value with its
        number of samples); ``usage`` (token counts summed over the described
        samples: what they cost when drawn, in this run or an earlier one);
        ``reading`` (one plain sentence).
    """
    metas = [meta for arm in arms for meta in (getattr(arm, "provenance", ()) or (None,) * len(arm.texts))]
    described = [meta for meta in metas if meta]
    models = Counter(meta["model"] for meta in described if meta.get("model"))
    fingerprints = Counter(meta["system_fingerprint"] for meta in described if meta.get("system_fingerprint"))
    usage: Counter = Counter()
    for meta in described:
        usage.update({name: int(value) for name, value in (meta.get("usage") or {}).items()})
    record = {"n_samples": len(metas), "n_described": len(described), "served_models": dict(models.most_common()),
              "system_fingerprints": dict(fingerprints.most_common()), "usage": dict(sorted(usage.items()))}
    record["reading"] = read_provenance(record)
    return record


def read_provenance(record: Mapping) -> str:
    """One sentence on a :func:`provenance_record`."""
    n, described = record["n_samples"], record["n_described"]
    if not described:
        return (f"None of the {n} samples came with a description of the model that wrote it (only "
                "OpenAI-compatible servers send one, and samples stored by older versions have none).")
    models = ", ".join(f"{name} ({count})" for name, count in record["served_models"].items()) or "not named"
    usage = record["usage"]
    cost = (f"; they used {usage['total_tokens']:,} tokens when drawn ({usage.get('prompt_tokens', 0):,} in the "
            f"prompts, {usage.get('completion_tokens', 0):,} generated"
            + (f", of which {usage['reasoning_tokens']:,} hidden reasoning" if usage.get("reasoning_tokens") else "")
            + ")" if "total_tokens" in usage else "")
    prints = len(record["system_fingerprints"])
    fingerprint = (f", under {prints} system fingerprint{'s' if prints != 1 else ''}" if prints else "")
    return f"{described} of {n} samples say which model answered: {models}{fingerprint}{cost}."
