"""Write assets/recorded/cvd_nice_risk.jsonl: the packaged SmolLM2's recorded answers of scenario cvd_nice_risk.

The recorded backend replays ``assets/recorded/*.jsonl``; Figs 1–2's recording
(``assets/recorded/cvd_nice_roc/answers.json.xz``, written by
scripts/record_cvd_roc.py) already holds the packaged model's answers to every
arm of cvd_nice_risk at the recorded backend's settings (T = 0.7, 80 new
tokens, chat template).  This copies its seed-0 answers of the arms no other
recorded file holds, so that the scenario can be audited on the recorded
backend; an arm already recorded (the shared cvd_nice original) keeps its own
answers, so earlier recorded audits replay unchanged.

Usage: python scripts/export_recorded_cvd_nice_risk.py
"""

from __future__ import annotations

import json
import lzma
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dbpa_core.data.assets import RECORDED_DIR  # noqa: E402
from dbpa_core.paper.cvd_roc import load_recording  # noqa: E402
from dbpa_core.samplers.recorded import RecordedSampler  # noqa: E402

MODEL = "smollm2"  # the packaged Q4_1 model, the recorded backend's model
SEED = 0
OUT = Path(RECORDED_DIR) / "cvd_nice_risk.jsonl"


def main() -> None:
    document = json.loads(lzma.decompress((Path(RECORDED_DIR) / "cvd_nice_roc" / "answers.json.xz").read_bytes()))
    load_recording()  # checks the file against the scenario as it now stands
    generation, model_file = document["generation"], document["models"][MODEL]
    OUT.unlink(missing_ok=True)  # the arms recorded elsewhere, not by an earlier run of this script
    existing = RecordedSampler(RECORDED_DIR)
    lines = []
    for arm in document["arms"]:
        if existing.available(arm["prompt"], "") > 0:
            continue
        for index, text in enumerate(document["answers"][MODEL][str(SEED)][arm["arm"]]):
            lines.append(json.dumps({"scenario": document["scenario"], "arm": arm["arm"], "prompt": arm["prompt"],
                                     "system": "", "model": model_file, "temperature": generation["temperature"],
                                     "max_tokens": generation["max_tokens"], "seed": SEED, "index": index,
                                     "text": text}, ensure_ascii=False))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(lines)} answers")


if __name__ == "__main__":
    main()
