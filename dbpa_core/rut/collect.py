"""Collecting the RUT audit's data: responses drawn from the reference and the target, scored.

One place for both paths that need it: the app's live audit
(:func:`live_rut_arrays`) and the recording script (:func:`record_rut_scores`,
run by ``scripts/record_audits.py``).  Every response goes through the sample
store, so an interrupted collection resumes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..data.assets import AUDITS_DIR, read_yaml
from .scoring import SCORES


def rut_prompts() -> list[str]:
    """The audit's prompts (``assets/audits/rut_prompts.yaml``)."""
    return list(read_yaml(AUDITS_DIR / "rut_prompts.yaml")["prompts"])


def rut_alternatives() -> dict[str, dict]:
    """The recorded alternatives to the reference model: name → {label, system, temperature, …}."""
    return dict(read_yaml(AUDITS_DIR / "rut_prompts.yaml")["alternatives"])


def live_rut_arrays(prompts, *, reference, target, scorer, score: str, m: int, seed: int, system: str | None = None,
                    temperature: float = 0.7, max_tokens: int = 40, uploaded: dict | None = None, store=None,
                    progress: Callable[[int, int], object] | None = None):
    """(target_scores, reference_scores) of a live audit, scored by ``scorer`` (the reference model).

    Parameters
    ----------
    prompts : sequence of str
    reference : Sampler
        The claimed model: m responses per prompt at temperature 0.7.
    target : Sampler or None
        The system under audit: one response per prompt, with ``system`` and
        ``temperature``; ignored when ``uploaded`` gives the responses.
    scorer : ReferenceScorer
    score : str
        One of :data:`~dbpa_core.rut.scoring.SCORES`.
    uploaded : dict, optional
        prompt → target response (responses the user collected elsewhere).

    Returns
    -------
    target_scores : ndarray (n,), reference_scores : ndarray (n, m)
        Prompts with a non-finite score (an empty response) are dropped from both.
    """
    prompts = list(prompts)
    if len(prompts) < 2:
        raise ValueError("The audit needs at least 2 prompts with a target response.")
    reference_scores = np.zeros((len(prompts), m))
    target_scores = np.zeros(len(prompts))
    for i, prompt in enumerate(prompts):
        texts = reference.sample(prompt, m, temperature=0.7, max_tokens=max_tokens, seed=seed, store=store)
        reference_scores[i] = [scorer.score(prompt, t)[score] for t in texts]
        if uploaded is not None:
            answer = uploaded[prompt]
        else:
            (answer,) = target.sample(prompt, 1, system=system or None, temperature=temperature,
                                      max_tokens=max_tokens, seed=seed + 1, store=store)
        target_scores[i] = scorer.score(prompt, answer)[score]
        if progress is not None:
            progress(i + 1, len(prompts))
    keep = np.isfinite(target_scores) & np.all(np.isfinite(reference_scores), axis=1)
    return target_scores[keep], reference_scores[keep]


def record_rut_scores(reference, simulated, scorer, *, reference_samples: int = 12, alternative_samples: int = 3,
                      max_tokens: int = 40, store=None, progress: Callable[[int, int], object] | None = None) -> dict:
    """The record written to ``assets/recorded/audits/rut_scores.json``: every :data:`SCORES` of
    ``reference_samples`` reference responses and ``alternative_samples`` responses of each alternative."""
    prompts, alternatives = rut_prompts(), rut_alternatives()
    record = {"reference": {"model": reference.model, "temperature": 0.7, "max_tokens": max_tokens},
              "scores": list(SCORES), "prompts": [],
              "alternatives": {name: {"label": alt["label"], "scores": []} for name, alt in alternatives.items()}}
    for number, prompt in enumerate(prompts):
        texts = reference.sample(prompt, reference_samples, temperature=0.7, max_tokens=max_tokens, seed=0,
                                 store=store)
        record["prompts"].append({"prompt": prompt, "reference": [scorer.score(prompt, t) for t in texts]})
        for name, alt in alternatives.items():
            sampler = simulated if alt.get("backend") == "simulated" else reference
            alt_texts = sampler.sample(prompt, alternative_samples, system=alt.get("system"),
                                       temperature=alt.get("temperature", 0.7),
                                       max_tokens=alt.get("max_tokens", max_tokens), seed=1, store=store)
            record["alternatives"][name]["scores"].append([scorer.score(prompt, t) for t in alt_texts])
        if progress is not None:
            progress(number + 1, len(prompts))
    return record
