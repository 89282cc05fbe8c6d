"""The RUT paper's experiments on the packaged SmolLM2: their protocol, substitutes and recording.

Zhu et al., ICLR 2026, §5: everyday prompts, temperature 0.5, 30 new tokens;
per prompt, the reference model's answers and each substitute's, every one
scored by the reference model (the user prompt only: the auditor never sees a
provider's system prompt).  The protocol, substitutes and prompts are read from
``assets/audits/rut_experiment.yaml``; ``scripts/record_rut.py`` records them
through the sample store into :mod:`dbpa_core.rut.pools`.

Substitutes made offline:

- quantization: lower-bit requantizations of the packaged Q4_1 GGUF
  (:mod:`dbpa_core.samplers.quantize`), the paper's §5.2 threat on this model;
- jailbreak: DAN-, Anti-DAN- and Evil-Bot-style system prompts written for this
  project, the reference model otherwise unchanged (§5.3).

Not reproducible offline: the paper's harmful fine-tuning (§5.4) needs training
a model on harmful data, which we do not do (and could not without a training
set and GPU time); and its pairs of a full-precision model and its 8-/4-bit
quantizations need the full-precision weights, which the packaged model does
not include: it ships only a 4-bit (Q4_1) GGUF, so our reference is itself a
4-bit model and every substitute is a requantization of it (Q8_0 re-expresses
the 4-bit weights in 8 bits; Q4_0 and Q2_K round them again, more coarsely).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._validation import check_choice
from ..data.assets import AUDITS_DIR, read_yaml
from .collect import prompt_seed
from .mmd import pad_tokens
from .pools import Arm, RUTPools
from .scoring import SCORES

EXPERIMENT_FILE = AUDITS_DIR / "rut_experiment.yaml"
KINDS = ("quantization", "jailbreak")
REFERENCE = "reference"


@dataclass(frozen=True)
class Substitute:
    """A model served in place of the reference: another GGUF (``model``) or a hidden ``system`` prompt."""

    name: str
    kind: str
    label: str
    model: str | None = None
    system: str | None = None


@dataclass(frozen=True)
class ExperimentConfig:
    """The protocol, the substitutes and the prompts of ``rut_experiment.yaml``."""

    prompts: tuple[str, ...]
    substitutes: tuple[Substitute, ...]
    temperature: float
    max_tokens: int
    reference_answers: int
    substitute_answers: int
    seed: int

    def substitute(self, name: str) -> Substitute:
        names = {s.name: s for s in self.substitutes}
        return names[check_choice(name, "substitute", names)]


def rut_experiment(path=None) -> ExperimentConfig:
    """Read the experiment's protocol, substitutes and prompts (default :data:`EXPERIMENT_FILE`)."""
    record = read_yaml(path or EXPERIMENT_FILE)
    protocol = record["protocol"]
    substitutes = []
    for name, spec in record["substitutes"].items():
        kind = check_choice(spec["kind"], f"substitutes.{name}.kind", KINDS)
        if (kind == "quantization") != bool(spec.get("model")) or (kind == "jailbreak") != bool(spec.get("system")):
            raise ValueError(f"substitute {name!r}: a quantization names its `model`, a jailbreak its `system` prompt.")
        substitutes.append(Substitute(name, kind, spec["label"], spec.get("model"), spec.get("system")))
    return ExperimentConfig(tuple(record["prompts"]), tuple(substitutes), float(protocol["temperature"]),
                            int(protocol["max_tokens"]), int(protocol["reference_answers"]),
                            int(protocol["substitute_answers"]), int(protocol["seed"]))


def record_arm(config: ExperimentConfig, arm: str, prompt: str, *, sampler, scorer, store=None) -> dict:
    """One prompt's answers from one arm ("reference" or a substitute's name), scored by the reference model.

    Returns
    -------
    dict
        ``{"arm", "prompt", "texts", "tokens", "scores": {score: [...]}, "seconds"}``, one
        line of the recording's partial file.
    """
    if arm == REFERENCE:
        n, system = config.reference_answers, None
    else:
        n, system = config.substitute_answers, config.substitute(arm).system
    start = time.perf_counter()
    texts = sampler.sample(prompt, n, system=system, temperature=config.temperature, max_tokens=config.max_tokens,
                           seed=prompt_seed(config.seed, prompt, arm), store=store)
    # One forward pass per batch of answers; each comes back with the token ids it was scored on
    # (the reference tokenizer's), which the MMD's Hamming kernel compares.
    scored = scorer.score_responses(prompt, texts)
    return {"arm": arm, "prompt": prompt, "texts": texts, "tokens": [list(r.tokens) for r in scored],
            "scores": {s: [r.scores[s] for r in scored] for s in SCORES}, "seconds": time.perf_counter() - start}


