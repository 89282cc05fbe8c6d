"""Regenerate the recorded data of the two sibling audits (RUT and OT stability).

    python scripts/record_audits.py

assets/recorded/audits/rut_scores.json: for each prompt of assets/audits/rut_prompts.yaml,
the reference model's (local SmolLM2, T=0.7) scores of its own responses and of
each alternative's responses.  assets/recorded/audits/stability_answers.jsonl: the local
model's answers to each question of assets/audits/stability_questions.yaml and its
rule-based rewrites, greedy and sampled.  Everything goes through the sample
store, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.data.assets import RECORDED_AUDITS_DIR  # noqa: E402
from dbpa_core.rut.collect import record_rut_scores  # noqa: E402
from dbpa_core.samplers import get_sampler  # noqa: E402
from dbpa_core.rut.scoring import ReferenceScorer  # noqa: E402
from dbpa_core.stability.grader import is_correct  # noqa: E402
from dbpa_core.stability.data import stability_questions  # noqa: E402
from dbpa_core.stability.rewrites import REWRITES, rewrite  # noqa: E402
from dbpa_core.data.store import SampleStore  # noqa: E402

OUT = RECORDED_AUDITS_DIR


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audit", choices=("all", "rut", "stability"), default="all",
                        help="record one audit's data only (default: both)")
    parser.add_argument("--reference-samples", type=int, default=16)
    parser.add_argument("--alternative-samples", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", default=str(REPO / ".dbpa_cache" / "record.sqlite"))
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    store = SampleStore(args.store)
    local = get_sampler("local")
    scorer = ReferenceScorer()

    if args.audit in ("all", "stability"):
        record_stability(local, store)
    if args.audit in ("all", "rut"):
        record = record_rut_scores(local, get_sampler("simulated"), scorer, reference_samples=args.reference_samples,
                                   alternative_samples=args.alternative_samples, max_tokens=args.max_tokens,
                                   seed=args.seed, store=store,
                                   progress=lambda done, total: print(f"rut prompt {done}/{total}", file=sys.stderr,
                                                                      flush=True))
        (OUT / "rut_scores.json").write_text(json.dumps(record, indent=1, ensure_ascii=False))


def record_stability(local, store) -> None:
    rows = []
    for setting, temperature in (("greedy", 0.0), ("sampled T=0.8", 0.8)):
        for item in stability_questions():
            variants = [("original", item["question"])] + [(k, rewrite(item["question"], k)) for k in REWRITES]
            for kind, question in variants:
                answer = local.sample(question, 1, temperature=temperature, max_tokens=24, seed=0, store=store)[0]
                rows.append({"setting": setting, "question": item["question"], "rewrite": kind, "prompt": question,
                             "answer": answer, "correct": is_correct(answer, item["answers"])})
        print(f"stability {setting}: done", file=sys.stderr, flush=True)
    (OUT / "stability_answers.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


if __name__ == "__main__":
    main()
