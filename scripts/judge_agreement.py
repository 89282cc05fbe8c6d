"""How often the embedding judge and an LLM judge disagree on the shipped labelled pairs.

    python scripts/judge_agreement.py [--base-url http://127.0.0.1:8000/v1 --model NAME]

The LLM judge is any OpenAI-compatible chat model (the paper used GPT-4; the
key comes from OPENAI_API_KEY), or by default the packaged SmolLM2 run
locally.  Prints each judge's accuracy against the labels
(assets/audits/stability_labelled.yaml) and their disagreement rate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.data.store import SampleStore  # noqa: E402
from dbpa_core.embedders import get_embedder  # noqa: E402
from dbpa_core.samplers import get_sampler  # noqa: E402
from dbpa_core.stability.judge import EmbeddingJudge, LLMJudge, calibrate_threshold, judge_report  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint; default: the local SmolLM2")
    parser.add_argument("--model", default="gpt-4o-mini", help="the judge model at --base-url")
    parser.add_argument("--store", default=str(REPO / ".dbpa_cache" / "record.sqlite"))
    args = parser.parse_args(argv)
    store = SampleStore(args.store)
    embedder = get_embedder("minilm")
    calibration = calibrate_threshold(embedder, store=store)
    sampler = get_sampler("openai", model=args.model, base_url=args.base_url) if args.base_url else \
        get_sampler("local")
    llm = LLMJudge(sampler)
    report = judge_report(EmbeddingJudge(embedder, calibration.threshold), llm, store=store)
    print(f"{len(report.labels)} labelled pairs ({int(report.labels.sum())} same meaning); embedding threshold "
          f"{calibration.threshold:.3f} (leave-one-out accuracy {calibration.loo_accuracy:.0%})")
    for name, accuracy in report.accuracy.items():
        print(f"{name} judge ({llm.describe()['model'] if name == 'llm' else embedder.key}): accuracy {accuracy:.0%}")
    print(f"the two disagree on {report.disagreement:.0%} of the pairs; the LLM's reply was neither yes nor no "
          f"{llm.unparsed} times")


if __name__ == "__main__":
    main()
