"""Runs shared by several pages: one perturbation, or a family of them."""

from __future__ import annotations

import contextlib
import time

import numpy as np
import streamlit as st

from .resources import embedder_for, reference_scorer, sampler_for, store
from .settings import SamplerConfig, Settings

# dbpa_core.audit (numba, scipy) is imported in the functions below so that
# a page's widgets are drawn before the statistics stack loads.


class RunProgress:
    """One progress bar (and one Cancel button) for a run of many steps, with the time left.

    The time left is extrapolated from the throughput measured so far in this
    run (outputs sampled and embedded per second), shown once a run has taken
    a few seconds; a cached run finishes before it appears.
    """

    def __init__(self, label: str, n_steps: int = 1):
        self.label, self.n_steps, self.step = label, max(1, int(n_steps)), 0
        self.started = time.monotonic()
        self.kept = 0  # outputs sampled so far in this run (all in the store)
        self._cancel = st.empty()
        self._cancel.button("Cancel", key=f"cancel_{label}_{len(st.session_state.get('_arms', {}))}",
                            help="Stop now; every sample drawn so far is kept in the store and reused.")
        self._bar = st.progress(0.0, text=label)
        st.session_state["_drawing"] = {"label": label, "kept": 0}

    def report(self, fraction_of_step: float, text: str) -> None:
        fraction = min(1.0, (self.step + min(1.0, fraction_of_step)) / self.n_steps)
        elapsed = time.monotonic() - self.started
        left = ""
        if elapsed > 3 and 0.02 < fraction < 1:
            seconds = elapsed * (1 - fraction) / fraction
            left = f" · about {seconds:.0f} s left" if seconds < 120 else f" · about {seconds / 60:.0f} min left"
        self._bar.progress(fraction, text=f"{self.label}: {text}{left}")

    def count_sampled(self, n: int) -> None:
        self.kept = n
        st.session_state["_drawing"] = {"label": self.label, "kept": n}

    def next_step(self) -> None:
        self.step += 1

    def close(self) -> None:
        """Remove the bar and the Cancel button."""
        self._bar.empty()
        self._cancel.empty()
        st.session_state.pop("_drawing", None)

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        # Closed when the run ends or fails (no leftover bar or Cancel button; guard() shows the error).
        # A Cancel click is not an Exception (Streamlit stops the script with a BaseException): the
        # page is redrawn without the bar, and the sidebar says how many samples were kept.
        if kind is None or issubclass(kind, Exception):
            self.close()
        return False


def generation(settings: Settings, config: SamplerConfig) -> tuple[float | None, int | None]:
    """(temperature, max_tokens) of a request: none for the recorded backend, which replays its answers."""
    if config.backend == "recorded":
        return None, None
    return settings.temperature, settings.max_tokens


def true_effects(settings: Settings, scenario, perturbations) -> list:
    """The scenario's known effect of each perturbation: known for the simulated model only."""
    simulated = settings.sampler.backend == "simulated"
    return [scenario.true_effect(p) if simulated else None for p in perturbations]


def family_arms(scenario, perturbation_ids) -> tuple[list, list]:
    """(chosen perturbations, arms as (label, prompt, system) with the original first)."""
    chosen = [scenario.perturbation(p) for p in perturbation_ids]
    if not chosen:
        raise ValueError("Choose at least one perturbation for the family.")
    return chosen, [("original", scenario.prompt, scenario.system)] + [(p.label, *scenario.apply(p)) for p in chosen]


