"""Command line: headless audits and two-file tests.

    python -m dbpa_core audit SPEC.yaml [--out DIR] [--store PATH] [--fail-on-change] [--sequential]
    python -m dbpa_core test A.jsonl B.jsonl [--similarity cosine] [--discrepancy jsd]
                             [--n-resamples 1000] [--alpha 0.05] [--seed 0] [--json OUT] [--fail-on-change]
                             [--explain [--fdr 0.1]]
    python -m dbpa_core rut SPEC.yaml [--out DIR] [--store PATH] [--fail-on-change]
    python -m dbpa_core stability SPEC.yaml [--out DIR] [--store PATH]
    python -m dbpa_core batch export SPEC.yaml --out requests.jsonl [--embeddings] [--store PATH]
    python -m dbpa_core batch import results.jsonl [--spec SPEC.yaml] [--store PATH]
    python -m dbpa_core batch submit requests.jsonl | status BATCH_ID | fetch BATCH_ID --out results.jsonl
    python -m dbpa_core compare LOG [LOG2] --from {promptfoo,lm-eval,inspect,jsonl} [--arms A B] [--json OUT]
                                [--discrepancy energy] [--n-resamples 1000] [--seed 0] [--alpha 0.05] [--fail-on-change]
    python -m dbpa_core reproduce {table2,fig1,fig3,appendix,sample_size,rut,stability} [--json OUT] [--seed 0]
                                  [--n-resamples 1000] [--store PATH]

Exit codes: 0 = ran (and, with --fail-on-change, no significant change);
1 = --fail-on-change and a change was detected; 2 = bad input (the message
names the key or file and the fix); 3 = the run could not finish (API,
network, disk: the message names the URL or path; samples already drawn stay
in the store and the same command resumes), and for `batch import`, some
lines failed (each listed; the rest is stored, export again for what is
missing).  A failure is never reported as 1, so a dead or rate-limited API
cannot read as a detected change in CI.
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sqlite3
import sys
import warnings
from dataclasses import replace
from contextlib import contextmanager
from pathlib import Path

from ._validation import check_positive_int, shown
from .data.files import writable_file, writable_folder, write_text
from .data.store import StoreError

from .cli.progress import ProgressBar
from .cli import EXIT_BAD_INPUT, EXIT_CHANGE, EXIT_FAILED, EXIT_OK  # noqa: F401  (tests read them here)


def _warn(message: str) -> None:
    print(f"warning: {shown(message)}", file=sys.stderr)


@contextmanager
def _naming(path: Path):
    """Errors while writing ``path`` name it (a full disk is reported on close, without a file name)."""
    try:
        yield
    except OSError as error:
        if error.filename:
            raise
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error


def _audit(args) -> int:
    from .audit import run_audit
    from .present.exports import write_reports
    from .present.records import family_record
    from .present.readings import read_family
    from .audit.spec import load_spec
    from .cli import open_store

    from .audit import request_warnings
    from .stats.permutation import ResolutionWarning

    spec = load_spec(args.spec)
    if args.sequential and spec.sequential is None:
        # The SPEC's fixed k becomes the most a sequential test may draw per arm.
        spec = replace(spec, sequential={"k_max": spec.k, "batch_size": min(10, spec.k)})
    request = spec.request  # every size checked before anything is opened or drawn
    out = writable_folder(Path(args.out) if args.out else Path(f"audit-{spec.name}"), "--out")
    store = open_store(args.store)
    for message in request_warnings(request):
        _warn(message)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResolutionWarning)  # said once, above
        family = run_audit(spec, store=store, progress=ProgressBar().update)
    # "What changed" (the SPEC's explain) is computed by the runner, as for the app: family.explanations.
    record = family_record(family, name=spec.name, settings=spec.settings(), explanations=family.explanations)
    with _naming(out):
        paths = write_reports(family, record, out)
    for perturbation in record["perturbations"]:
        print(f"{shown(perturbation['label'])[:48]:48} ω={perturbation['statistic']:.4g}  p={perturbation['pvalue']:.4g}  "
              f"p_adj={perturbation['pvalue_adjusted']:.4g} {perturbation['stars']:3} {perturbation['decision']}")
    for perturbation in record["perturbations"]:
        if "explanation" in perturbation:  # the theme sentences, without the method and representatives ones
            print(f"{shown(perturbation['label'])[:48]:48} what changed:",
                  *map(shown, perturbation["explanation"]["readings"][1:-1]))
    if family.kind == "sequential":
        from .present.readings import read_sequential

        for result in family.results:
            print(f"{shown(result.label)[:48]:48} {read_sequential(result.test)}")
    summary = record["summary"]
    fixed = family.kind != "sequential"
    print(read_family(summary["n_rejected"], summary["n_perturbations"], summary["alpha"], summary["correction"],
                      n_resamples=family.results[0].test.n_resamples if fixed else None,
                      exact=fixed and family.results[0].test.exact))
    print(f"Reports: {', '.join(str(p) for p in paths.values())}")
    return EXIT_CHANGE if args.fail_on_change and summary["change_detected"] else EXIT_OK


def _test(args) -> int:
    from .cli.commands import test_command

    return test_command(args)  # a TwoSampleRequest through the dispatch the app uses too


def _rut(args) -> int:
    from .cli.commands import rut_command

    return rut_command(args)


def _stability(args) -> int:
    from .cli.commands import stability_command

    return stability_command(args)


def _add_sibling_parsers(commands) -> None:
    from .cli.commands import add_rut_parser, add_stability_parser

    add_rut_parser(commands)
    add_stability_parser(commands)


def _failure(error: BaseException) -> str:
    """One paragraph for a run that could not finish: what, where, and what to do."""
    from .samplers import EndpointError

    if isinstance(error, EndpointError | StoreError):
        return str(error)
    if isinstance(error, OSError):
        where = f" {error.filename}" if error.filename else ""
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            return (f"the disk is full: cannot write{where} ({error.strerror}). Free some space or write to "
                    "another disk; nothing half-written was left, and samples drawn so far are in the store, so "
                    "the same command resumes.")
        if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return (f"cannot write{where}: it is read-only ({error.strerror}). Give a path you can write to; "
                    "samples drawn so far are in the store, so the same command resumes.")
        return (f"cannot write or read{where}: {error.strerror or error}. Check the path, its permissions and the "
                "free disk space; samples drawn so far are in the store, so the same command resumes.")
    if isinstance(error, sqlite3.Error):
        return (f"the sample store failed ({error}). Check the disk and that no other program locks the file; "
                "run again to resume.")
    return (f"{type(error).__name__}: {error}. This is unexpected; set DBPA_DEBUG=1 to see the traceback and "
            "report it. Samples drawn so far are in the store.")


def _reproduce(args) -> int:
    """The paper's experiments: this project's values beside the reference run's and the paper's printed ones."""
    from .paper.registry import REPRODUCERS
    from .cli import open_store
    from .present.records import json_default
    from .present.reproduction import reproduction_record, summary_lines

    from ._validation import check_n_resamples

    check_n_resamples(args.n_resamples, "--n-resamples")
    check_positive_int(args.seed, "--seed", minimum=0)
    json_path = writable_file(Path(args.json), "--json") if args.json else None
    store = open_store(args.store)
    result = REPRODUCERS[args.experiment](store=store, n_resamples=args.n_resamples, seed=args.seed,
                                          progress=ProgressBar())
    print("\n".join(summary_lines(result)))
    if json_path is not None:
        write_text(json_path, json.dumps(reproduction_record(result), indent=2, default=json_default))
    return EXIT_OK


def _add_reproduce(commands) -> None:
    from .paper.registry import EXPERIMENTS

    reproduce = commands.add_parser("reproduce", help="reproduce the paper's experiments beside its printed values")
    reproduce.add_argument("experiment", choices=EXPERIMENTS,
                           help="table2 (personas), fig1 (TPR/FPR), fig3 (alignment), appendix (C.2-C.4), "
                                "sample_size (§3.2); rut (the RUT paper's power vs q and Fig 2 on recorded SmolLM2 "
                                "answers); stability (OT stability paper: Table 1, Figure 1)")
    reproduce.add_argument("--json", help="write {experiment, rows (each with its source), settings, agreement} here")
    reproduce.add_argument("--seed", type=int, default=0, help="seed of every permutation test")
    reproduce.add_argument("--n-resamples", type=int, default=1000)
    reproduce.add_argument("--store", help="sample store caching the embeddings; default $DBPA_STORE")


def _start_app(streamlit_args: list[str]) -> int:
    """``dbpa app [STREAMLIT OPTIONS]``: the packaged app, started by ``python -m dbpa_app`` in this interpreter.

    ``dbpa_core`` never imports the app (data flows one way); the app's launcher
    replaces this process, so Ctrl+C and the exit status are Streamlit's own.
    """
    import importlib.util

    if importlib.util.find_spec("streamlit") is None or importlib.util.find_spec("dbpa_app") is None:
        print('error: the app is not installed here; install it with: python3 -m pip install "dbpa-explorer[app]"',
              file=sys.stderr)
        return EXIT_BAD_INPUT
    os.execv(sys.executable, [sys.executable, "-m", "dbpa_app", *streamlit_args])
    raise AssertionError("os.execv returned")  # pragma: no cover - execv never returns


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["app"]:  # everything after `app` belongs to Streamlit (e.g. --server.port 8601)
        return _start_app(argv[1:])
    from . import __version__
    from .stats.discrepancy import DISCREPANCY_NAMES
    from .stats.permutation import MAX_RESAMPLES
    from .stats.similarity import SIMILARITIES

    parser = argparse.ArgumentParser(prog="python -m dbpa_core", description="Distribution-based perturbation "
                                     "analysis of LLM outputs, without the browser.")
    parser.add_argument("--version", action="version", version=f"dbpa-explorer {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("app", help="start the Streamlit app (options after `app` go to Streamlit, "
                        "e.g. dbpa app --server.port 8601)")
    audit = commands.add_parser("audit", help="run an audit described by a YAML SPEC")
    audit.add_argument("spec", help="the SPEC file (YAML)")
    audit.add_argument("--out", help="folder for report.json, results.csv and report.html")
    audit.add_argument("--store", help="sample store (SQLite); default $DBPA_STORE or ~/.cache/dbpa_explorer")
    audit.add_argument("--fail-on-change", action="store_true", help="exit 1 when any perturbation is significant")
    audit.add_argument("--sequential", action="store_true", help="draw in batches of 10 and stop each perturbation "
                       "as soon as its change is clear (at most the SPEC's k per arm; or the SPEC's `sequential`)")
    test = commands.add_parser("test", help="test two files of samples (JSONL or CSV, a `text` field per row)")
    test.add_argument("a", help="original arm")
    test.add_argument("b", help="perturbed arm")
    test.add_argument("--similarity", default="cosine", choices=SIMILARITIES, type=str.lower)
    test.add_argument("--discrepancy", default="jsd", choices=DISCREPANCY_NAMES, type=str.lower)
    test.add_argument("--n-resamples", type=int, default=1000, help=f"B, at most {MAX_RESAMPLES:,}")
    test.add_argument("--alpha", type=float, default=0.05)
    test.add_argument("--seed", type=int, default=0)
    test.add_argument("--json", help="write the result as JSON here")
    test.add_argument("--fail-on-change", action="store_true", help="exit 1 when p <= alpha")
    test.add_argument("--explain", action="store_true", help="also say what changed: themes whose share differs "
                      "between the files (Benjamini-Hochberg at --fdr) and representative outputs")
    test.add_argument("--fdr", type=float, default=0.1, help="false discovery rate of --explain's themes")
    from .cli.batch import add_batch_parser, batch_command
    from .cli.compare import add_compare_parser, compare_command

    add_batch_parser(commands)
    _add_reproduce(commands)
    add_compare_parser(commands, SIMILARITIES, DISCREPANCY_NAMES, MAX_RESAMPLES)
    _add_sibling_parsers(commands)
    from .cli.plan import add_plan_parser, plan_command

    add_plan_parser(commands, SIMILARITIES)
    args = parser.parse_args(argv)
    try:
        return {"audit": _audit, "test": _test, "batch": batch_command, "reproduce": _reproduce, "compare": compare_command,
                "rut": _rut, "stability": _stability, "plan": plan_command}[args.command](args)
    except (ValueError, KeyError) as error:
        print(f"error: {_one_line(str(error).strip(chr(39)))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted: every sample drawn so far is in the store; run the same command again to resume.",
              file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - every failure gets exit 3 and a message, never exit 1
        if os.environ.get("DBPA_DEBUG"):
            raise
        print(f"error: the run could not finish: {_one_line(_failure(error))}", file=sys.stderr)
        return EXIT_FAILED


def _one_line(message: str) -> str:
    """A message as the terminal shows it: one line, at most 2 000 characters, never a credential."""
    text = shown(" ".join(message.split()))
    return text if len(text) <= 2000 else text[:1997] + "..."


if __name__ == "__main__":
    sys.exit(main())
