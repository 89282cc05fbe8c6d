"""Command line: headless audits and two-file tests.

    python -m dbpa_core audit SPEC.yaml [--out DIR] [--store PATH] [--fail-on-change]
    python -m dbpa_core test A.jsonl B.jsonl [--similarity cosine] [--discrepancy jsd]
                             [--n-resamples 1000] [--alpha 0.05] [--seed 0] [--json OUT] [--fail-on-change]
    python -m dbpa_core reproduce {table2,fig1,fig3,appendix} [--json OUT] [--seed 0] [--n-resamples 1000]
                                  [--store PATH]

Exit codes: 0 = ran (and, with --fail-on-change, no significant change);
1 = --fail-on-change and a change was detected; 2 = bad input (the message
names the key or file and the fix).  Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

EXIT_OK, EXIT_CHANGE, EXIT_BAD_INPUT = 0, 1, 2


class ProgressBar:
    """A one-line progress bar on stderr (redrawn in place on a terminal)."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.last = 0.0

    def __call__(self, stage: str, done: int, total: int):
        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return None
        self.last = now
        width = 30
        filled = int(width * done / max(total, 1))
        line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {stage}"
        end = "\r" if self.stream.isatty() and done < total else "\n"
        if end == "\n" and done < total and not self.stream.isatty():
            return None  # a log file gets one line per finished stage
        self.stream.write(f"\r{line[:120]:<120}{end}" if self.stream.isatty() else line + "\n")
        self.stream.flush()
        return None


def _audit(args) -> int:
    from .audit import run_audit, spec_settings
    from .present.exports import family_record, write_reports
    from .audit.spec import load_spec
    from .data.store import SampleStore

    spec = load_spec(args.spec)
    store = SampleStore(args.store) if args.store else SampleStore()
    family = run_audit(spec, store=store, progress=ProgressBar())
    record = family_record(family, name=spec.name, settings=spec_settings(spec))
    out = Path(args.out) if args.out else Path(f"audit-{spec.name}")
    paths = write_reports(family, record, out)
    for perturbation in record["perturbations"]:
        print(f"{perturbation['label'][:48]:48} ω={perturbation['statistic']:.4g}  p={perturbation['pvalue']:.4g}  "
              f"p_adj={perturbation['pvalue_adjusted']:.4g} {perturbation['stars']:3} {perturbation['decision']}")
    summary = record["summary"]
    print(f"{summary['n_rejected']} of {summary['n_perturbations']} perturbations changed the output distribution "
          f"(α = {summary['alpha']:g}, {summary['correction']}). Reports: {', '.join(str(p) for p in paths.values())}")
    return EXIT_CHANGE if args.fail_on_change and summary["change_detected"] else EXIT_OK


def _load_arm(path: Path):
    from .data.uploads import read_samples

    if not path.exists():
        raise ValueError(f"{path}: file not found.")
    table = read_samples(path.read_bytes(), path.name, default_arm=path.stem)
    if len(table.arms) != 1:
        raise ValueError(f"{path.name}: holds the arms {', '.join(table.arms)}; give one arm per file "
                         "(or drop the `arm` column).")
    arm = table.arms[0]
    return table.texts[arm], (table.embeddings or {}).get(arm)


def _test(args) -> int:
    from .embedders import get_embedder
    from .stats.permutation import dbpa_test
    from .present.readings import read_decision, read_pvalue, result_to_dict, significance_stars

    (texts_a, vectors_a), (texts_b, vectors_b) = _load_arm(Path(args.a)), _load_arm(Path(args.b))
    if args.similarity in ("bleu", "rouge_l"):
        x, y = texts_a, texts_b
    elif vectors_a is not None and vectors_b is not None:
        x, y = vectors_a, vectors_b
    else:
        embedder = get_embedder("minilm")
        x, y = embedder.embed(texts_a), embedder.embed(texts_b)
    result = dbpa_test(x, y, similarity=args.similarity, discrepancy=args.discrepancy,
                       n_resamples=args.n_resamples, rng=args.seed)
    print(f"ω ({args.discrepancy}) = {result.statistic:.4g}   p = {result.pvalue:.4g} "
          f"{significance_stars(result.pvalue)}   k = {result.n_original} / {result.n_perturbed}")
    print(read_pvalue(result.pvalue, result.n_resamples, exact=result.exact))
    print(read_decision(result.pvalue, args.alpha))
    if args.json:
        Path(args.json).write_text(json.dumps(result_to_dict(result, a=str(args.a), b=str(args.b), seed=args.seed),
                                              indent=2), encoding="utf-8")
    return EXIT_CHANGE if args.fail_on_change and result.pvalue <= args.alpha else EXIT_OK


