"""Record the answer pools of the RUT paper's experiments (Zhu et al., ICLR 2026, §5) on the packaged SmolLM2.

    nice -n 10 python scripts/record_rut.py                       # everything, resumable
    nice -n 10 python scripts/record_rut.py --prompts 3 --out /tmp/pilot.npz   # a pilot
    nice -n 10 python scripts/record_rut.py --generate-only       # answers into the store, no scoring
    nice -n 10 python scripts/record_rut.py --shard 0/2 & nice -n 10 python scripts/record_rut.py --shard 1/2
    nice -n 10 python scripts/record_rut.py                       # after the shards: writes the pools
    nice -n 10 python scripts/record_rut.py --scored-so-far       # a recording cut short: the pools of the
                                                                  # prompts whose every arm is scored
    nice -n 10 python scripts/record_rut.py --rescore             # the shipped answers scored again (the
                                                                  # scorer changed; the answers did not)

For every prompt of assets/audits/rut_experiment.yaml: the reference model's
answers and each substitute's (temperature 0.5, 30 new tokens), each scored
by the reference model (dbpa_core.rut.experiment.record_arm).  Answers go
through the sample store and every scored (arm, prompt) is appended to a
partial file at once, so a killed run loses at most the (arm, prompt) in
progress: run the same command again to resume.  When every pair is
recorded, the pools are written to assets/recorded/audits/rut_pools.npz (scores
and token ids) and the texts to rut_texts.jsonl.xz beside it.  Prints the
throughput (answers per second) and an estimate of the time left.  llama.cpp
runs on one thread per process (``--threads``): on this shared 2-core machine
two threads wait for each other (``ThreadedSampler``); score with two
``--shard`` processes instead.
"""

from __future__ import annotations

import argparse
import datetime
import json
import lzma
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.data.store import SampleStore, default_store_path  # noqa: E402
from dbpa_core.rut.collect import prompt_seed  # noqa: E402
from dbpa_core.rut.experiment import (  # noqa: E402
    REFERENCE, assemble_pools, complete_prompts, record_arm, rescore_pools, rut_experiment)
from dbpa_core.rut.pools import POOLS_FILE, TEXTS_FILE, load_rut_pools, load_rut_texts, save_rut_pools  # noqa: E402
from dbpa_core.rut.scoring import ReferenceScorer  # noqa: E402
from dbpa_core.samplers.local import LocalSampler, get_engine  # noqa: E402
from dbpa_core.samplers.quantize import file_sha256  # noqa: E402


#: How the pools' answers are scored (their meta's protocol.scoring).
SCORING = ("every answer by the reference model after the user prompt alone, one token per forward step as it was "
           "generated (ReferenceScorer.score_responses)")


class ThreadedSampler(LocalSampler):
    """The local sampler on ``n_threads`` llama.cpp threads.

    On this shared 2-core machine two threads spin-wait for each other whenever
    the other core is busy: batched decoding measured 3.15 s per 30-token answer
    with 2 threads against 0.38 s with 1 (load average 6-12).
    """

    def __init__(self, *args, n_threads: int = 1, **kwargs):
        super().__init__(*args, **kwargs)
        self.n_threads = n_threads

    @property
    def engine(self):
        return get_engine(self.model_path, self.n_ctx, self.n_threads)


def generate_only(config, arms, prompts, samplers, store) -> None:
    """Fill the store with every arm's answers, without scoring them (scoring reads them back later)."""
    total = len(prompts) * len(arms)
    start, answered = time.perf_counter(), 0
    for number, (prompt, arm) in enumerate(((p, a) for p in prompts for a in arms), 1):
        n = config.reference_answers if arm == REFERENCE else config.substitute_answers
        system = None if arm == REFERENCE else config.substitute(arm).system
        kept = store.count_samples(samplers[arm].describe_request(
            prompt, system=system, temperature=config.temperature, max_tokens=config.max_tokens,
            seed=prompt_seed(config.seed, prompt, arm)))
        samplers[arm].sample(prompt, n, system=system, temperature=config.temperature,
                             max_tokens=config.max_tokens, seed=prompt_seed(config.seed, prompt, arm), store=store)
        answered += max(0, n - kept)
        rate = answered / max(time.perf_counter() - start, 1e-9)
        print(f"[{number}/{total}] generated {arm} · {prompt[:40]!r} ({max(0, n - kept)} new); "
              f"{rate:.2f} new answers/s", file=sys.stderr, flush=True)


def partial_files(path: Path) -> list[Path]:
    """The partial file and its shards' (``--shard I/K`` writes ``<stem>.IofK<suffix>`` beside it)."""
    return [path, *sorted(path.parent.glob(f"{path.stem}.*of*{path.suffix}"))]


def read_partial(paths) -> list[dict]:
    """The rows recorded so far; a line cut by a kill is skipped (its pair is recorded again)."""
    rows = []
    for path in paths:
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return rows


