"""Record the local models' answers for Figs 1–2 in the paper's own setup (scenario ``cvd_nice_risk``).

    nice -n 10 python scripts/record_cvd_roc.py --pilot 6            # time a few samples, estimate the rest
    nice -n 10 python scripts/record_cvd_roc.py [--models smollm2 smollm2-q8_0 smollm2-q3_k_m]
                                                [--seeds 0 1 2] [--k 40] [--threads 1]
    python scripts/record_cvd_roc.py --write                         # ship what the store holds

Every arm of the design (the original prompt and its 8 controls and 8 targets, paper §4.2) gets k answers
per model and seed, drawn through the sample store (``--store``, default ``.dbpa_cache/record.sqlite``, the
one ``scripts/record_samples.py`` uses), so an interrupted run resumes where it stopped and a second run
draws nothing.  The generation settings are those of ``assets/recorded/`` (T = 0.7, 80 new tokens, the
model's chat template), so ``record_samples.py`` replays the first 20 answers of seed 0 of the packaged
model from the same store.  ``--write`` reads the store (refusing a design it does not hold completely),
embeds each distinct answer once with the packaged MiniLM and writes :data:`dbpa_core.paper.cvd_roc.ANSWERS_FILE`
(the answers, xz-compressed JSON) and :data:`dbpa_core.paper.cvd_roc.VECTORS_FILE` (their vectors, float16,
as ``scripts/embed_paper.py`` writes the paper's), so the page opens without embedding anything.
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.data.store import SampleStore, text_hash  # noqa: E402
from dbpa_core.paper import cvd_roc  # noqa: E402
from dbpa_core.samplers import SamplingFailed  # noqa: E402
from dbpa_core.samplers.local import LocalSampler, get_engine  # noqa: E402


class RecordingSampler(LocalSampler):
    """The local sampler (k answers decoded together) with a fixed number of llama.cpp threads.

    llama.cpp's threads wait for each other at every layer; on the shared 2-core machine, with other
    jobs running, 2 threads decoded 3 tokens/s and 1 thread 15–30 one answer at a time (pilot, load
    average ≈ 9).  The thread count does not enter the store key: it changes the speed, not the answers.
    """

    def __init__(self, model: str, threads: int):
        super().__init__(model=model)
        self.threads = threads

    @property
    def engine(self):
        return get_engine(self.model_path, self.n_ctx, n_threads=self.threads)


def design() -> list[tuple[str, str, str]]:
    """(arm, kind, prompt) of the original and every perturbation of ``cvd_nice_risk``."""
    return [(a.arm, a.kind, a.prompt) for a in cvd_roc.scenario_arms()]


def count_tokens(sampler: RecordingSampler, texts) -> int:
    return sum(len(sampler.engine.tokenize(t, special=False)) for t in texts)


def record(args, store: SampleStore) -> None:
    arms = design()
    total = len(args.models) * len(args.seeds) * len(arms) * args.k
    drawn, seconds, tokens, done = 0, 0.0, 0, 0
    for model in args.models:
        sampler = RecordingSampler(model, args.threads)
        for seed in args.seeds:
            for arm, _, prompt in arms:
                start = time.perf_counter()
                held = store.count_samples(sampler.describe_request(prompt, temperature=args.temperature,
                                                                    max_tokens=args.max_tokens, seed=seed))
                try:
                    texts = sampler.sample(prompt, args.k, temperature=args.temperature,
                                           max_tokens=args.max_tokens, seed=seed, store=store)
                except SamplingFailed as error:
                    # e.g. an empty reply (the model stopped at once), which every sampler refuses as a
                    # non-answer: this model cannot complete the design at these seeds
                    raise SystemExit(f"{model} seed {seed} {arm}: {error} Record another model (--models).") from None
                new = max(0, args.k - held)
                done += args.k
                if new:
                    drawn += new
                    seconds += time.perf_counter() - start
                    tokens += count_tokens(sampler, texts[held:])
                rate = f"{seconds / drawn:.1f} s/answer, {tokens / seconds:.1f} tokens/s" if drawn else "from the store"
                left = (total - done) * seconds / drawn / 3600 if drawn else 0.0
                print(f"{model} seed {seed} {arm}: {args.k} answers ({new} new; {rate}); {done}/{total} done, "
                      f"≈ {left:.1f} h left at this rate", file=sys.stderr, flush=True)


def pilot(args, store: SampleStore) -> None:
    """Draw ``--pilot`` answers of two arms with the first model and estimate the whole recording."""
    sampler = RecordingSampler(args.models[0], args.threads)
    arms = design()
    start, texts = time.perf_counter(), []
    for _arm, _, prompt in (arms[0], arms[-1]):
        texts += sampler.sample(prompt, args.pilot, temperature=args.temperature, max_tokens=args.max_tokens,
                                seed=args.seeds[0], store=store)
    seconds = time.perf_counter() - start
    per_answer = seconds / len(texts)
    total = len(args.models) * len(args.seeds) * len(arms) * args.k
    print(f"pilot: {len(texts)} answers in {seconds:.0f} s ({per_answer:.1f} s/answer, "
          f"{count_tokens(sampler, texts) / seconds:.1f} tokens/s, {args.threads} thread(s)); the design is "
          f"{len(args.models)} models × {len(args.seeds)} seeds × {len(arms)} arms × k = {args.k} = {total} "
          f"answers ≈ {total * per_answer / 3600:.1f} h at this rate (answers already stored are not drawn "
          "again; a measurement taken while the first answer was stored includes it).")


def write(args, store: SampleStore) -> None:
    """Read the whole design from the store, embed it once and write the two shipped files."""
    from dbpa_core.embedders import get_embedder

    arms = design()
    answers: dict = {}
    for model in args.models:
        sampler = RecordingSampler(model, args.threads)
        for seed in args.seeds:
            for arm, _, prompt in arms:
                description = sampler.describe_request(prompt, temperature=args.temperature,
                                                       max_tokens=args.max_tokens, seed=seed)
                stored = store.get_samples(description, range(args.k))
                if len(stored) < args.k:
                    raise SystemExit(f"{model} seed {seed} arm {arm}: {len(stored)} of {args.k} answers stored; "
                                     "record them first (run without --write).")
                answers.setdefault(model, {}).setdefault(str(seed), {})[arm] = [stored[i][0] for i in range(args.k)]
        files = {model: Path(RecordingSampler(model, args.threads).model_path).name for model in args.models}
    document = {
        "scenario": cvd_roc.SCENARIO, "k": args.k, "seeds": list(args.seeds),
        "generation": {"temperature": args.temperature, "max_tokens": args.max_tokens, "chat_template": True},
        "models": files, "arms": [{"arm": arm, "kind": kind, "prompt": prompt} for arm, kind, prompt in arms],
        "answers": answers,
    }
    cvd_roc.ANSWERS_FILE.parent.mkdir(parents=True, exist_ok=True)
    cvd_roc.ANSWERS_FILE.write_bytes(lzma.compress(json.dumps(document, ensure_ascii=False).encode(), preset=9))
    texts = list(dict.fromkeys(t for by_seed in answers.values() for by_arm in by_seed.values()
                               for arm_texts in by_arm.values() for t in arm_texts))
    embedder = get_embedder("minilm")
    vectors = embedder.embed(texts, store=store)
    hashes = np.array([np.frombuffer(bytes.fromhex(text_hash(t)), dtype=np.uint8) for t in texts])
    np.savez_compressed(cvd_roc.VECTORS_FILE, text_hashes=hashes, vectors=vectors.astype(np.float16),
                        embedder_key=np.array(embedder.key))
    for path in (cvd_roc.ANSWERS_FILE, cvd_roc.VECTORS_FILE):
        print(f"wrote {path.relative_to(REPO)} ({path.stat().st_size / 1e6:.2f} MB)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(cvd_roc.MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(cvd_roc.SEEDS))
    parser.add_argument("--k", type=int, default=cvd_roc.K)
    parser.add_argument("--temperature", type=float, default=cvd_roc.TEMPERATURE)
    parser.add_argument("--max-tokens", type=int, default=cvd_roc.MAX_TOKENS)
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (1 on a shared machine)")
    parser.add_argument("--store", default=str(REPO / ".dbpa_cache" / "record.sqlite"))
    parser.add_argument("--pilot", type=int, help="draw this many answers of two arms, print an estimate, stop")
    parser.add_argument("--write", action="store_true", help="write the shipped files from the store")
    args = parser.parse_args(argv)
    store = SampleStore(args.store)
    if args.pilot:
        pilot(args, store)
    elif args.write:
        write(args, store)
    else:
        record(args, store)


if __name__ == "__main__":
    main()
