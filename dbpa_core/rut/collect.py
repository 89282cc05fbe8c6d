"""Collecting the RUT audit's data: responses drawn from the reference and the target, scored.

One place for both paths that need it: the app's live audit
(:func:`live_rut_scores`; :func:`live_rut_audits` draws many such audits
together, for calibration runs) and the recording script
(:func:`record_rut_scores`, run by ``scripts/record_audits.py``).  Every
response goes through the sample store, so an interrupted collection resumes.

Seeds.  The RUT's null (Zhu et al., ICLR 2026, §3) needs the target's rank to
be uniform *and independent across prompts*.  A seeded sampler does not give
that for free: llama.cpp (and servers that honour ``seed``) seeds its
token sampler with the call's seed alone, so one seed replays the same stream
of uniforms whatever the prompt, and the j-th response of every prompt
shares its randomness (common random numbers).  Drawing every prompt's
responses with one user seed therefore ties the target's rank on one prompt to
its rank on the next: in the first recording (every prompt's response j drawn
with seed j) the response index alone explained the ranks (Friedman test over
the 12 responses, p = 0.0003), and the model tested against itself was
rejected at p = 0.034.  :func:`prompt_seed` gives each (prompt, role) its own
seed, so draws for different prompts, and the target's draws and the
reference's, are independent streams.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from .._validation import check_choice, check_positive_int
from ..data.assets import AUDITS_DIR, read_yaml
from .data import AuditScores
from .scoring import SCORES

#: The claimed model's sampling temperature in every RUT audit (reference responses, recorded and live).
REFERENCE_TEMPERATURE = 0.7


def prompt_seed(seed: int, prompt: str, role: str) -> int:
    """The sampler seed of ``prompt``'s responses in ``role`` ("reference", "target", an alternative's name).

    Derived from the user seed, the prompt text and the role with
    ``numpy.random.SeedSequence``, so that no two prompts or roles share a
    random stream (see the module docstring) and a prompt keeps its draws
    whichever subset of prompts an audit uses.
    """
    digest = hashlib.sha256(f"{role}\x00{prompt}".encode()).digest()
    return int(np.random.SeedSequence([int(seed), int.from_bytes(digest[:8], "little")]).generate_state(1)[0])


#: Where a live audit's target responses come from.
TARGET_SOURCES = {"local": "Local SmolLM2 with another system prompt / temperature",
                  "openai": "The sidebar's OpenAI-compatible endpoint", "upload": "Uploaded responses"}


def target_request(source: str, *, system: str | None, temperature: float) -> tuple[str | None, float]:
    """(system prompt, temperature) the target is asked with.

    Only the local stand-in (``"local"``) takes the user's system prompt and
    temperature: they are how it imitates a substituted model.  An audited
    endpoint is asked exactly as the claimed model is (no system prompt, the
    reference temperature): anything else sent to it would itself change its
    answers and make an honest API fail the audit.
    """
    source = check_choice(source, "source", TARGET_SOURCES)
    if source == "local":
        return (system or None), float(temperature)
    return None, REFERENCE_TEMPERATURE


def rut_prompts() -> list[str]:
    """The audit's prompts (``assets/audits/rut_prompts.yaml``)."""
    return list(read_yaml(AUDITS_DIR / "rut_prompts.yaml")["prompts"])


def rut_alternatives() -> dict[str, dict]:
    """The recorded alternatives to the reference model: name → {label, system, temperature, …}."""
    return dict(read_yaml(AUDITS_DIR / "rut_prompts.yaml")["alternatives"])


def live_rut_scores(prompts, *, reference, target, scorer, score: str, m: int, seed: int, system: str | None = None,
                    temperature: float = REFERENCE_TEMPERATURE, max_tokens: int = 40, uploaded: dict | None = None,
                    store=None, progress: Callable[[int, int], object] | None = None):
    """The scores of a live audit: responses drawn now, scored by ``scorer`` (the reference model).

    Parameters
    ----------
    prompts : sequence of str
    reference : Sampler
        The claimed model: m responses per prompt at :data:`REFERENCE_TEMPERATURE`.
    target : Sampler or None
        The system under audit: one response per prompt, with ``system`` and
        ``temperature``; ignored when ``uploaded`` gives the responses.
    scorer : ReferenceScorer
        Anything with ``score_many(prompt, responses)``; each prompt's
        responses (reference and target) are scored in one call.
    score : str
        One of :data:`~dbpa_core.rut.scoring.SCORES`.
    uploaded : dict, optional
        prompt → target response (responses the user collected elsewhere).

    Returns
    -------
    AuditScores
        Prompts with an empty response (no score) are listed in ``dropped``.
    """
    prompts, score, m = _check_audit(prompts, score, m)
    if uploaded is not None and (missing := [p for p in prompts if p not in uploaded]):
        raise ValueError(f"`uploaded` has no target response to {missing[0]!r}: give one response per prompt.")
    reference_scores = np.zeros((len(prompts), m))
    target_scores = np.zeros(len(prompts))
    for i, prompt in enumerate(prompts):
        texts = reference.sample(prompt, m, temperature=REFERENCE_TEMPERATURE, max_tokens=max_tokens,
                                 seed=prompt_seed(seed, prompt, "reference"), store=store)
        if uploaded is not None:
            answer = uploaded[prompt]
        else:
            (answer,) = target.sample(prompt, 1, system=system or None, temperature=temperature,
                                      max_tokens=max_tokens, seed=prompt_seed(seed, prompt, "target"), store=store)
        # One batched scoring call per prompt: the m reference responses and the target's answer share
        # the prompt's evaluation and the forward steps (a response's scores do not depend on its batch).
        *reference_row, target_row = scorer.score_many(prompt, [*texts, answer])
        reference_scores[i] = [row[score] for row in reference_row]
        target_scores[i] = target_row[score]
        if progress is not None:
            progress(i + 1, len(prompts))
    return AuditScores.from_rows(prompts, target_scores, reference_scores)


