"""Record the OT stability experiments (Liu, Li, Cui & Blanchet, §2.4, §3) on local models.

    nice -n 10 python scripts/record_stability.py [--pilot 3] [--tasks qa secret]

For every item of both tasks (assets/audits/stability_{qa,secret}.yaml) and
every target of :data:`TARGETS`, the packaged SmolLM2 proposes rewrites, the
embedding judge (threshold calibrated on assets/audits/stability_labelled.yaml)
keeps those that keep the meaning, and the target answers them
(:func:`dbpa_core.stability.search.search_item`).  Every call goes through the
sample store, so a killed run resumes where it stopped and a rerun replays
what is stored in seconds.  After each item the searches done for every
target so far are written to assets/recorded/audits/stability_search.json.gz
(written only by this script, never by hand); ``--pilot N`` records the first
N items of each task only and writes nothing to assets/.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.data.store import SampleStore  # noqa: E402
from dbpa_core.embedders import get_embedder  # noqa: E402
from dbpa_core.samplers import get_sampler  # noqa: E402
from dbpa_core.stability.judge import EmbeddingJudge, calibrate_threshold  # noqa: E402
from dbpa_core.stability.runs import RUNS_FILE, SEARCH_SETTINGS, TARGET_MAX_TOKENS, TARGETS  # noqa: E402
from dbpa_core.stability.search import Target, search_item, smollm2_token_count  # noqa: E402
from dbpa_core.stability.tasks import TASKS, load_items  # noqa: E402

# Budgets sized for two shared CPU cores (README: measured recording time).
SEARCH = dict(SEARCH_SETTINGS)
MAX_TOKENS = dict(TARGET_MAX_TOKENS)


def build_targets(task: str) -> list[Target]:
    return [Target(name, get_sampler("local", model=spec["model"]), spec["system"], MAX_TOKENS[task])
            for name, spec in TARGETS.items()]


def recorded_rows(path: Path, settings: dict) -> dict:
    """The searches already in the shipped file, if it was recorded with these settings (a continuation keeps them)."""
    if not path.exists():
        return {}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    if {k: v for k, v in data["settings"].items() if k != "items_done"} != settings:
        return {}
    return {(row["task"], row["prompt"], row["target"]): row for row in data["searches"]}


def write(path: Path, settings: dict, rows: dict) -> None:
    payload = json.dumps({"settings": settings, "searches": list(rows.values())}, ensure_ascii=False,
                         separators=(",", ":"))
    partial = path.with_suffix(".partial")
    with gzip.GzipFile(partial, "wb", mtime=0) as handle:  # mtime 0: the same searches give the same bytes
        handle.write(payload.encode("utf-8"))
    os.replace(partial, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pilot", type=int, help="record the first N items of each task; write nothing to assets/")
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--secret-items", type=int, help="record only the first N items of the secret task (QA "
                        "goes on alone after them); run again without it to add the rest")
    parser.add_argument("--store", default=str(REPO / ".dbpa_cache" / "record.sqlite"))
    args = parser.parse_args(argv)
    store = SampleStore(args.store)
    embedder = get_embedder("minilm")
    calibration = calibrate_threshold(embedder, store=store)
    judge = EmbeddingJudge(embedder, calibration.threshold)
    assistant = get_sampler("local")
    count = smollm2_token_count()
    items = {task: load_items(task)[: args.pilot] for task in args.tasks}
    if args.secret_items is not None and "secret" in items:
        items["secret"] = items["secret"][: args.secret_items]
    targets = {task: build_targets(task) for task in args.tasks}
    settings = {**SEARCH, "target_max_tokens": MAX_TOKENS, "assistant": assistant.model, "judge": judge.describe(),
                "judge_loo_accuracy": calibration.loo_accuracy, "tokenizer": "SmolLM2-135M-Instruct",
                "targets": dict(TARGETS)}
    # The file only grows: a run restricted to some items (--secret-items) or stopped early keeps the searches
    # an earlier run wrote; each search done now replaces its row.
    rows = recorded_rows(RUNS_FILE, json.loads(json.dumps(settings))) if not args.pilot else {}
    started = time.monotonic()
    # Items of the two tasks alternate, every target on each item, so that a run stopped early has every
    # target on the same items of both tasks.
    order = [(task, i) for i in range(max(len(v) for v in items.values())) for task in args.tasks
             if i < len(items[task])]
    for done, (task, index) in enumerate(order, start=1):
        item = items[task][index]
        for target in targets[task]:
            search = search_item(item, target, assistant, judge, embedder, token_count=count, store=store, **SEARCH)
            rows[task, item.prompt, target.name] = search.to_dict()
            print(f"[{time.monotonic() - started:7.0f} s] {task} {index + 1:2d} {target.name:<16} "
                  f"original loss {search.original_loss:.0f}, {search.queries} queries, "
                  f"{'FAILED at ' + str(search.failed_at) if search.adversarial else 'held'}", flush=True)
        if not args.pilot:
            write(RUNS_FILE, {**settings, "items_done": done}, rows)
    print(f"{len(order)} items x {len(TARGETS)} targets in {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
