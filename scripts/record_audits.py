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

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.rewrites import REWRITES, is_correct, rewrite  # noqa: E402
from dbpa_core.samplers import get_sampler  # noqa: E402
from dbpa_core.scoring import SCORES, ReferenceScorer  # noqa: E402
from dbpa_core.store import SampleStore  # noqa: E402

OUT = REPO / "assets" / "recorded" / "audits"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-samples", type=int, default=12)
    parser.add_argument("--alternative-samples", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=40)
    parser.add_argument("--store", default=str(REPO / ".dbpa_cache" / "record.sqlite"))
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    store = SampleStore(args.store)
    local = get_sampler("local")
    scorer = ReferenceScorer()

    config = yaml.safe_load((REPO / "assets" / "audits" / "stability_questions.yaml").read_text())
    rows = []
    for setting, temperature in (("greedy", 0.0), ("sampled T=0.8", 0.8)):
        for item in config["questions"]:
            variants = [("original", item["question"])] + [(k, rewrite(item["question"], k)) for k in REWRITES]
            for kind, question in variants:
                answer = local.sample(question, 1, temperature=temperature, max_tokens=24, seed=0, store=store)[0]
                rows.append({"setting": setting, "question": item["question"], "rewrite": kind, "prompt": question,
                             "answer": answer, "correct": is_correct(answer, item["answers"])})
        print(f"stability {setting}: done", file=sys.stderr, flush=True)
    (OUT / "stability_answers.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))

    rut = yaml.safe_load((REPO / "assets" / "audits" / "rut_prompts.yaml").read_text())
    simulated = get_sampler("simulated")
    record = {"reference": {"model": local.model, "temperature": 0.7, "max_tokens": args.max_tokens},
              "scores": list(SCORES), "prompts": [], "alternatives": {}}
    for name, alt in rut["alternatives"].items():
        record["alternatives"][name] = {"label": alt["label"], "scores": []}
    for number, prompt in enumerate(rut["prompts"]):
        texts = local.sample(prompt, args.reference_samples, temperature=0.7, max_tokens=args.max_tokens, seed=0,
                             store=store)
        record["prompts"].append({"prompt": prompt, "reference": [scorer.score(prompt, t) for t in texts]})
        for name, alt in rut["alternatives"].items():
            sampler = simulated if alt.get("backend") == "simulated" else local
            alt_texts = sampler.sample(prompt, args.alternative_samples, system=alt.get("system"),
                                       temperature=alt.get("temperature", 0.7),
                                       max_tokens=alt.get("max_tokens", args.max_tokens), seed=1, store=store)
            record["alternatives"][name]["scores"].append([scorer.score(prompt, t) for t in alt_texts])
        print(f"rut prompt {number + 1}/{len(rut['prompts'])}", file=sys.stderr, flush=True)
    (OUT / "rut_scores.json").write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
