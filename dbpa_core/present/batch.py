"""The terminal's sentences about batch files: what an export holds, what an import stored, a batch's state."""

from __future__ import annotations

from pathlib import Path

from ..audit.batch import FAILURE_REASONS


def read_export(export) -> str:
    """Plain sentences for the terminal about a :class:`~dbpa_core.audit.batch.BatchExport`."""
    noun = "samples" if export.kind == "samples" else "texts to embed"
    lines = [f"{export.n_stored:,} of {export.n_needed:,} {noun} are already stored; "
             f"{len(export.requests):,} request lines cover the rest."]
    if export.n_local:
        lines.append(f"{export.n_local:,} samples come from a backend that runs on this machine; "
                     f"`{export.command}` draws them itself.")
    if export.n_waiting:
        lines.append(f"{export.n_waiting:,} samples are not stored yet, so their texts cannot be embedded: "
                     "export, run and import the samples first, then export the embeddings again.")
    for model, estimate in export.estimates:
        if export.kind == "samples":
            lines.append(f"{model} at Batch API prices: {estimate.reading()}")
        else:
            cost = ("an unknown price (no batch price in assets/pricing.yaml)" if estimate.embedding_cost is None
                    else f"${estimate.embedding_cost:,.4f}")
            lines.append(f"{model} at Batch API prices: ≈{estimate.embedding_tokens:,} tokens to embed "
                         f"in {estimate.calls:,} requests: {cost}.")
    return "\n".join(lines)


def read_import(result) -> str:
    """Plain sentences for the terminal about a :class:`~dbpa_core.audit.batch.BatchImport`: counts, then
    each kind of failure with its first lines."""
    reasons = ", ".join(f"{count:,} {reason}" for reason, count in result.counts.items())
    lines = [f"{Path(result.path).name}: imported {result.n_imported:,}, refused {len(result.failures):,}"
             + (f" ({reasons})." if reasons else "."),
             f"{result.n_lines:,} lines read; {result.n_stored:,} results stored, "
             f"{result.n_already_stored:,} were already stored (importing again is harmless), "
             f"{len(result.failures):,} lines failed and stored nothing."]
    if result.n_differing:
        lines.append(f"{result.n_differing:,} results differ from the text already stored for their slot; "
                     "the stored text was kept.")
    for reason, count in result.counts.items():
        failures = [f for f in result.failures if f.reason == reason]
        where = ", ".join(str(f.line) for f in failures[:5]) + (", …" if count > 5 else "")
        lines.append(f"  {count:,} × {FAILURE_REASONS[reason]}: line{'s' if count > 1 else ''} {where}; "
                     f"first: {failures[0].message}")
    if result.failures:
        lines.append("Export again to get request lines for the samples still missing.")
    return "\n".join(lines)


def read_batch_status(job) -> str:
    """One plain sentence on a batch's progress."""
    counts = job.request_counts
    done = (f"{counts.completed:,} of {counts.total:,} requests done, {counts.failed:,} failed"
            if counts is not None else "no request counted yet")
    return f"Batch {job.id} is {job.status}: {done}."
