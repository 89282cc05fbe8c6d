"""The command line's sibling analyses: ``test``, ``rut`` and ``stability``, each one request through the dispatch.

Each handler builds its request (from two files, or from a SPEC:
:mod:`dbpa_core.requests.specs`), runs it through
:func:`dbpa_core.requests.dispatch.run` — the table the app uses too — and
writes what it found: ``rut`` and ``stability`` write report.json,
results.csv and report.html into ``--out`` (all three or none) as ``audit``
does.  Exit codes are ``__main__``'s: 0 ran, 1 a change with
``--fail-on-change``, 2 bad input, 3 could not finish (the store keeps what
was drawn, the same command resumes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .._validation import redact
from ..data.files import writable_file, writable_folder, write_report_files, write_text
from . import EXIT_CHANGE, EXIT_OK, open_store



def _warn(message: str) -> None:
    print(f"warning: {redact(message)}", file=sys.stderr)


def _store(args):
    return open_store(getattr(args, "store", None))


# ------------------------------------------------------------------ test
def _read_arm(path: Path):
    from ..data.uploads import read_sample_file
    from ..requests.two_sample import SampleArm

    table = read_sample_file(path, default_arm=path.stem)
    if len(table.arms) != 1:
        raise ValueError(f"{path.name}: holds the arms {', '.join(table.arms[:5])}; give one arm per file "
                         "(or drop the `arm` column).")
    for warning in table.warnings:
        _warn(warning)
    return SampleArm.from_table(table, table.arms[0], label=str(path))


def test_command(args) -> int:
    """``test A B``: the two-sample test of two files (:class:`~dbpa_core.requests.two_sample.TwoSampleRequest`)."""
    from ..present.records import explanation_record, result_to_dict
    from ..present.formatting import significance_stars
    from ..present.readings import read_decision, read_pvalue
    from ..stats.permutation import resolution_warning
    from ..requests.dispatch import run
    from ..requests.two_sample import TwoSampleRequest

    json_path = writable_file(Path(args.json), "--json") if args.json else None
    try:
        request = TwoSampleRequest(_read_arm(Path(args.a)), _read_arm(Path(args.b)), similarity=args.similarity,
                                   discrepancy=args.discrepancy, n_resamples=args.n_resamples, alpha=args.alpha,
                                   seed=args.seed, explain=args.explain, fdr=args.fdr)
    except ValueError as error:  # the request names its fields; the command line names its options
        message = str(error)
        for field, option in (("n_resamples", "--n-resamples"), ("alpha", "--alpha"), ("fdr", "--fdr"),
                              ("seed", "--seed"), ("`explain`", "--explain")):
            message = message.replace(f"`{field}`" if not field.startswith("`") else field, f"`{option}`")
        raise ValueError(message) from None
    message = resolution_warning(request.alpha, n_original=len(request.original.texts),
                                 n_perturbed=len(request.perturbed.texts), n_resamples=request.n_resamples)
    if message:
        _warn(message)
    found = run(request)
    result = found.test
    print(f"ω ({request.discrepancy}) = {result.statistic:.4g}   p = {result.pvalue:.4g} "
          f"{significance_stars(result.pvalue)}   k = {result.n_original} / {result.n_perturbed}")
    print(read_pvalue(result.pvalue, result.n_resamples, exact=result.exact))
    print(read_decision(result.pvalue, request.alpha, n_resamples=result.n_resamples, exact=result.exact))
    context = {"a": str(args.a), "b": str(args.b), "seed": request.seed, "request": request.key}
    if found.explanation is not None:
        context["explanation"] = explanation_record(found.explanation, arms=(Path(args.a).stem, Path(args.b).stem),
                                                    declared=found.change_detected)
        print("What changed:", *context["explanation"]["readings"][1:-1], sep="\n  ")
    if json_path is not None:
        write_text(json_path, json.dumps(result_to_dict(result, **context), indent=2))
    return EXIT_CHANGE if args.fail_on_change and found.change_detected else EXIT_OK


# ------------------------------------------------------------------- rut
def rut_target_label(request) -> str:
    """What a RUT report calls the audited system."""
    if request.source == "recorded":
        if request.substitute == "reference":
            return "The reference model itself (H₀ holds) — recorded answers of SmolLM2"
        return f"{request.substitute} for a share q = {request.q:g} of answers — recorded answers of SmolLM2"
    if request.target is None:
        return "uploaded responses"
    if request.target.backend == "local":
        return (f"local SmolLM2 with system prompt “{request.target_system or '(none)'}” at "
                f"T = {request.target_temperature:g}")
    return f"{request.target.label} at {request.target.base_url or 'api.openai.com'}"


def rut_reports(found, *, name: str) -> tuple[dict, dict[str, str]]:
    """The JSON record and the three report texts of a RUT audit."""
    import pandas as pd

    from ..present.csv_inputs import rut_inputs, with_inputs
    from ..present.exports import sections_html
    from ..present.records import json_default, rut_record
    from ..present.tables import frame_csv
    from ..present.rut_figures import rank_ecdf, rank_histogram
    from ..present.rut_readings import read_mmd_beside_rut, read_rut_decision, rut_readings

    request, result, scores = found.request, found.rut, found.scores
    beside = {}
    sentences = [*rut_readings(result)]
    if found.mmd is not None:
        reading = read_mmd_beside_rut(found.mmd.pvalue, result.pvalue, request.alpha, substituted=found.n_substituted)
        beside = {"mmd": {"pvalue": found.mmd.pvalue, "n_resamples": found.mmd.n_resamples,
                          "exact": bool(found.mmd.exact), "reading": reading},
                  "substituted_answers": found.n_substituted}
        sentences.append(reading)
    record = rut_record(result, scores, alpha=request.alpha, score=request.score, target=rut_target_label(request),
                        settings=request.settings(), beside=beside)
    record.update(name=name, request=request.key)
    table = pd.DataFrame({"prompt": scores.prompts, "rank": result.ranks, "target_score": scores.target_scores})
    html = sections_html(f"RUT audit {name}", f"Target: {record['target']}. {read_rut_decision(result.pvalue, request.alpha)}",
                         [("The ranks", sentences, [], [rank_histogram(result), rank_ecdf(result)])],
                         request.settings())
    return record, {"json": json.dumps(record, indent=2, default=json_default),
                    "csv": frame_csv(with_inputs(table, rut_inputs(record))), "html": html}


def rut_command(args) -> int:
    """``rut SPEC.yaml``: is this API serving the model it claims? (:class:`~dbpa_core.requests.rut.RUTRequest`)."""
    from ..requests.rut import RUTRequest

    return _sibling_command(args, RUTRequest.from_mapping, rut_reports, _rut_summary)


def _rut_summary(found, record: dict) -> list[str]:
    """What ``rut`` prints: the target, the test, the decision and the share bound (and the MMD beside)."""
    from ..present.formatting import format_rut_pvalue, p_relation
    from ..present.rut_readings import read_rut_decision, read_share_bound

    request, result = found.request, found.rut
    return [f"Target: {record['target']}",
            f"{request.test} = {result.statistic:.4g}  p {p_relation(format_rut_pvalue(result.pvalue))}  "
            f"{record['decision']}",
            read_rut_decision(result.pvalue, request.alpha),
            read_share_bound(result.share_lower_bound, result.confidence_level),
            *([record["mmd"]["reading"]] if found.mmd is not None else [])]


# ------------------------------------------------------------- stability
def stability_reports(found, *, name: str) -> tuple[dict, dict[str, str]]:
    """The JSON record and the three report texts of a stability audit."""
    from ..present.exports import sections_html
    from ..present.records import json_default
    from ..present.tables import frame_csv
    from ..present.stability_figures import stability_figure
    from ..present.stability_report import read_figure, read_stability, read_table1_row, stability_record, table1_frame

    request, study = found.request, found.study
    record = stability_record(study, inputs=request.settings())
    criterion = [{"task": task, "model": target, "R": value if value != float("inf") else None,
                  "reading": read_stability(value, request.r)} for (task, target), value in found.statistic.items()]
    record.update(name=name, request=request.key, criterion={"r": request.r, "theta1=theta2": request.theta,
                                                             "rows": criterion,
                                                             "order": {t: found.order(t) for t in study.tasks}})
    table = table1_frame(study)
    r_values = {(row["task"], row["model"]): row["R"] for row in criterion}
    table[f"R(r={request.r:g}, θ={request.theta:g})"] = [r_values.get((task, model))
                                                         for task, model in zip(table["task"], table["model"])]
    sections = [(task, [*(read_table1_row(row) for row in study.task_rows(task)),
                        f"Most stable first at r = {request.r:g}, θ₁ = θ₂ = {request.theta:g}: {found.order(task)}.",
                        read_figure(study, task, "ratio"), read_figure(study, task, "risk")],
                 [table[table["task"] == task]], [stability_figure(study, task, c) for c in ("ratio", "risk")])
                for task in study.tasks]
    html = sections_html(f"Stability audit {name}", "How costly a shift of the questions does it take to make each "
                         "model fail this often? Higher R: more stable.", sections, request.settings())
    return record, {"json": json.dumps(record, indent=2, default=json_default), "csv": frame_csv(table),
                    "html": html}


def stability_command(args) -> int:
    """``stability SPEC.yaml``: the OT stability search and criterion (:class:`~dbpa_core.requests.stability.StabilityRequest`)."""
    from ..requests.stability import StabilityRequest

    return _sibling_command(args, StabilityRequest.from_mapping, stability_reports, _stability_summary)


def _stability_summary(found, record: dict) -> list[str]:
    """What ``stability`` prints: R per task and model with its reading, then each task's order."""
    from ..present.stability_report import read_stability

    request = found.request
    return [*(f"{task:7} {target[:44]:44} R = {value:.4g}   {read_stability(value, request.r)}"
              for (task, target), value in found.statistic.items()),
            *(f"{task}: most stable first at r = {request.r:g}, θ₁ = θ₂ = {request.theta:g}: {found.order(task)}"
              for task in found.study.tasks)]