def complete_prompts(config: ExperimentConfig, rows) -> tuple[str, ...]:
    """The prompts, in the protocol's order, whose every arm (the reference and each substitute) is recorded in ``rows``.

    A recording cut short ships the pools of these prompts only (``record_rut.py --scored-so-far``): a
    prompt with some arms missing would give its audits a reference or a substitute answer that was never
    scored.
    """
    recorded = {(row["arm"], row["prompt"]) for row in rows}
    arms = [REFERENCE, *(s.name for s in config.substitutes)]
    return tuple(p for p in config.prompts if all((arm, p) in recorded for arm in arms))


def assemble_pools(config: ExperimentConfig, rows, *, meta: dict | None = None) -> RUTPools:
    """The pools of every (arm, prompt) row of a recording (each prompt must have every arm)."""
    rows = {(row["arm"], row["prompt"]): row for row in rows}
    arms = [(REFERENCE, "reference", "The reference model (packaged SmolLM2 Q4_1)")]
    arms += [(s.name, s.kind, s.label) for s in config.substitutes]
    missing = [(a, p) for a, _, _ in arms for p in config.prompts if (a, p) not in rows]
    if missing:
        raise ValueError(f"{len(missing)} (arm, prompt) pairs are not recorded yet, e.g. {missing[0]}; "
                         "run the recording again to finish it.")
    length = max(len(t) for row in rows.values() for t in row["tokens"])
    built = []
    for name, kind, label in arms:
        tokens = np.stack([pad_tokens(rows[name, p]["tokens"], length) for p in config.prompts])
        scores = {s: np.array([rows[name, p]["scores"][s] for p in config.prompts], dtype=np.float64) for s in SCORES}
        built.append(Arm(name, kind, label, tokens, scores))
    return RUTPools(config.prompts, built[0], {a.name: a for a in built[1:]}, dict(meta or {}))


def rescore_pools(pools: RUTPools, texts: dict, scorer, *, prompts=None, progress=None) -> RUTPools:
    """``pools`` with every answer's scores recomputed by ``scorer`` from its text; the answers stay as recorded.

    Parameters
    ----------
    pools : RUTPools
    texts : dict
        (arm name, prompt) → that arm's answers to the prompt, in the pools' order (``rut_texts.jsonl.xz``).
    scorer : ReferenceScorer
        Anything with ``score_responses(prompt, responses)``; each prompt's answers of every arm are scored in
        one call.
    prompts : sequence of str, optional
        Rescore only these prompts (the others keep their scores).
    progress : callable, optional
        ``progress(done, total)`` after each prompt.

    Raises
    ------
    ValueError
        If an answer's token ids under ``scorer`` differ from those in the pools (the pools' Hamming kernel and
        scores would then describe different token sequences).
    """
    arms = [pools.reference, *pools.substitutes.values()]
    scores = {arm.name: {s: np.array(arm.scores[s], dtype=np.float64) for s in SCORES} for arm in arms}
    wanted = None if prompts is None else set(prompts)
    chosen = [(i, p) for i, p in enumerate(pools.prompts) if wanted is None or p in wanted]
    for done, (i, prompt) in enumerate(chosen, 1):
        answers = [texts[arm.name, prompt] for arm in arms]
        if any(len(a) != arm.n_answers for a, arm in zip(answers, arms)):
            raise ValueError(f"the texts of {prompt!r} do not match the pools' answer counts.")
        scored = iter(scorer.score_responses(prompt, [t for a in answers for t in a]))
        for arm in arms:
            for n in range(arm.n_answers):
                result = next(scored)
                recorded = arm.tokens[i, n]
                if not np.array_equal(pad_tokens([result.tokens], recorded.shape[0])[0], recorded):
                    raise ValueError(f"{arm.name} answer {n} to {prompt!r}: its token ids differ from the pools'.")
                for name, value in result.scores.items():
                    scores[arm.name][name][i, n] = value
        if progress is not None:
            progress(done, len(chosen))
    rescored = [Arm(arm.name, arm.kind, arm.label, arm.tokens, scores[arm.name]) for arm in arms]
    return RUTPools(pools.prompts, rescored[0], {a.name: a for a in rescored[1:]}, dict(pools.meta))
