"""The papers' experiments on shipped and recorded data, one module per experiment.

Rauba, Wei & van der Schaar, "Quantifying perturbation impacts for large
language models" (ICML 2025), run on the responses its reference code
recorded (shipped in ``assets/paper/``, Apache-2.0), embedded with the
packaged MiniLM and tested with :mod:`dbpa_core.stats`:

=====================  =====================================================
loaders                the shipped responses and the reference run's files
embeddings             the shipped MiniLM vectors; embedding the arms
printed                what the paper printed (tables, stated findings), with references
table2                 Table 2 (§4.1): personas against the doctor baseline
design                 Figs 1–2's design: perturbations tested against a shared original
fig1                   Figs 1–2 (§4.2) on the shipped paraphrases, and both setups together
cvd_roc                Figs 1–2 in the paper's own setup: local models' recorded answers
fig3                   Fig 3 (§4.3): GPT-3.5 against 7 open models
appendix_c             Appendix C.2 (ω), C.4 (similarity), C.3 (cost)
sample_size            §3.2's sample-size rule for the paper's settings
rut                    RUT paper (Zhu et al., ICLR 2026) §5: power vs q, Fig 2
stability              OT stability paper: Table 1 and Figure 1 on recorded
                       searches of local models
=====================  =====================================================

The names below are importable from here (``from dbpa_core import paper;
paper.load_personas()``) and loaded on first use.
"""

from importlib import import_module

_NAMES = {
    "loaders": ("ALIGNMENT_MODELS", "ALIGNMENT_REFERENCE", "ARM_SIZE", "AlignmentRun", "BASELINE_PERSONA",
                "BASE_PROMPT", "MEDICAL_PERSONAS", "PAPER_DIR", "PARAPHRASE_MODELS", "PARAPHRASE_PROMPTS",
                "PERSONAS", "PaperDataError", "PaperModel", "ParaphraseRun", "ReportedStatistic", "SEEDS",
                "echoed_base_prompt", "load_alignment", "load_paraphrases", "load_personas", "reported_alignment",
                "reported_paraphrases", "reported_personas", "strip_echo"),
    "embeddings": ("EMBEDDINGS_FILE", "ShippedEmbeddings", "embed_groups", "load_shipped_embeddings",
                   "read_vectors", "shipped_embeddings"),
    "printed": ("FINDINGS", "PRINTED", "REFERENCE_RUN", "SOURCES", "TABLES", "THIS_PROJECT", "PrintedTable",
                "PrintedValue"),
    "table2": ("PersonaRow", "PersonaTable", "persona_table"),
    "design": ("ALLOWED_FPRS", "DESIGN", "BestModel", "Comparison", "ModelROC", "PerturbationSet", "ROCStudy",
               "compare_sets"),
    "fig1": ("Figs12", "PARAPHRASE_CONFOUND", "figs_1_2", "paraphrase_sets", "paraphrase_study"),
    "cvd_roc": ("CvdRecording", "cvd_study", "load_recording", "recorded_vectors"),
    "fig3": ("AlignmentRow", "AlignmentStudy", "alignment_study"),
    "appendix_c": ("AppendixResult", "ChoiceGrid", "CostRow", "CostTable", "OMEGA_CHOICES", "SIMILARITY_CHOICES",
                   "appendix", "embedding_costs", "omega_choices", "similarity_choices"),
    "sample_size": ("SampleSizeTable", "sample_size_table"),
    "rut": ("DEFAULT_AUDIT", "DefaultAudit", "PAPER_CONCLUSIONS", "PAPER_SOURCE", "PRINTED_TABLE_2A", "PrintedRow",
            "RUTStudy", "rut_study"),
    "stability": ("HIGH_R", "PAPER_TABLE1", "SensitiveItem", "StabilityRow", "StabilityStudy", "stability_study"),
    "registry": ("EXPERIMENTS", "REPRODUCERS", "embedding_sources", "experiment_texts", "missing_embeddings"),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    if name in _MODULE_OF:
        value = getattr(import_module(f".{_MODULE_OF[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