def open_for_append(path: Path):
    """``path`` opened to append whole lines: a line cut by a kill is closed first, so no row is glued to it."""
    handle = open(path, "a+", encoding="utf-8")
    if handle.tell() > 0:
        handle.seek(handle.tell() - 1)
        if handle.read(1) != "\n":
            handle.write("\n")
    return handle


def rescore(args) -> None:
    """``--rescore``: the shipped pools' scores recomputed from the shipped texts (``rescore_pools``)."""
    pools, texts = load_rut_pools(POOLS_FILE), load_rut_texts(TEXTS_FILE)
    scorer = ReferenceScorer(n_threads=args.threads)
    start = time.perf_counter()

    def progress(done, total):
        rate = done / (time.perf_counter() - start)
        print(f"rescored {done}/{total} prompts; ≈ {(total - done) / rate / 60:.1f} min left", file=sys.stderr,
              flush=True)

    rescored = rescore_pools(pools, texts, scorer, progress=progress)
    seconds = time.perf_counter() - start
    answers = sum(arm.tokens.shape[0] * arm.n_answers for arm in [rescored.reference, *rescored.substitutes.values()])
    meta = dict(rescored.meta)
    meta["protocol"] = {**meta["protocol"], "scoring": SCORING}
    meta["rescored"] = {"date": datetime.date.today().isoformat(), "seconds": round(seconds, 1), "answers": answers,
                        "threads": args.threads,
                        "what": "every shipped answer scored again from its text (token ids checked equal) by the "
                                "scorer that reads an answer one token per forward step, as it was generated; the "
                                "answers, texts and recording times are those of the recording"}
    out = Path(args.out) if args.out else POOLS_FILE
    save_rut_pools(type(rescored)(rescored.prompts, rescored.reference, rescored.substitutes, meta), out)
    print(f"wrote {out}: {answers} answers rescored in {seconds / 60:.1f} min", file=sys.stderr)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, help="record only the first N prompts (a pilot; needs --out)")
    parser.add_argument("--substitutes", nargs="+", help="record only these substitutes (needs --out)")
    parser.add_argument("--out", help=f"pools file to write; default {POOLS_FILE.relative_to(REPO)}")
    parser.add_argument("--store", help="sample store; default $DBPA_STORE or ~/.cache/dbpa_explorer/store.sqlite")
    parser.add_argument("--partial", help="the resumable partial file; default beside the store")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads per model (default 1)")
    parser.add_argument("--generate-only", action="store_true",
                        help="only fill the store with the answers (no scoring, no pools file)")
    parser.add_argument("--shard", help="I/K: score only every K-th (arm, prompt) pair from the I-th (0-based), "
                                        "into its own partial file; run K shards at once, then once without --shard "
                                        "to write the pools")
    parser.add_argument("--scored-so-far", action="store_true",
                        help="score nothing: write the pools of the prompts whose every arm is scored so far (a "
                             "recording cut short; the file records how many of the protocol's prompts it holds)")
    parser.add_argument("--rescore", action="store_true",
                        help="score the shipped answers again with today's scorer (their token ids are checked) "
                             "and rewrite the pools file's scores; the answers and texts stay as recorded")
    args = parser.parse_args(argv)
    if args.rescore:
        rescore(args)
        return
    if args.scored_so_far and (args.shard or args.generate_only):
        parser.error("--scored-so-far writes the pools: run it without --shard and --generate-only.")

    config = rut_experiment()
    if (args.prompts or args.substitutes) and not args.out and not args.generate_only:
        parser.error("a pilot (--prompts or --substitutes) needs --out: the shipped pools hold the whole protocol.")
    prompts = config.prompts[: args.prompts] if args.prompts else config.prompts
    names = args.substitutes or [s.name for s in config.substitutes]
    config = type(config)(prompts, tuple(config.substitute(n) for n in names), config.temperature,
                          config.max_tokens, config.reference_answers, config.substitute_answers, config.seed)
    out = Path(args.out) if args.out else POOLS_FILE
    store = SampleStore(args.store) if args.store else SampleStore()
    partial = Path(args.partial) if args.partial else default_store_path().parent / "rut_record.partial.jsonl"
    if args.store and not args.partial:
        partial = Path(args.store).with_suffix(".rut_partial.jsonl")

    reference = ThreadedSampler(n_threads=args.threads)
    samplers = {REFERENCE: reference}
    for substitute in config.substitutes:
        samplers[substitute.name] = (ThreadedSampler(model=substitute.model, n_threads=args.threads)
                                     if substitute.model else reference)
    if args.generate_only:
        generate_only(config, [REFERENCE, *names], prompts, samplers, store)
        return
    scorer = ReferenceScorer(n_threads=args.threads)

    arms = [REFERENCE, *names]
    per_arm = {arm: config.reference_answers if arm == REFERENCE else config.substitute_answers for arm in arms}
    wanted = {(arm, p) for p in prompts for arm in arms}
    # A row counts only if it was recorded with today's settings for its arm (a changed protocol records anew).
    settings = {arm: {"temperature": config.temperature, "max_tokens": config.max_tokens, "n": per_arm[arm],
                      "seed": config.seed, "model": getattr(config.substitute(arm), "model", None)
                      if arm != REFERENCE else "reference",
                      "system": config.substitute(arm).system if arm != REFERENCE else None} for arm in arms}
    rows = {(r["arm"], r["prompt"]): r for r in read_partial(partial_files(partial))
            if (r["arm"], r["prompt"]) in wanted and r.get("settings") == settings[r["arm"]]}
    rows = list(rows.values())
    done = {(r["arm"], r["prompt"]) for r in rows}
    todo = [(arm, p) for p in prompts for arm in arms if (arm, p) not in done]
    if args.shard:
        index, count = (int(v) for v in args.shard.split("/"))
        pairs = [(arm, p) for p in prompts for arm in arms]
        mine = {pair for k, pair in enumerate(pairs) if k % count == index}
        todo = [pair for pair in todo if pair in mine]
        partial = partial.with_name(f"{partial.stem}.{index}of{count}{partial.suffix}")
    protocol_prompts = len(prompts)
    if args.scored_so_far:
        kept = complete_prompts(config, rows)
        if not kept:
            parser.error("no prompt has every arm scored yet: run the recording first.")
        config = type(config)(kept, config.substitutes, config.temperature, config.max_tokens,
                              config.reference_answers, config.substitute_answers, config.seed)
        rows = [r for r in rows if r["prompt"] in set(kept)]
        todo = []
        print(f"--scored-so-far: {len(kept)} of {protocol_prompts} prompts have every arm scored; "
              "writing their pools.", file=sys.stderr, flush=True)
    total_answers = sum(per_arm[a] for a, _ in todo)
    print(f"{len(done)} (arm, prompt) pairs already recorded in {partial}; {len(todo)} to go "
          f"({total_answers} answers).", file=sys.stderr, flush=True)
    start, answered = time.perf_counter(), 0
    with open_for_append(partial) as handle:
        for number, (arm, prompt) in enumerate(todo, 1):
            row = {**record_arm(config, arm, prompt, sampler=samplers[arm], scorer=scorer, store=store),
                   "settings": settings[arm]}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
            rows.append(row)
            answered += len(row["texts"])
            rate = answered / (time.perf_counter() - start)
            left = (total_answers - answered) / rate
            print(f"[{number}/{len(todo)}] {arm} · {prompt[:40]!r}: {len(row['texts'])} answers in "
                  f"{row['seconds']:.1f} s; {rate:.2f} answers/s overall, ≈ {left / 3600:.2f} h left",
                  file=sys.stderr, flush=True)

    if args.shard:
        print(f"shard {args.shard} done; run once more without --shard to write the pools.", file=sys.stderr)
        return
    models = {REFERENCE: reference.model_path, **{s.name: samplers[s.name].model_path for s in config.substitutes
                                                  if s.model}}
    seconds = sum(r["seconds"] for r in rows)
    answers = sum(len(r["texts"]) for r in rows)
    meta = {"prompts": {"scored": len(config.prompts), "protocol": protocol_prompts,
                        "note": "the prompts of assets/audits/rut_experiment.yaml whose every arm is scored"
                        if len(config.prompts) < protocol_prompts else "every prompt of the protocol"},
            "protocol": {"temperature": config.temperature, "max_tokens": config.max_tokens,
                         "reference_answers": config.reference_answers,
                         "substitute_answers": config.substitute_answers, "seed": config.seed,
                         "seeds": "prompt_seed(seed, prompt, arm) (dbpa_core.rut.collect)",
                         "scoring": SCORING},
            "substitutes": [{"name": s.name, "kind": s.kind, "label": s.label, "model": s.model, "system": s.system}
                            for s in config.substitutes],
            "models": {name: {"file": Path(path).name, "sha256": file_sha256(path)} for name, path in models.items()},
            "recording": {"seconds": round(seconds, 1), "answers": answers,
                          "what": "per (arm, prompt): reading its answers from the store (generating those "
                                  "missing) and scoring them by the reference model on one llama.cpp thread",
                          "seconds_per_answer": round(seconds / max(answers, 1), 4),
                          "date": datetime.date.today().isoformat()}}
    pools = assemble_pools(config, rows, meta=meta)
    save_rut_pools(pools, out)
    texts = out.with_name(TEXTS_FILE.name) if args.out else TEXTS_FILE
    with lzma.open(texts, "wt", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({"arm": row["arm"], "prompt": row["prompt"], "texts": row["texts"]},
                                    ensure_ascii=False) + "\n")
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) and {texts} ({texts.stat().st_size / 1e6:.1f} MB); "
          f"{answers} answers recorded in {seconds / 3600:.2f} h of sampling and scoring "
          f"({seconds / max(answers, 1):.2f} s per answer).", file=sys.stderr)


if __name__ == "__main__":
    main()
