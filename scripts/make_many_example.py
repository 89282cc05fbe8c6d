"""Write the "Across many prompts" example: the paper's GPT-3.5 and GPT-4 answers as one JSONL log.

    python scripts/make_many_example.py

The 9 prompts of the paper's paraphrase study for seed 9 (the random patient of that seed, and the 8
paraphrases of the fixed patient, :data:`~dbpa_core.paper.loaders.PARAPHRASE_PROMPTS`), the first 5
answers of each model to each: 90 lines ``{"prompt_id", "prompt", "arm", "text"}`` in
``dbpa_core/assets/examples/gpt35_vs_gpt4_9_prompts.jsonl``.  The texts are the shipped responses
unchanged (Apache-2.0, see ``assets/paper/NOTICE``), so their MiniLM vectors come from the shipped
file.  The seed's patient prompt is the one the open models echoed in the alignment run of the same
seed (the API models do not echo; both runs drew the same patient: BMI 31.7 in every answer).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.paper.loaders import PARAPHRASE_PROMPTS, load_alignment, load_paraphrases  # noqa: E402

SEED, K = 9, 5
MODELS = {"GPT-3.5": "gpt-35-1106-vdsT-AE", "GPT-4": "SWNorth-gpt-4-0613-20231016"}
OUT = REPO / "dbpa_core" / "assets" / "examples" / "gpt35_vs_gpt4_9_prompts.jsonl"


def main():
    prompts = [("patient", " ".join(load_alignment(SEED).prompt.split()))]
    prompts += [(f"paraphrase-{i}", text) for i, text in enumerate(PARAPHRASE_PROMPTS)]
    lines = []
    for arm, model in MODELS.items():
        run = load_paraphrases(model, SEED)
        for (prompt_id, prompt), answers in zip(prompts, [run.base, *run.paraphrases]):
            lines += [json.dumps({"prompt_id": prompt_id, "prompt": prompt, "arm": arm, "text": text},
                                 ensure_ascii=False) for text in answers[:K]]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(lines)} lines, {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
