"""Figs 1–2 (paper §4.2) in the paper's own setup: local models' answers to the cvd_nice patient, recorded.

§4.2 asks LLMs for NICE CVD recommendations for a patient, with *controls* that should not change them
(the patient's name, a covariate that does not affect the guidelines) and *targets* that should (cholesterol
or diabetes moving the patient into another risk level).  The scenario ``cvd_nice_risk``
(``assets/scenarios/cvd_nice_risk.yaml``, which justifies each perturbation against the QRISK3 inputs and
NICE's thresholds) has 8 of each on the cvd_nice patient; every one is tested against the one original
prompt (:mod:`dbpa_core.paper.design`).

The answers were drawn once by ``scripts/record_cvd_roc.py`` from :data:`MODELS` — the packaged
SmolLM2-135M-Instruct (Q4_1) and two requantizations of it made offline with llama.cpp's quantizer
(:mod:`dbpa_core.samplers.quantize`): the same network at more and at fewer bits per weight, i.e. three
models that differ in a known, ordered way — with k answers per arm and seed (T = 0.7, 80 new tokens, the
chat template).  They ship as :data:`ANSWERS_FILE` with MiniLM's vectors of them in :data:`VECTORS_FILE`,
so nothing is sampled or embedded when a page opens.
"""

from __future__ import annotations

import json
import lzma
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from ..data.assets import RECORDED_DIR
from .design import ModelROC, PerturbationSet, ROCStudy, compare_sets
from .embeddings import Progress, default_embedder, embed_groups, read_vectors, settings_iv
from .loaders import PaperDataError

#: The design: the cvd_nice patient, 8 controls and 8 targets (assets/scenarios/cvd_nice_risk.yaml).
SCENARIO = "cvd_nice_risk"
#: The packaged SmolLM2 and two of its requantizations (dbpa_core.samplers.quantize), in display order:
#: one at more bits per weight (Q8_0) and one at fewer (Q3_K_M).  Q2_K, the fewest, answered one prompt of
#: the first 440 with an empty reply (it stopped at once: seed 0, triglycerides_refer, answer 36), which the
#: samplers refuse as a non-answer, so the design could not be recorded with it.
REFERENCE_MODEL = "smollm2"
MODELS = (REFERENCE_MODEL, "smollm2-q8_0", "smollm2-q3_k_m")
MODEL_LABELS = MappingProxyType({"smollm2": "SmolLM2 Q4_1 (packaged)", "smollm2-q8_0": "SmolLM2 Q8_0",
                                 "smollm2-q3_k_m": "SmolLM2 Q3_K_M", "smollm2-q2_k": "SmolLM2 Q2_K"})
SEEDS = (0, 1, 2)
K = 40
#: The generation settings of assets/recorded/ (scripts/record_samples.py).
TEMPERATURE, MAX_TOKENS = 0.7, 80
RECORDING_DIR = RECORDED_DIR / "cvd_nice_roc"
ANSWERS_FILE = RECORDING_DIR / "answers.json.xz"
VECTORS_FILE = RECORDING_DIR / "minilm.npz"


@dataclass(frozen=True)
class Arm:
    """One arm of the design: ``"original"``, or a perturbation's id with its kind and prompt as sent."""

    arm: str
    kind: str  # "original", "control" or "target"
    prompt: str


@dataclass(frozen=True, eq=False)
class CvdRecording:
    """The recorded answers (:data:`ANSWERS_FILE`).

    Attributes
    ----------
    k : int
        Answers per arm, model and seed.
    seeds : tuple of int
    models : mapping of str -> str
        Model name → the GGUF file that answered.
    arms : tuple of Arm
        The original first, then the perturbations in the scenario's order.
    answers : mapping of (model, seed, arm) -> tuple of str
    generation : mapping
        Temperature, new tokens, chat template.
    """

    k: int
    seeds: tuple[int, ...]
    models: MappingProxyType
    arms: tuple[Arm, ...]
    answers: MappingProxyType
    generation: MappingProxyType

    def design(self) -> PerturbationSet:
        """The one original arm and its controls and targets."""
        return PerturbationSet("original", tuple(a.arm for a in self.arms if a.kind == "control"),
                               tuple(a.arm for a in self.arms if a.kind == "target"))


def scenario_arms() -> tuple[Arm, ...]:
    """The arms of :data:`SCENARIO` as it now stands: the original prompt, then each perturbation's."""
    from ..data.scenarios import load_scenarios

    scenario = load_scenarios()[SCENARIO]
    return (Arm("original", "original", scenario.prompt),
            *(Arm(p.id, p.kind, scenario.apply(p)[0]) for p in scenario.perturbations))


def _fail(message: str):
    raise PaperDataError(f"{ANSWERS_FILE}: {message} Rerun scripts/record_cvd_roc.py --write.")


