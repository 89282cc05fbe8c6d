"""The packaged MiniLM's vectors of the paper's responses, and embedding the experiments' arms.

MiniLM's vectors of every response the experiments embed ship in
:data:`EMBEDDINGS_FILE` (float16, keyed by the store's ``text_hash``; written
by ``scripts/embed_paper.py``) and are read by :func:`shipped_embeddings`, so
the experiments run without embedding anything: :func:`embed_groups` takes a
vector from the store, else from the file, else from the embedder.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

import numpy as np

from .._validation import check_positive_int
from ..data.store import text_hash
from ..embedders.base import unit_rows
from .loaders import PAPER_DIR, PaperDataError

#: MiniLM vectors of every response the experiments embed (``scripts/embed_paper.py``).
EMBEDDINGS_FILE = PAPER_DIR / "minilm_embeddings.npz"
#: progress(stage, done, total): the paper experiments' stage callback (a stage name, items done, items in all).
Progress = Callable[[str, int, int], object]


def settings_iv(n_resamples, seed, discrepancy="js_distance"):
    """The checked (n_resamples, seed) of an experiment; an unknown ω raises naming `discrepancy`."""
    from ..stats.discrepancy import get_discrepancy

    get_discrepancy(discrepancy)  # raises naming `discrepancy`
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    seed = check_positive_int(seed, "seed", minimum=0)
    return n_resamples, seed


def default_embedder(embedder):
    """``embedder``, or the packaged MiniLM that computed the shipped vectors."""
    if embedder is not None:
        return embedder
    from ..embedders import get_embedder

    return get_embedder("minilm")


@dataclass(frozen=True, eq=False)
class ShippedEmbeddings:
    """The vectors of :data:`EMBEDDINGS_FILE`.

    Attributes
    ----------
    embedder_key : str
        The embedder that computed them, as the store keys it
        (``Embedder.key``, e.g. ``"minilm:all-MiniLM-L6-v2"``).
    rows : mapping of str -> int
        The store's ``text_hash`` of a response → its row of :attr:`vectors`.
    vectors : ndarray of shape (n, dim), float16
        The embedder's unit-norm output rounded to float16 (norms within
        ≈ 1e-3 of 1: renormalise before use).
    """

    embedder_key: str
    rows: MappingProxyType
    vectors: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)


@lru_cache(maxsize=4)
def read_vectors(path) -> ShippedEmbeddings:
    """A shipped vector file as ``scripts/embed_paper.py`` writes it (read once per process and path).

    Raises
    ------
    PaperDataError
        If the file is missing or not in that format.
    """
    try:
        with np.load(path) as shipped:
            hashes, vectors, key = shipped["text_hashes"], shipped["vectors"], str(shipped["embedder_key"])
    except FileNotFoundError:
        raise PaperDataError(f"{path}: the shipped embeddings are missing; restore assets/ from git or rerun "
                             "the script that wrote them.") from None
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as problem:
        raise PaperDataError(f"{path}: not a file of text_hashes, vectors and embedder_key ({problem}); restore "
                             "assets/ from git or rerun the script that wrote it.") from None
    if hashes.ndim != 2 or hashes.shape[1] != 32 or vectors.ndim != 2 or len(vectors) != len(hashes):
        raise PaperDataError(f"{path}: expected one 32-byte sha256 per vector row; rerun the script that wrote it.")
    vectors.setflags(write=False)
    return ShippedEmbeddings(key, MappingProxyType({bytes(h).hex(): i for i, h in enumerate(hashes)}), vectors)


def shipped_embeddings() -> ShippedEmbeddings:
    """The shipped MiniLM vectors of the paper's responses (:data:`EMBEDDINGS_FILE`)."""
    return read_vectors(EMBEDDINGS_FILE)


def load_shipped_embeddings(texts: Sequence[str], *, embedder_key: str, store=None,
                            shipped: ShippedEmbeddings | None = None) -> dict[str, np.ndarray]:
    """Serve the shipped vectors of the texts the store lacks, and put them into the store.

    The packaged MiniLM's vectors of every response the experiments embed
    ship as float16 (:func:`shipped_embeddings`); they
    are renormalised to unit norm as float32, as the embedder returns them,
    and written to the store in one bulk write, so later runs (and the page's
    warm opens) read them like any cached embedding.  A vector the store
    already holds is never replaced.

    Parameters
    ----------
    texts : sequence of str
    embedder_key : str
        The experiment's embedder (``Embedder.key``); another embedder than
        the one that wrote the file gets nothing from it.
    store : SampleStore, optional
    shipped : ShippedEmbeddings, optional
        The file to serve from (default :func:`shipped_embeddings`, the paper's responses).

    Returns
    -------
    dict of text_hash -> ndarray of shape (dim,), float32
        The vectors served from the file (texts the file lacks are absent).
    """
    shipped = shipped if shipped is not None else shipped_embeddings()
    distinct = list(dict.fromkeys(texts))
    if embedder_key != shipped.embedder_key or not distinct:
        return {}
    held = store.get_embeddings(embedder_key, distinct) if store is not None else {}
    found = [t for t in distinct if text_hash(t) not in held and text_hash(t) in shipped.rows]
    if not found:
        return {}
    rows = shipped.vectors[[shipped.rows[text_hash(t)] for t in found]].astype(np.float32)
    vectors = unit_rows(rows, "the shipped vectors")
    if store is not None:
        store.put_embeddings(embedder_key, found, vectors)
    return {text_hash(t): v for t, v in zip(found, vectors)}


def embed_groups(groups: dict, *, embedder=None, store=None, progress: Progress | None = None,
                 stage: str = "embedding the paper's responses", shipped: ShippedEmbeddings | None = None) -> dict:
    """Embed several arms in one call (one progress bar, one store lookup).

    Vectors come from the store, else from the shipped file
    (:func:`load_shipped_embeddings`), else from the embedder, which then
    embeds only what neither holds.

    Parameters
    ----------
    groups : dict of key -> sequence of str
    embedder : Embedder, optional
        Default: the packaged MiniLM.
    store : SampleStore, optional
        Caches every vector, so a second run embeds nothing.
    shipped : ShippedEmbeddings, optional
        The shipped vector file to consult (default the paper's responses').

    Returns
    -------
    dict of key -> ndarray of shape (len(texts), dim)
    """
    embedder = default_embedder(embedder)
    texts = [text for group in groups.values() for text in group]
    known = store.get_embeddings(embedder.key, texts) if store is not None else {}
    known.update(load_shipped_embeddings([t for t in texts if text_hash(t) not in known], embedder_key=embedder.key,
                                         store=store, shipped=shipped))
    rest = list(dict.fromkeys(t for t in texts if text_hash(t) not in known))
    if rest:
        fresh = embedder.embed(rest, store=store,
                               progress=(lambda done, total: progress(stage, done, total)) if progress else None)
        known.update(zip(map(text_hash, rest), fresh))
    vectors = np.stack([known[text_hash(t)] for t in texts])
    out, start = {}, 0
    for key, group in groups.items():
        out[key] = vectors[start : start + len(group)]
        start += len(group)
    return out