def draw(settings: Settings, arms, k: int, *, sampler_config: SamplerConfig | None = None, seed_offset: int = 0,
         progress_label: str = "Sampling", progress: RunProgress | None = None) -> list:
    """Draw and embed k outputs for each (label, prompt, system), with a progress bar.

    Arms are memoised in the session (moving between pages does not
    recompute) and every sample is written to the store as it arrives (a
    cancelled or crashed run resumes where it stopped).  ``progress`` is the
    run's overall bar when this draw is one step of a longer run.
    """
    from dbpa_core.audit import draw_arm

    config = sampler_config or settings.sampler
    memo = st.session_state.setdefault("_arms", {})
    results, todo = [], []
    for position, (label, prompt, system) in enumerate(arms):
        key = (config, settings.embedder, prompt, system, k, settings.temperature, settings.max_tokens,
               settings.seed + (0 if position == 0 else seed_offset))
        results.append(memo.get(key))
        if results[-1] is None:
            todo.append((position, key, label, prompt, system))
    if not todo:
        return results
    sampler, embedder = sampler_for(config), embedder_for(settings.embedder)
    temperature, max_tokens = generation(settings, config)
    # Any widget interaction (Cancel included) stops the running script; the
    # samples drawn so far are already in the store.
    with RunProgress(progress_label) if progress is None else contextlib.nullcontext(progress) as progress:
        for step, (position, key, label, prompt, system) in enumerate(todo):
            sampled_before = progress.kept

            def report(stage, done, total, step=step, sampled_before=sampled_before):
                if stage.startswith("sampling"):
                    progress.count_sampled(sampled_before + done)
                # sampling is the first half of an arm's work, embedding the second
                half = 0.5 if stage.startswith("embedding") else 0.0
                progress.report((step + half + 0.5 * done / max(total, 1)) / len(todo), f"{stage} ({done}/{total})")

            arm = draw_arm(sampler, prompt, k, label=label, system=system, temperature=temperature,
                           max_tokens=max_tokens, seed=key[-1], embedder=embedder,
                           store=store(), progress=report)
            progress.count_sampled(sampled_before + k)
            memo[key] = results[position] = arm
    return results


def _memoised_compare(seed: int):
    """``audit.compare_arms``, memoised in the session per pair of arms and test settings."""
    from dbpa_core.audit import compare_arms

    def compare(original, perturbed, **options):
        memo = st.session_state.setdefault("_tests", {})
        key = (id(original), id(perturbed), options["n_resamples"], options["similarity"], options["discrepancy"],
               seed)
        if key not in memo:
            memo[key] = compare_arms(original, perturbed, **options)
        return memo[key]

    return compare


def compare_pair(settings: Settings, original_arm, perturbed_arm, *, k: int, n_resamples: int, similarity: str,
                 discrepancy: str, label: str, kind: str = "", true_effect=None,
                 perturbed_settings: Settings | None = None):
    """Draw both arms, each a (label, prompt, system), and test them.

    ``perturbed_settings`` makes it a system perturbation: the perturbed arm
    comes from another model, backend or temperature.
    """
    if perturbed_settings is None:
        original, perturbed = draw(settings, [original_arm, perturbed_arm], k, seed_offset=1)
    else:
        (original,) = draw(settings, [original_arm], k)
        (perturbed,) = draw(perturbed_settings, [perturbed_arm], k)
    return _memoised_compare(settings.seed)(original, perturbed, label=label, kind=kind, similarity=similarity,
                                            discrepancy=discrepancy, n_resamples=n_resamples,
                                            rng=np.random.default_rng(settings.seed), true_effect=true_effect)


def scenario_family(settings: Settings, scenario, perturbation_ids, *, k: int, n_resamples: int,
                    similarity: str = "cosine", discrepancy: str = "jsd", correction: str = "bonferroni",
                    alpha: float = 0.05, seed_offset: int = 1, progress: RunProgress | None = None):
    """Every chosen perturbation of a scenario against one shared original arm."""
    from dbpa_core.audit import compare_family

    chosen, arms = family_arms(scenario, perturbation_ids)
    drawn = draw(settings, arms, k, seed_offset=seed_offset, progress_label=f"Sampling {len(arms)} arms",
                 progress=progress)
    return compare_family(drawn[0], drawn[1:], chosen, similarity=similarity, discrepancy=discrepancy,
                          n_resamples=n_resamples, correction=correction, alpha=alpha, seed=settings.seed,
                          true_effects=true_effects(settings, scenario, chosen),
                          compare=_memoised_compare(settings.seed))


