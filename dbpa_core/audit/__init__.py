"""Running audits: an audit request → samples → embeddings → tests → correction.

==============  ===============================================================
request         the one frozen description of an audit (CLI SPEC and app alike)
runner          THE orchestration path: draw and embed arms, test, correct
results         arms, per-perturbation tests, the corrected family
spec            the YAML SPEC of a headless audit, validated into a request
exposition      the teaching views' derived results (streamed prefixes, halves)
experiments     the case studies' loops and summaries (TPR/FPR, personas, alignment)
costs           token and price estimates before a run
identity        the one digest scheme and seed rule of every request kind
batch/          batch inference files (OpenAI Batch API, vLLM run_batch)
==============  ===============================================================

The request's, runner's and results' names are importable from here
(``from dbpa_core.audit import run, AuditRequest``); they are loaded on
first use so that reading a SPEC or a price does not import the compiled
statistics.
"""

from importlib import import_module

_NAMES = {
    "configs": ("EmbedderConfig", "SamplerConfig"),
    "request": ("ArmRequest", "AuditRequest", "PerturbedPrompt", "Prompt", "REPLICATE_STRIDE",
                "SequentialPlan", "arm_seed"),
    "arms": ("ArmSource", "NotStored", "Progress", "RunUpdate", "draw_arm"),
    "runner": ("build_embedder", "build_sampler", "compare_arms", "request_warnings", "compare_family",
               "compare_family_sequential", "compare_sequential", "explained", "run", "run_audit", "uploaded_arms"),
    "results": ("Arm", "FamilyResult", "PerturbationResult"),
    "identity": ("request_digest", "test_seed"),
    # Every analysis's request and the one dispatch table (the layer above: dbpa_core.requests).
    "..requests.two_sample": ("SampleArm", "TwoSampleRequest"),
    "..requests.rut": ("RUTRequest",),
    "..requests.stability": ("StabilityRequest",),
    "..requests.dispatch": ("RUNNERS",),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    if name in _MODULE_OF:
        module = _MODULE_OF[name]
        return getattr(import_module(module if module.startswith("..") else f".{module}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
