"""Regenerate assets/recorded/: k responses of the local model for every scenario arm.

    python scripts/record_samples.py [--k 20] [--max-tokens 80] [--seed 0]

assets/recorded/<scenario>.jsonl is written only by this script (never by
hand).  Samples go through the sample store first, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.samplers import get_sampler  # noqa: E402
from dbpa_core.data.assets import RECORDED_DIR  # noqa: E402
from dbpa_core.data.scenarios import load_scenarios  # noqa: E402
from dbpa_core.data.store import SampleStore  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=80)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", default=str(REPO / ".dbpa_cache" / "record.sqlite"))
    args = parser.parse_args(argv)

    sampler = get_sampler("local")
    store = SampleStore(args.store)
    RECORDED_DIR.mkdir(parents=True, exist_ok=True)
    for scenario in load_scenarios().values():
        arms = [("original", scenario.prompt, scenario.system)]
        arms += [(p.id, *scenario.apply(p)) for p in scenario.perturbations]
        path = RECORDED_DIR / f"{scenario.id}.jsonl"
        # An arm already recorded with these settings is kept as it is (a new perturbation adds its arm
        # without re-generating, and so changing, the others).
        recorded: dict = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                settings = (row["prompt"], row["system"], row["temperature"], row["max_tokens"], row["seed"])
                recorded.setdefault(settings, []).append(row["text"])
        rows = []
        for arm, prompt, system in arms:
            texts = recorded.get((prompt, system, args.temperature, args.max_tokens, args.seed), [])[: args.k]
            if len(texts) < args.k:
                texts = sampler.sample(prompt, args.k, system=system or None, temperature=args.temperature,
                                       max_tokens=args.max_tokens, seed=args.seed, store=store)
            rows += [{"scenario": scenario.id, "arm": arm, "prompt": prompt, "system": system,
                      "model": sampler.model, "temperature": args.temperature, "max_tokens": args.max_tokens,
                      "seed": args.seed, "index": i, "text": text} for i, text in enumerate(texts)]
            print(f"{scenario.id}/{arm}: {len(texts)} responses", file=sys.stderr, flush=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {path.relative_to(REPO)} ({len(rows)} rows)", file=sys.stderr)


if __name__ == "__main__":
    main()
