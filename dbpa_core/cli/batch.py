"""``batch``: an audit's samples through batch inference files (export, import) and OpenAI's Batch endpoints
(submit, status, fetch)."""

from __future__ import annotations

from pathlib import Path

from .._validation import check_positive_int, shown
from ..data.files import writable_file
from . import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK


def batch_command(args) -> int:
    """``batch export`` / ``batch import``: an audit's samples through batch inference files."""
    from ..audit.batch import MAX_LINES, export_requests, import_results, write_requests
    from . import open_store
    from ..present.batch import read_export, read_import
    from ..requests.many_batch import batch_spec

    if args.batch_command in ("submit", "status", "fetch"):
        return _batch_api(args)
    # The SPEC (an audit's, or a compare SPEC's prompts × arms) is checked before the store is opened.
    spec = batch_spec(args.spec) if args.spec else None
    if args.batch_command == "export":
        max_lines = check_positive_int(MAX_LINES if args.max_lines is None else args.max_lines, "--max-lines",
                                       maximum=MAX_LINES,
                                       why="OpenAI's limit of requests in one batch file")
        writable_file(Path(args.out), "--out")
        store = open_store(args.store)
        export = export_requests(spec, store=store, embeddings=args.embeddings)
        print(read_export(export))
        written = write_requests(export, args.out, max_lines=max_lines)
        if not written:
            print(f"Nothing to export: every {'embedding' if args.embeddings else 'sample'} is stored. "
                  f"Run `python -m dbpa_core {export.command} {args.spec}`.")
        for path, requests in written.items():
            print(f"Wrote {path}: {len(requests):,} requests to {requests[0].url}, model {requests[0].body['model']} "
                  f"({requests[0].endpoint}).")
        return EXIT_OK
    store = open_store(args.store)
    result = import_results(args.results, store=store, spec=spec)
    print("\n".join(map(shown, read_import(result).split("\n"))))  # each line one line: no forged ones
    if result.n_stored + result.n_already_stored == 0:
        return EXIT_BAD_INPUT  # not one line of the file fits this store (or SPEC)
    return EXIT_OK if result.complete else EXIT_FAILED


def _batch_api(args) -> int:
    """``batch submit`` / ``status`` / ``fetch``: OpenAI's Batch endpoints through the ``openai`` client."""
    from ..audit.batch import batch_client, batch_status, fetch_results, submit_batch
    from ..present.batch import read_batch_status

    client = batch_client(args.base_url)
    if args.batch_command == "submit":
        job = submit_batch(args.requests, client=client)
        print(f"{shown(read_batch_status(job))} Check it with `python -m dbpa_core batch status {job.id}`; "
              f"when it is completed, `python -m dbpa_core batch fetch {job.id} --out results.jsonl`.")
        return EXIT_OK
    if args.batch_command == "status":
        print(shown(read_batch_status(batch_status(args.batch_id, client=client))))
        return EXIT_OK
    writable_file(Path(args.out), "--out")  # checked before the network call
    job, lines = fetch_results(args.batch_id, args.out, client=client)
    print(shown(read_batch_status(job)))
    if lines is None:
        problems = "; ".join(f"{e.code}: {e.message}" for e in (job.errors.data or [])) if job.errors else ""
        print(f"No results to fetch yet{': ' + shown(problems) if problems else ''}. Run the same command again "
              "later.")
        return EXIT_FAILED
    print(f"Wrote {args.out}: {lines:,} result lines. Next: `python -m dbpa_core batch import {args.out} "
          "--spec SPEC.yaml`.")
    return EXIT_OK


def add_batch_parser(commands) -> None:
    batch = commands.add_parser("batch", help="batch inference files (OpenAI Batch API, vLLM run_batch)",
                                description="Export the requests an audit still needs as an OpenAI batch input "
                                            "file, run it with OpenAI's Batch API or vLLM's run_batch, import "
                                            "the results; then `audit` runs from the store.")
    steps = batch.add_subparsers(dest="batch_command", required=True)
    export = steps.add_parser("export", help="write one request line per sample the store is missing")
    export.add_argument("spec", help="the SPEC file (YAML): an audit SPEC or a compare SPEC")
    export.add_argument("--out", required=True, help="the requests file to write (JSONL)")
    export.add_argument("--embeddings", action="store_true",
                        help="export /v1/embeddings requests for stored samples instead (openai embedder)")
    export.add_argument("--max-lines", type=int, help="split into files of at most this many lines "
                                                      "(default 50 000, OpenAI's limit)")
    export.add_argument("--store", help="sample store (SQLite); default $DBPA_STORE or ~/.cache/dbpa_explorer")
    imported = steps.add_parser("import", help="store the results of a batch output file")
    imported.add_argument("results", help="the output (or error) file of the batch engine (JSONL)")
    imported.add_argument("--spec", help="accept only results of this SPEC's requests")
    imported.add_argument("--store", help="sample store (SQLite); default $DBPA_STORE or ~/.cache/dbpa_explorer")
    base_url = {"help": "an OpenAI-compatible server with Batch endpoints; default api.openai.com (OPENAI_API_KEY)"}
    submit = steps.add_parser("submit", help="upload a requests file to OpenAI's Batch API and start the batch")
    submit.add_argument("requests", help="a requests file written by `batch export`")
    submit.add_argument("--base-url", **base_url)
    status = steps.add_parser("status", help="show a submitted batch's progress")
    status.add_argument("batch_id")
    status.add_argument("--base-url", **base_url)
    fetch = steps.add_parser("fetch", help="download a finished batch's output and error lines")
    fetch.add_argument("batch_id")
    fetch.add_argument("--out", required=True, help="the results file to write (JSONL), for `batch import`")
    fetch.add_argument("--base-url", **base_url)
