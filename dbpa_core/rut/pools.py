"""The recorded answer pools of the RUT experiments: per prompt, answers of the reference and of each substitute.

Written by ``scripts/record_rut.py`` (:mod:`dbpa_core.rut.experiment`) into
``assets/recorded/audits/rut_pools.npz`` and read by :func:`load_rut_pools`:
every answer's scores under the reference model (:data:`~dbpa_core.rut.scoring.SCORES`)
and its token ids (padded with :data:`~dbpa_core.rut.mmd.PAD`), enough for the RUT,
the KS baseline, the Hamming-kernel MMD and the score selection to run without
a model.  The answers' texts ship beside it in ``rut_texts.jsonl.xz``.

File layout (one ``.npz``, no pickles): ``prompts``; ``score_names``; per arm
``<arm>.tokens`` (P, N, L) int32 and ``<arm>.scores`` (P, N, S) float64; ``meta``,
a JSON string (protocol, substitutes, models and their SHA-256, recording time).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..data.assets import RECORDED_AUDITS_DIR

#: The shipped pools and texts.
POOLS_FILE = RECORDED_AUDITS_DIR / "rut_pools.npz"
TEXTS_FILE = RECORDED_AUDITS_DIR / "rut_texts.jsonl.xz"


@dataclass(frozen=True, eq=False)
class Arm:
    """One source of answers: the reference model or a substitute.

    Attributes
    ----------
    name, kind, label : str
        kind: "reference", "quantization" or "jailbreak".
    tokens : ndarray of int, shape (P, N, L)
        N answers per prompt, padded to L with :data:`~dbpa_core.rut.mmd.PAD`.
    scores : dict
        score name → (P, N) scores under the reference model.
    """

    name: str
    kind: str
    label: str
    tokens: np.ndarray = field(repr=False)
    scores: dict = field(repr=False)

    @property
    def n_answers(self) -> int:
        return self.tokens.shape[1]


@dataclass(frozen=True, eq=False)
class RUTPools:
    """Every recorded arm, over the same prompts."""

    prompts: tuple[str, ...]
    reference: Arm
    substitutes: dict = field(repr=False)
    meta: dict = field(default_factory=dict, repr=False)

    def substitute(self, name: str) -> Arm:
        if name not in self.substitutes:
            raise ValueError(f"`substitute` must be one of {', '.join(self.substitutes)}; got {name!r}.")
        return self.substitutes[name]


def save_rut_pools(pools: RUTPools, path: str | Path) -> Path:
    """Write ``pools`` as the compressed ``.npz`` of the module docstring."""
    path = Path(path)
    arms = [pools.reference, *pools.substitutes.values()]
    names = list(pools.reference.scores)
    arrays = {"prompts": np.array(pools.prompts), "score_names": np.array(names)}
    for arm in arms:
        arrays[f"{arm.name}.tokens"] = arm.tokens.astype(np.int32)
        arrays[f"{arm.name}.scores"] = np.stack([arm.scores[s] for s in names], axis=-1).astype(np.float64)
    meta = {**pools.meta, "arms": [{"name": a.name, "kind": a.kind, "label": a.label} for a in arms]}
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


def load_rut_pools(path: str | Path | None = None) -> RUTPools:
    """The recorded pools (default :data:`POOLS_FILE`)."""
    path = Path(path) if path is not None else POOLS_FILE
    if not path.exists():
        raise ValueError(f"{path.name} is missing: record it with `nice -n 10 python scripts/record_rut.py`.")
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        names = [str(s) for s in data["score_names"]]
        arms = [Arm(a["name"], a["kind"], a["label"], data[f"{a['name']}.tokens"],
                    {s: data[f"{a['name']}.scores"][..., k] for k, s in enumerate(names)}) for a in meta["arms"]]
        prompts = tuple(str(p) for p in data["prompts"])
    meta = {k: v for k, v in meta.items() if k != "arms"}
    return RUTPools(prompts, arms[0], {a.name: a for a in arms[1:]}, meta)


def load_rut_texts(path: str | Path | None = None) -> dict:
    """The recorded answers' texts (default :data:`TEXTS_FILE`): (arm name, prompt) → answers, in the pools' order."""
    import lzma

    path = Path(path) if path is not None else TEXTS_FILE
    if not path.exists():
        raise ValueError(f"{path.name} is missing: record it with `nice -n 10 python scripts/record_rut.py`.")
    with lzma.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return {(row["arm"], row["prompt"]): list(row["texts"]) for row in rows}


def character_pools(pools: RUTPools, texts: dict | None = None) -> RUTPools:
    """The same pools with each answer's token ids replaced by its characters' code points.

    For the character-level Hamming kernel the RUT paper describes (§5.7;
    :func:`~dbpa_core.rut.mmd.pad_characters`): every function that reads
    ``Arm.tokens`` (the power study, one drawn audit) then compares characters.
    Scores are unchanged.  ``texts`` default: the shipped :data:`TEXTS_FILE`.
    """
    from .mmd import pad_characters

    texts = load_rut_texts() if texts is None else texts
    arms = [pools.reference, *pools.substitutes.values()]
    try:
        rows = {arm.name: [texts[arm.name, p] for p in pools.prompts] for arm in arms}
    except KeyError as missing:
        raise ValueError(f"`texts` has no answers for (arm, prompt) {missing.args[0]!r}; pass the texts recorded "
                         "with these pools (load_rut_texts).") from None
    for arm in arms:
        if any(len(answers) != arm.n_answers for answers in rows[arm.name]):
            raise ValueError(f"`texts` of arm {arm.name!r} do not match its pool ({arm.n_answers} answers per "
                             "prompt); pass the texts recorded with these pools.")
    length = max(len(t) for answers in rows.values() for prompt in answers for t in prompt)
    swapped = [Arm(arm.name, arm.kind, arm.label, np.stack([pad_characters(a, length) for a in rows[arm.name]]),
                   arm.scores) for arm in arms]
    return RUTPools(pools.prompts, swapped[0], {a.name: a for a in swapped[1:]}, pools.meta)
