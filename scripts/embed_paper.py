"""Regenerate assets/paper/minilm_embeddings.npz: MiniLM vectors of the paper's responses.

    python scripts/embed_paper.py [--store PATH]

Every experiment of :mod:`dbpa_core.paper` embeds the paper's
shipped responses (echoes stripped, empty continuations included) with the
packaged MiniLM.  This script embeds each distinct one of them exactly as the
experiments do (``get_embedder("minilm")``, through a sample store, so an
interrupted run resumes and a store that already holds them embeds nothing)
and writes :data:`dbpa_core.paper.embeddings.EMBEDDINGS_FILE`: the sha256 of each
text (the store's ``text_hash``, as 32 raw bytes), its vector rounded to
float16, and the embedder's key.  float16 keeps the file under 7 MB; cosine
similarities move by ≈ 1e-4, far below the 1/30 width of the JS histograms'
bins.  Rerun it whenever the loaders' echo stripping or the embedder changes
(tests/test_paper_embeddings.py fails when the file no longer covers every
experiment or no longer agrees with MiniLM).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.paper.embeddings import EMBEDDINGS_FILE  # noqa: E402
from dbpa_core.paper.registry import EXPERIMENTS, experiment_texts  # noqa: E402
from dbpa_core.data.store import SampleStore, text_hash  # noqa: E402
from dbpa_core.embedders import get_embedder  # noqa: E402


def paper_texts() -> list[str]:
    """Every distinct response any paper experiment embeds, in a fixed order."""
    texts: dict[str, None] = {}
    for experiment in EXPERIMENTS:
        texts.update(dict.fromkeys(experiment_texts(experiment)))
    return list(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="sample store caching the vectors (default: a temporary one)")
    args = parser.parse_args()
    texts = paper_texts()
    embedder = get_embedder("minilm")
    with tempfile.TemporaryDirectory() as folder:
        store = SampleStore(args.store or Path(folder) / "store.sqlite")
        vectors = embedder.embed(texts, store=store,
                                 progress=lambda done, total: print(f"\rembedded {done}/{total}", end=""))
    print()
    hashes = np.array([np.frombuffer(bytes.fromhex(text_hash(t)), dtype=np.uint8) for t in texts])
    np.savez_compressed(EMBEDDINGS_FILE, text_hashes=hashes, vectors=vectors.astype(np.float16),
                        embedder_key=np.array(embedder.key))
    print(f"{EMBEDDINGS_FILE.relative_to(REPO)}: {len(texts)} texts, {EMBEDDINGS_FILE.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
