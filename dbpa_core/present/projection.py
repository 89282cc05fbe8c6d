"""2-D views of the embeddings for the output clouds.

The test runs in the full embedding space; a projection is only a picture
(pages say so).  PCA is the default: deterministic (signs fixed so that the
largest loading of each axis is positive) and instant.  UMAP is optional and
seeded; its first fit in a process compiles numba code (≈15–20 s), so
:func:`warm_up_umap` lets the app pay that once, in the background.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_choice, check_embeddings, check_rng

PROJECTIONS = ("pca", "umap")


def project(embeddings, method: str = "pca", *, rng=None, n_neighbors: int = 15) -> np.ndarray:
    """Project (n, dim) embeddings to (n, 2).

    Parameters
    ----------
    embeddings : array_like of shape (n, dim)
    method : {"pca", "umap"}
    rng : Generator, int or None
        Seeds UMAP (PCA needs none).
    n_neighbors : int
        UMAP's neighbourhood size (capped at n − 1).

    Returns
    -------
    ndarray of shape (n, 2)
    """
    method = check_choice(method, "method", PROJECTIONS)
    x = check_embeddings(embeddings, "embeddings", min_rows=2)
    if method == "pca":
        return _pca(x)
    seed = int(check_rng(rng).integers(2**31 - 1))
    import umap  # lazy: heavy import, numba compilation

    reducer = umap.UMAP(n_components=2, n_neighbors=max(2, min(n_neighbors, len(x) - 1)), random_state=seed,
                        init="random" if len(x) < 6 else "spectral", n_jobs=1)
    return reducer.fit_transform(x)


def _pca(x: np.ndarray) -> np.ndarray:
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    components = vt[:2]
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    coordinates = centred @ (components * signs[:, None]).T
    if coordinates.shape[1] < 2:  # one-dimensional input: pad a zero axis
        coordinates = np.column_stack([coordinates, np.zeros(len(x))])
    return coordinates


def warm_up_umap() -> None:
    """Fit UMAP once on tiny data so the numba compilation is paid up front."""
    project(np.random.default_rng(0).normal(size=(12, 4)), "umap", rng=0, n_neighbors=4)
