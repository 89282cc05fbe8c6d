"""Runs shared by several pages: one perturbation, or a family of them."""

from __future__ import annotations

import numpy as np
import streamlit as st

from .state import Settings, draw

# dbpa_core.audit (numba, scipy) is imported in the functions below so that
# a page's widgets are drawn before the statistics stack loads.


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
                    alpha: float = 0.05, seed_offset: int = 1):
    """Every chosen perturbation of a scenario against one shared original arm."""
    from dbpa_core.audit import compare_family

    chosen = [scenario.perturbation(p) for p in perturbation_ids]
    if not chosen:
        raise ValueError("Choose at least one perturbation for the family.")
    arms = [("original", scenario.prompt, scenario.system)] + [(p.label, *scenario.apply(p)) for p in chosen]
    drawn = draw(settings, arms, k, seed_offset=seed_offset, progress_label=f"Sampling {len(arms)} arms")

    simulated = settings.sampler.backend == "simulated"
    return compare_family(drawn[0], drawn[1:], chosen, similarity=similarity, discrepancy=discrepancy,
                          n_resamples=n_resamples, correction=correction, alpha=alpha, seed=settings.seed,
                          true_effects=[scenario.true_effect(p) if simulated else None for p in chosen],
                          compare=_memoised_compare(settings.seed))
