"""The command line's and the app's list of the paper's experiments, and what each one embeds."""

from __future__ import annotations

from ..data.store import text_hash
from . import loaders as paper
from .appendix_c import appendix
from .cvd_roc import load_recording, recorded_vectors
from . import embeddings
from .fig1 import figs_1_2
from .fig3 import alignment_study
from .rut import rut_study
from .sample_size import sample_size_table
from .stability import stability_study
from .table2 import persona_table


def _sample_size(**data_settings):
    """§3.2's rule needs no responses: the settings of the data experiments (B, seed, store) do not apply."""
    return sample_size_table()


#: The command line's experiment names → functions (each returns a frozen result).
REPRODUCERS = {"table2": persona_table, "fig1": figs_1_2, "fig3": alignment_study, "appendix": appendix,
               "sample_size": _sample_size, "rut": rut_study,
               "stability": stability_study}
EXPERIMENTS = tuple(REPRODUCERS)


def experiment_texts(experiment: str) -> list[str]:
    """Every response of the paper an experiment embeds (echoes stripped), to check the store before a long first
    run (fig1 also embeds the recorded cvd_nice answers: :func:`dbpa_core.paper.cvd_roc.load_recording`)."""
    if experiment in ("table2", "appendix"):
        return [t for texts in paper.load_personas().values() for t in texts]
    if experiment == "fig1":
        runs = [paper.load_paraphrases(m, s) for m in paper.PARAPHRASE_MODELS for s in paper.SEEDS]
        return [t for run in runs for arm in (run.base, *run.paraphrases) for t in arm]
    if experiment == "stability":
        return []  # the recorded searches ship with their similarities: nothing to embed
    if experiment == "fig3":
        runs = [paper.load_alignment(s) for s in paper.SEEDS]
        return [t for run in runs for arm in (run.reference, *run.models.values()) for t in arm]
    if experiment == "rut":
        return []  # runs on recorded scores and tokens: nothing to embed
    if experiment == "sample_size":
        return []
    raise ValueError(f"`experiment` must be one of {', '.join(map(repr, EXPERIMENTS))}; got {experiment!r}.")


def embedding_sources(experiment: str) -> list[tuple[list[str], embeddings.ShippedEmbeddings]]:
    """What an experiment embeds, grouped by the shipped vector file that holds MiniLM's vectors of it.

    The paper's responses come with :func:`dbpa_core.paper.embeddings.shipped_embeddings`; fig1's recorded
    cvd_nice answers with :func:`dbpa_core.paper.cvd_roc.recorded_vectors`.
    """
    sources = [(experiment_texts(experiment), embeddings.shipped_embeddings())]
    if experiment == "fig1":
        recording = load_recording()
        sources.append(([t for texts in recording.answers.values() for t in texts], recorded_vectors()))
    return sources


def missing_embeddings(experiment: str, *, embedder_key: str, store) -> int:
    """How many distinct responses of ``experiment`` the embedder would have to embed (0 = nothing to embed).

    A response counts when neither the store nor, for the embedder that wrote
    it, its shipped file (:func:`embedding_sources`) has its vector.
    """
    missing = 0
    for texts, shipped in embedding_sources(experiment):
        texts = list(dict.fromkeys(texts))
        held = store.get_embeddings(embedder_key, texts)
        from_file = shipped.rows if embedder_key == shipped.embedder_key else {}
        missing += sum(1 for t in texts if text_hash(t) not in held and text_hash(t) not in from_file)
    return missing