def rut_live(settings: Settings, *, score: str, system: str | None, temperature: float, n_prompts: int, m: int,
             target_source: str = "local", uploaded: dict | None = None, run: bool = True):
    """The live RUT audit's scores (:class:`dbpa_core.rut.data.AuditScores`), memoised per input.

    Reference answers come from the local model; target answers from
    ``target_source`` — the local model with another system prompt/temperature,
    the sidebar's OpenAI-compatible endpoint, or uploaded responses (prompt →
    text) — all scored by the local reference model.  With ``run=False`` only
    a memoised result for exactly these inputs is returned (None if there is
    none): a page never shows scores drawn for other inputs.
    """
    from dbpa_core.rut.collect import live_rut_scores, rut_prompts, target_request

    system, temperature = target_request(target_source, system=system, temperature=temperature)
    key = ("rut_live", score, system, temperature, n_prompts, m, settings.seed, target_source,
           tuple(sorted(uploaded.items())) if uploaded else None,
           settings.sampler if target_source == "openai" else None)
    memo = st.session_state.setdefault("_rut_live", {})
    if key not in memo and run:
        prompts = (list(uploaded) if uploaded is not None else rut_prompts())[:n_prompts]
        local = sampler_for(SamplerConfig("local"))
        target = sampler_for(settings.sampler) if target_source == "openai" else local
        with RunProgress("Generating and scoring answers") as progress:
            memo[key] = live_rut_scores(
                prompts, reference=local, target=target, scorer=reference_scorer(), score=score, m=m,
                seed=settings.seed, system=system, temperature=temperature, uploaded=uploaded, store=store(),
                progress=lambda done, total: progress.report(done / total, f"{done}/{total} prompts"))
    return memo.get(key)


def _arm_sources(settings: Settings, arms, k_max: int, progress: RunProgress, *, seed_offset: int = 1) -> list:
    """One :class:`dbpa_core.audit.ArmSource` per (label, prompt, system): drawn in batches as a sequential
    test asks, every sample stored as it arrives (the same requests as :func:`draw`, so samples are shared)."""
    from dbpa_core.audit import ArmSource

    config = settings.sampler
    sampler, embedder = sampler_for(config), embedder_for(settings.embedder)
    temperature, max_tokens = generation(settings, config)

    def report(stage, done, total):
        progress.report(done / k_max, f"{stage}: {done} of at most {k_max} per arm")

    return [ArmSource(sampler, prompt, label=label, system=system,
                      seed=settings.seed + (0 if position == 0 else seed_offset),
                      temperature=temperature, max_tokens=max_tokens, embedder=embedder, store=store(),
                      progress=report)
            for position, (label, prompt, system) in enumerate(arms)]


def sequential_pair(settings: Settings, original_arm, perturbed_arm, *, k_max: int, batch_size: int,
                    n_resamples: int, similarity: str, discrepancy: str, alpha: float, label: str, kind: str = "",
                    true_effect=None):
    """Draw both arms in batches until the sequential test stops (:func:`dbpa_core.audit.compare_sequential`)."""
    from dbpa_core.audit import compare_sequential

    with RunProgress("Sampling until the answer is clear") as progress:
        original, perturbed = _arm_sources(settings, [original_arm, perturbed_arm], k_max, progress)
        return compare_sequential(original, perturbed, label=label, kind=kind, similarity=similarity,
                                  discrepancy=discrepancy, n_resamples=n_resamples, alpha=alpha, k_max=k_max,
                                  batch_size=batch_size, rng=np.random.default_rng(settings.seed),
                                  true_effect=true_effect)


def sequential_family(settings: Settings, scenario, perturbation_ids, *, k_max: int, batch_size: int,
                      n_resamples: int, discrepancy: str = "jsd", correction: str = "bonferroni",
                      alpha: float = 0.05):
    """Every chosen perturbation tested sequentially, each stopping on its own, each at α/m
    (:func:`dbpa_core.audit.compare_family_sequential`)."""
    from dbpa_core.audit import compare_family_sequential

    chosen, arms = family_arms(scenario, perturbation_ids)
    with RunProgress(f"Sampling {len(arms)} arms until each answer is clear") as progress:
        sources = _arm_sources(settings, arms, k_max, progress)
        return compare_family_sequential(
            sources[0], sources[1:], chosen, k_max=k_max, batch_size=batch_size, discrepancy=discrepancy,
            n_resamples=n_resamples, correction=correction, alpha=alpha, seed=settings.seed,
            true_effects=true_effects(settings, scenario, chosen))
