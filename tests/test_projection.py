"""Tests of dbpa_core.present.projection"""

import numpy as np
import pytest
from sklearn.decomposition import PCA

from dbpa_core.present.projection import project


def test_pca_matches_sklearn_up_to_sign_and_is_deterministic():
    x = np.random.default_rng(0).normal(size=(30, 8)) * np.arange(1, 9)
    ours = project(x)
    reference = PCA(n_components=2).fit_transform(x)
    for axis in range(2):
        assert np.allclose(ours[:, axis], reference[:, axis], atol=1e-8) or \
            np.allclose(ours[:, axis], -reference[:, axis], atol=1e-8)
    np.testing.assert_array_equal(project(x), ours)


def test_umap_seeded():
    x = np.random.default_rng(1).normal(size=(25, 6))
    a = project(x, "umap", rng=3)
    b = project(x, "umap", rng=3)
    assert a.shape == (25, 2)
    np.testing.assert_allclose(a, b)


@pytest.mark.parametrize(("args", "match"), [
    ((np.ones(5),), "`embeddings` must be 2-D"), ((np.ones((5, 2)), "tsne"), "`method` must be one of"),
])
def test_bad_inputs(args, match):
    with pytest.raises(ValueError, match=match):
        project(*args)
