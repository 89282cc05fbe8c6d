"""Running audits: scenario → sampler → embedder → test → correction.

=================  ==========================================================
runner             draw and embed arms, compare them, correct a family
spec               the YAML SPEC of a headless audit, validated
costs              token and price estimates before a run
batch              batch inference files (OpenAI Batch API, vLLM run_batch)
=================  ==========================================================

The runner's names are importable from here (``from dbpa_core.audit import
compare_arms``); they are loaded on first use so that reading a SPEC or a
price does not import the compiled statistics.
"""

from importlib import import_module

_RUNNER = ("Arm", "ArmRequest", "ArmSource", "FamilyResult", "PerturbationResult", "StageProgress", "build_embedder",
           "build_sampler", "compare_arms", "compare_family", "compare_family_sequential", "compare_sequential",
           "draw_arm", "run_audit", "run_scenario_family", "scenario_arm_requests", "spec_generation_settings",
           "spec_settings", "uploaded_arms")

__all__ = list(_RUNNER)


def __getattr__(name):
    if name in _RUNNER:
        return getattr(import_module(".runner", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