@lru_cache(maxsize=1)
def load_recording() -> CvdRecording:
    """The recorded answers, checked against the scenario they were drawn for (read once per process).

    Raises
    ------
    PaperDataError
        If the file is missing or malformed, an arm lacks answers, or a prompt is no longer the scenario's
        (the scenario changed after the recording: its answers would describe other prompts).
    """
    try:
        document = json.loads(lzma.decompress(ANSWERS_FILE.read_bytes()))
    except FileNotFoundError:
        raise PaperDataError(f"{ANSWERS_FILE}: the recorded answers are missing; restore assets/ from git or "
                             "rerun scripts/record_cvd_roc.py.") from None
    except (lzma.LZMAError, json.JSONDecodeError) as problem:
        _fail(f"not xz-compressed JSON ({problem}).")
    try:
        k, seeds, models = int(document["k"]), tuple(int(s) for s in document["seeds"]), document["models"]
        arms = tuple(Arm(a["arm"], a["kind"], a["prompt"]) for a in document["arms"])
        raw, generation = document["answers"], document["generation"]
    except (KeyError, TypeError, ValueError) as problem:
        _fail(f"lacks the key {problem} of the format scripts/record_cvd_roc.py writes.")
    if document.get("scenario") != SCENARIO or arms != scenario_arms():
        _fail(f"its arms are not the prompts of scenario {SCENARIO!r} as it now stands.")
    answers = {}
    for model in models:
        for seed in seeds:
            for arm in arms:
                texts = raw.get(model, {}).get(str(seed), {}).get(arm.arm)
                if not isinstance(texts, list) or len(texts) != k or not all(isinstance(t, str) for t in texts):
                    _fail(f"{model} seed {seed} arm {arm.arm!r} does not hold {k} answers.")
                answers[model, seed, arm.arm] = tuple(texts)
    return CvdRecording(k, seeds, MappingProxyType(dict(models)), arms, MappingProxyType(answers),
                        MappingProxyType(dict(generation)))


def recorded_vectors():
    """MiniLM's vectors of the recorded answers (:data:`VECTORS_FILE`)."""
    return read_vectors(VECTORS_FILE)


def cvd_study(models: Sequence[str] | None = None, *, seeds: Sequence[int] | None = None, embedder=None,
              store=None, n_resamples: int = 1000, seed: int = 0, discrepancy: str = "js_distance",
              progress: Progress | None = None) -> ROCStudy:
    """Figs 1–2 on the recorded cvd_nice answers: per model and seed, 8 controls and 8 targets vs one original.

    Parameters
    ----------
    models : sequence of str, optional
        Names of :data:`MODELS` held by the recording (default all).
    seeds : sequence of int, optional
        Seeds of the recording (default all); each is an independent replicate of the design.
    embedder, store, n_resamples, seed, discrepancy, progress
        As in :func:`dbpa_core.paper.fig1.paraphrase_study`.

    Returns
    -------
    ROCStudy
        ``setup = "recorded_cvd"``.
    """
    n_resamples, seed = settings_iv(n_resamples, seed, discrepancy)
    embedder = default_embedder(embedder)
    recording = load_recording()
    models = list(recording.models) if models is None else list(models)
    seeds = recording.seeds if seeds is None else tuple(seeds)
    for name, chosen, held in (("models", models, recording.models), ("seeds", seeds, recording.seeds)):
        unknown = [c for c in chosen if c not in held]
        if not chosen or unknown:
            raise ValueError(f"`{name}` must name some of the recording's {name} "
                             f"({', '.join(map(str, held))}); got {', '.join(map(str, chosen)) or 'none'}.")
    groups = {(m, s, a.arm): recording.answers[m, s, a.arm] for m in models for s in seeds for a in recording.arms}
    vectors = embed_groups(groups, embedder=embedder, store=store, progress=progress,
                           stage="embedding the recorded answers", shipped=recorded_vectors())
    design = recording.design()
    results, done = [], 0
    for model in models:
        comparisons = []
        for s in seeds:
            arms = {a.arm: vectors[model, s, a.arm] for a in recording.arms}
            comparisons += compare_sets(arms, [design], replicate=s, discrepancy=discrepancy,
                                        n_resamples=n_resamples, seed=seed)
            done += 1
            if progress:
                progress("testing controls and targets", done, len(models) * len(seeds))
        results.append(ModelROC.from_comparisons(model, MODEL_LABELS.get(model, model), comparisons))
    settings = {"embedder": embedder.key, "similarity": "cosine", "discrepancy": discrepancy,
                "n_resamples": n_resamples, "seed": seed, "seeds": list(seeds), "k": recording.k,
                "models": {m: recording.models[m] for m in models}, "generation": dict(recording.generation),
                "originals": "the cvd_nice patient prompt (one per model and seed)",
                "controls": ", ".join(design.controls), "targets": ", ".join(design.targets),
                "source": f"{ANSWERS_FILE.relative_to(RECORDED_DIR.parent.parent)} (scripts/record_cvd_roc.py, "
                          f"scenario {SCENARIO})"}
    return ROCStudy("recorded_cvd", tuple(results), settings)