def _reproduce(args) -> int:
    """The paper's experiments on its shipped responses, the reported values beside ours."""
    from .audit.reproduce import REPRODUCERS, summary_lines
    from .data.store import SampleStore
    from .present.exports import _json_default

    store = SampleStore(args.store) if args.store else SampleStore()
    result = REPRODUCERS[args.experiment](store=store, n_resamples=args.n_resamples, seed=args.seed,
                                          progress=ProgressBar())
    print("\n".join(summary_lines(result)))
    if args.json:
        Path(args.json).write_text(json.dumps(result.record(), indent=2, default=_json_default), encoding="utf-8")
    return EXIT_OK


def _add_reproduce(commands) -> None:
    from .audit.reproduce import EXPERIMENTS

    reproduce = commands.add_parser("reproduce", help="reproduce the paper's experiments on its shipped responses")
    reproduce.add_argument("experiment", choices=EXPERIMENTS,
                           help="table2 (personas), fig1 (TPR/FPR), fig3 (alignment), appendix (C.2-C.4)")
    reproduce.add_argument("--json", help="write {experiment, rows, settings} as JSON here")
    reproduce.add_argument("--seed", type=int, default=0, help="seed of every permutation test")
    reproduce.add_argument("--n-resamples", type=int, default=1000)
    reproduce.add_argument("--store", help="sample store caching the embeddings; default $DBPA_STORE")


def main(argv=None) -> int:
    from .stats.discrepancy import DISCREPANCY_NAMES
    from .stats.similarity import SIMILARITIES

    parser = argparse.ArgumentParser(prog="python -m dbpa_core", description="Distribution-based perturbation "
                                     "analysis of LLM outputs, without the browser.")
    commands = parser.add_subparsers(dest="command", required=True)
    audit = commands.add_parser("audit", help="run an audit described by a YAML SPEC")
    audit.add_argument("spec", help="the SPEC file (YAML)")
    audit.add_argument("--out", help="folder for report.json, results.csv and report.html")
    audit.add_argument("--store", help="sample store (SQLite); default $DBPA_STORE or ~/.cache/dbpa_explorer")
    audit.add_argument("--fail-on-change", action="store_true", help="exit 1 when any perturbation is significant")
    test = commands.add_parser("test", help="test two files of samples (JSONL or CSV, a `text` field per row)")
    test.add_argument("a", help="original arm")
    test.add_argument("b", help="perturbed arm")
    test.add_argument("--similarity", default="cosine", choices=SIMILARITIES)
    test.add_argument("--discrepancy", default="jsd", choices=DISCREPANCY_NAMES)
    test.add_argument("--n-resamples", type=int, default=1000)
    test.add_argument("--alpha", type=float, default=0.05)
    test.add_argument("--seed", type=int, default=0)
    test.add_argument("--json", help="write the result as JSON here")
    test.add_argument("--fail-on-change", action="store_true", help="exit 1 when p <= alpha")
    _add_reproduce(commands)
    args = parser.parse_args(argv)
    try:
        return {"audit": _audit, "test": _test, "reproduce": _reproduce}[args.command](args)
    except (ValueError, KeyError) as error:
        print(f"error: {str(error).strip(chr(39))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted: every sample drawn so far is in the store; run the same command again to resume.",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