def live_rut_audits(prompts, *, seeds, reference, target, scorer, score: str, m: int, system: str | None = None,
                    temperature: float = REFERENCE_TEMPERATURE, max_tokens: int = 40, store=None) -> list[AuditScores]:
    """Many live audits, one per seed: ``[live_rut_scores(prompts, ..., seed=s) for s in seeds]``, drawn together.

    Each prompt's responses for every seed are drawn in one sampler call per
    role (:meth:`~dbpa_core.samplers.base.Sampler.sample_seeds`) and scored in
    one call, so a calibration run of many small audits pays for each prompt
    once rather than once per audit.  A response's draw depends on its own
    seed alone and its scores do not depend on its batch, so every audit's
    numbers are those of :func:`live_rut_scores`, bit for bit.

    Parameters
    ----------
    prompts, reference, target, scorer, score, m, system, temperature, max_tokens, store
        As in :func:`live_rut_scores`.
    seeds : sequence of int
        One user seed per audit.

    Returns
    -------
    list of AuditScores
        One per seed, in the order of ``seeds``.
    """
    prompts, score, m = _check_audit(prompts, score, m)
    seeds = [check_positive_int(s, "seeds", minimum=0) for s in seeds]
    reference_scores = np.zeros((len(seeds), len(prompts), m))
    target_scores = np.zeros((len(seeds), len(prompts)))
    for i, prompt in enumerate(prompts):
        texts = reference.sample_seeds(prompt, m, [prompt_seed(s, prompt, "reference") for s in seeds],
                                       temperature=REFERENCE_TEMPERATURE, max_tokens=max_tokens, store=store)
        answers = target.sample_seeds(prompt, 1, [prompt_seed(s, prompt, "target") for s in seeds],
                                      system=system or None, temperature=temperature, max_tokens=max_tokens,
                                      store=store)
        rows = iter(scorer.score_many(prompt, [t for k in range(len(seeds)) for t in (*texts[k], *answers[k])]))
        for k in range(len(seeds)):
            reference_scores[k, i] = [next(rows)[score] for _ in range(m)]
            target_scores[k, i] = next(rows)[score]
    return [AuditScores.from_rows(prompts, target_scores[k], reference_scores[k]) for k in range(len(seeds))]


def _check_audit(prompts, score, m) -> tuple[list[str], str, int]:
    prompts = list(prompts)
    if len(prompts) < 2:
        raise ValueError("The audit needs at least 2 prompts with a target response.")
    return prompts, check_choice(score, "score", SCORES), check_positive_int(m, "m")


def record_rut_scores(reference, simulated, scorer, *, reference_samples: int = 16, alternative_samples: int = 3,
                      max_tokens: int = 40, seed: int = 0, store=None,
                      progress: Callable[[int, int], object] | None = None) -> dict:
    """The record written to ``assets/recorded/audits/rut_scores.json``.

    Per prompt: every :data:`SCORES` (and the text) of ``reference_samples``
    reference responses and of ``alternative_samples`` responses of each
    alternative, each prompt and role drawn with its own :func:`prompt_seed`.
    """
    prompts, alternatives = rut_prompts(), rut_alternatives()
    record = {"reference": {"model": reference.model, "temperature": REFERENCE_TEMPERATURE, "max_tokens": max_tokens},
              "seeds": f"prompt_seed({seed}, prompt, role): role 'reference' or the alternative's name",
              "scores": list(SCORES), "prompts": [],
              "alternatives": {name: {"label": alt["label"], "scores": [], "texts": []}
                               for name, alt in alternatives.items()}}
    for number, prompt in enumerate(prompts):
        texts = reference.sample(prompt, reference_samples, temperature=REFERENCE_TEMPERATURE, max_tokens=max_tokens,
                                 seed=prompt_seed(seed, prompt, "reference"), store=store)
        drawn = {}
        for name, alt in alternatives.items():
            sampler = simulated if alt.get("backend") == "simulated" else reference
            drawn[name] = sampler.sample(prompt, alternative_samples, system=alt.get("system"),
                                         temperature=alt.get("temperature", REFERENCE_TEMPERATURE),
                                         max_tokens=alt.get("max_tokens", max_tokens),
                                         seed=prompt_seed(seed, prompt, name), store=store)
        # Every response to this prompt in one batched scoring call (see live_rut_scores).
        scores = iter(scorer.score_many(prompt, [*texts, *(t for alt_texts in drawn.values() for t in alt_texts)]))
        record["prompts"].append({"prompt": prompt, "reference": [next(scores) for _ in texts], "texts": texts})
        for name, alt_texts in drawn.items():
            record["alternatives"][name]["scores"].append([next(scores) for _ in alt_texts])
            record["alternatives"][name]["texts"].append(alt_texts)
        if progress is not None:
            progress(number + 1, len(prompts))
    return record