# ------------------------------------------------------------ shared
def _sibling_command(args, from_mapping, reports, summary) -> int:
    """The one sequence of ``rut`` and ``stability``: the SPEC's request, ``--out`` checked before anything
    runs, the dispatch (a live source resumes from the store), all three reports or none, what ``summary``
    says, then the exit code (1 only with ``--fail-on-change`` and a change)."""
    from ..requests.dispatch import run
    from ..requests.specs import load_request

    name, request = load_request(args.spec, from_mapping)
    out = writable_folder(Path(args.out) if args.out else Path(name), "--out")
    found = run(request, store=_store(args) if request.source == "live" else None, progress=_bar())
    record, texts = reports(found, name=name)
    paths = write_report_files(out, texts)
    for line in summary(found, record):
        print(line)
    print(f"Reports: {', '.join(str(p) for p in paths.values())}")
    return EXIT_CHANGE if getattr(args, "fail_on_change", False) and found.change_detected else EXIT_OK


def _bar():
    from .progress import ProgressBar

    return ProgressBar().update


# ---------------------------------------------------------------- parsers
def add_rut_parser(commands) -> None:
    rut = commands.add_parser("rut", help="is this API serving the model it claims? (RUT audit from a YAML SPEC)",
                              description="Rank-based uniformity test (Zhu et al., ICLR 2026) on recorded answers "
                                          "or models asked now; examples in dbpa_core/assets/specs/rut_*.yaml.")
    rut.add_argument("spec", help="the SPEC file (YAML)")
    rut.add_argument("--out", help="folder for report.json, results.csv and report.html (default: the SPEC's name)")
    rut.add_argument("--store", help="sample store (SQLite); default $DBPA_STORE or ~/.cache/dbpa_explorer")
    rut.add_argument("--fail-on-change", action="store_true", help="exit 1 when p <= alpha (the target fails)")


def add_stability_parser(commands) -> None:
    stability = commands.add_parser("stability", help="the OT stability search and criterion from a YAML SPEC",
                                    description="Stability under distribution shift (Liu, Li, Cui & Blanchet) on the "
                                                "recorded searches or a live search; examples in "
                                                "dbpa_core/assets/specs/stability_*.yaml.")
    stability.add_argument("spec", help="the SPEC file (YAML)")
    stability.add_argument("--out", help="folder for report.json, results.csv and report.html (default: the SPEC's "
                                         "name)")
    stability.add_argument("--store", help="sample store (SQLite); default $DBPA_STORE or ~/.cache/dbpa_explorer")
