"""``compare``: one perturbation across many prompts, from an eval log (:mod:`dbpa_core.audit.compare`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .._validation import check_positive_int, shown
from ..data.files import writable_file, write_text
from . import EXIT_CHANGE, EXIT_OK


def _warn(message: str) -> None:
    print(f"warning: {shown(message)}", file=sys.stderr)


def _progress_bar():
    from .progress import ProgressBar

    return ProgressBar()


def compare_command(args) -> int:
    from ..audit.compare import CompareRequest, run_compare
    from ..present.compare import compare_readings, compare_record, compare_table
    from functools import partial

    from . import open_store
    from ..paper.embeddings import load_shipped_embeddings
    from ..present.formatting import format_pvalue

    from .._validation import check_probability
    from ..stats.permutation import MAX_RESAMPLES

    check_positive_int(args.n_resamples, "--n-resamples", maximum=MAX_RESAMPLES)
    check_probability(args.alpha, "--alpha")
    check_probability(args.fdr, "--fdr")
    check_positive_int(args.seed, "--seed", minimum=0)
    json_path = writable_file(Path(args.json), "--json") if args.json else None
    request = CompareRequest(paths=tuple(args.files), fmt=args.fmt, arms=tuple(args.arms) if args.arms else None,
                             similarity=args.similarity, discrepancy=args.discrepancy,
                             n_resamples=args.n_resamples, seed=args.seed, alpha=args.alpha, fdr=args.fdr,
                             embedder=args.embedder)
    store = open_store(args.store)
    if args.fmt in (None, "spec"):  # `dbpa compare SPEC.yaml`: the SPEC's prompts sampled now (requests.many)
        from ..requests.many import compare_spec_result

        result = compare_spec_result(args, store)
    else:
        result = run_compare(request, store=store, progress=_progress_bar(),
                             known_vectors=partial(load_shipped_embeddings, store=store))
    for note in (*result.log.notes, *result.test.warnings):
        _warn(note)
    test, (a, b) = result.test, result.arms
    print(f"{a} → {b}: {test.n_prompts} prompts   ω ({args.discrepancy}) = {test.statistic:.4g}   "
          f"p = {format_pvalue(test.pvalue, test.n_resamples, exact=test.exact)}   effect = {test.effect_size:+.3g} ({test.standardized_effect:+.1f} null sd)")
    print(*compare_readings(result), sep="\n")
    print(f"\n{'q':>7} {'p':>7} {'k ' + a[:8]:>10} {'k ' + b[:8]:>10}  prompt")
    for row in compare_table(result):
        prompt = " ".join(row["prompt"].split())
        print(f"{row['qvalue']:7.3f} {row['pvalue']:7.3f} {row['k'][a]:10d} {row['k'][b]:10d}  "
              f"{prompt[:70] + ('…' if len(prompt) > 70 else '')}{'  *' if row['changed'] else ''}")
    from ..present.compare import compare_theme_lines  # what changed in each flagged prompt

    print(*compare_theme_lines(result), sep="\n")
    if json_path is not None:
        write_text(json_path, json.dumps(compare_record(result), indent=2, ensure_ascii=False))
    return EXIT_CHANGE if args.fail_on_change and result.change else EXIT_OK


def add_compare_parser(commands, similarities, discrepancies, max_resamples) -> None:
    from ..audit.compare import COMPARE_DISCREPANCY

    compare = commands.add_parser("compare", help="one perturbation across many prompts, from an eval log "
                                  "(re-splits each prompt's outputs within that prompt)")
    compare.add_argument("files", nargs="+", metavar="FILE", help="one log holding both arms, or two (one arm each)")
    compare.add_argument("--from", dest="fmt", choices=("promptfoo", "lm-eval", "inspect", "jsonl", "spec"),
                         help="the log's format; omit it (or spec) for a compare SPEC.yaml, sampled now")
    compare.add_argument("--arms", nargs=2, metavar=("A", "B"), help="the original arm, then the perturbed one")
    compare.add_argument("--similarity", default="cosine", choices=similarities, type=str.lower)
    compare.add_argument("--discrepancy", default=COMPARE_DISCREPANCY, choices=discrepancies, type=str.lower,
                         help=f"ω (default {COMPARE_DISCREPANCY}: the most power with few outputs per prompt)")
    compare.add_argument("--n-resamples", type=int, default=1000, help=f"B, at most {max_resamples:,}")
    compare.add_argument("--seed", type=int, default=0)
    compare.add_argument("--alpha", type=float, default=0.05)
    compare.add_argument("--fdr", type=float, default=0.1, help="false discovery rate of the per-prompt flags")
    compare.add_argument("--embedder", default="minilm", choices=("minilm",))
    compare.add_argument("--store", help="sample store (SQLite) caching the vectors; default $DBPA_STORE or "
                         "~/.cache/dbpa_explorer")
    compare.add_argument("--json", help="write the result as JSON here")
    compare.add_argument("--fail-on-change", action="store_true", help="exit 1 when p <= alpha")
