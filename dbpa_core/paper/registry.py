"""The command line's and the app's list of the paper's experiments, and what each one embeds."""

from __future__ import annotations

from ..data.store import text_hash
from . import loaders as paper
from .appendix_c import appendix
from . import embeddings
from .fig1 import roc_study
from .fig3 import alignment_study
from .rut import rut_study
from .stability import stability_study
from .table2 import persona_table

#: The command line's experiment names → functions (each returns a frozen result).
REPRODUCERS = {"table2": persona_table, "fig1": roc_study, "fig3": alignment_study, "appendix": appendix,
               "rut": rut_study, "stability": stability_study}
EXPERIMENTS = tuple(REPRODUCERS)


def experiment_texts(experiment: str) -> list[str]:
    """Every response an experiment embeds (echoes stripped), to check the store before a long first run."""
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
    raise ValueError(f"`experiment` must be one of {', '.join(map(repr, EXPERIMENTS))}; got {experiment!r}.")


def missing_embeddings(experiment: str, *, embedder_key: str, store) -> int:
    """How many distinct responses of ``experiment`` the embedder would have to embed (0 = nothing to embed).

    A response counts when neither the store nor, for the embedder that wrote
    it, the shipped file (:func:`dbpa_core.paper.embeddings.shipped_embeddings`)
    has its vector.
    """
    texts = list(dict.fromkeys(experiment_texts(experiment)))
    held = store.get_embeddings(embedder_key, texts)
    shipped = embeddings.shipped_embeddings()
    from_file = shipped.rows if embedder_key == shipped.embedder_key else {}
    return sum(1 for t in texts if text_hash(t) not in held and text_hash(t) not in from_file)
