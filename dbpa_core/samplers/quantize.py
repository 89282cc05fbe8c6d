"""Lower-bit requantizations of the packaged SmolLM2: stand-ins for a *substituted* model.

The RUT audit (Zhu et al., ICLR 2026) asks whether an API serves the model it
claims or a cheaper one, typically a lower-bit quantization of it.  These
variants are made offline from the packaged ``SmolLM2-135M-Instruct.Q4_1.gguf``
with llama.cpp's own quantizer (``llama_model_quantize`` with
``allow_requantize``: each tensor is dequantized and quantized again), built
on first use into :func:`models_dir` and verified byte for byte against the
SHA-256 recorded below, so that every machine audits exactly the same models.

=================  ===========  ====================================================
name               file (MB)    tensors (210 weight matrices; token embedding Q8_0)
=================  ===========  ====================================================
smollm2            98.4         Q4_1 — the packaged reference model
smollm2-q8_0       144.8        Q8_0 — nearly the reference (Q4_1 re-expressed in 8 bits)
smollm2-q5_0       105.0        Q5_0
smollm2-q4_0       91.7         Q4_0
smollm2-q3_k_m     93.5         Q4_K ffn_down, Q5_0 / Q5_1 attention V and some FFN, Q4_0 elsewhere
smollm2-q2_k       88.2         Q3_K ffn_down, Q4_0 elsewhere
=================  ===========  ====================================================

Why the K-quant recipes are not "pure": k-quants need rows that are a
multiple of 256 values and most of SmolLM2's matrices have 576 columns, so
llama.cpp falls back to Q4_0 for them.  On this model the Q3_K_S recipe gives
tensor for tensor the same weights as Q2_K, so it is not listed.  Every
variant differs measurably from the reference: on four prompts none keeps all
the reference's greedy answers, and the reference's own greedy answers lose
0.3-1 nats of log-likelihood under Q8_0, 2-7 under Q5_0 and 11-33 under Q2_K
(tests/test_quantize.py checks both).

Determinism: the quantizer uses no randomness and splits work by rows, so
its output does not depend on the thread count; it can depend on the
llama.cpp build, and a mismatch is an error (:class:`QuantizationMismatch`)
rather than a silently different model.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .smollm2 import smollm2_path

#: The name of the packaged reference model.
REFERENCE_MODEL = "smollm2"


@dataclass(frozen=True)
class Variant:
    """One requantization of the packaged SmolLM2.

    Attributes
    ----------
    ftype : int
        llama.cpp's ``LLAMA_FTYPE_MOSTLY_*`` recipe.
    sha256 : str
        Expected SHA-256 of the output file (llama-cpp-python :data:`LLAMA_CPP_VERSION`).
    """

    ftype: int
    sha256: str

    @property
    def file_name(self) -> str:
        return f"SmolLM2-135M-Instruct.{self.recipe}.gguf"

    @property
    def recipe(self) -> str:
        return _RECIPE_NAMES[self.ftype]


_RECIPE_NAMES = {2: "Q4_0", 7: "Q8_0", 8: "Q5_0", 10: "Q2_K", 12: "Q3_K_M"}

#: llama-cpp-python version the hashes were recorded with.
LLAMA_CPP_VERSION = "0.3.36"

#: name → variant, closest to the reference first.
VARIANTS = MappingProxyType({
    "smollm2-q8_0": Variant(7, "7b46609d11703c058397e5cfe4cc6e4b2508cb1eb4c80ddc472a5d421fbdb508"),
    "smollm2-q5_0": Variant(8, "2f90a7511cf340144dda963a9fd73f708601517f0f8038d31c9069654526be44"),
    "smollm2-q4_0": Variant(2, "aa4256f3b46eb4add75ece1c0eeac1c6e4f1ec0c93e6fbe64fe1770f4ad09ae8"),
    "smollm2-q3_k_m": Variant(12, "01045a8fee6c962e4f7b0f80dccf937503738f61f987c305378fd3f527eac9d4"),
    "smollm2-q2_k": Variant(10, "1733ab14bc423774519aa464e0d74e190617e877c9d0aa07a698b500d1788895"),
})

#: Every name :func:`local_model_path` resolves.
LOCAL_MODELS = (REFERENCE_MODEL, *VARIANTS)


class QuantizationMismatch(RuntimeError):
    """A built variant's bytes differ from the recorded SHA-256 (another llama.cpp build?)."""


def models_dir() -> Path:
    """Where variants are built: ``$DBPA_CACHE/models`` or ``~/.cache/dbpa_explorer/models``."""
    root = os.environ.get("DBPA_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "dbpa_explorer") / "models"


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def quantize_file(source: str | Path, destination: str | Path, ftype: int, *, n_threads: int = 2) -> None:
    """Requantize ``source`` into ``destination`` with llama.cpp's ``ftype`` recipe (no checks, not atomic)."""
    import llama_cpp  # lazy: compiled extension

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = int(ftype)
    params.allow_requantize = True
    params.nthread = int(n_threads)
    # llama.cpp logs one line per tensor (and a warning per k-quant fallback)
    # through llama-cpp-python's logger: keep a first use quiet.
    logger = logging.getLogger("llama-cpp-python")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        status = llama_cpp.llama_model_quantize(str(source).encode(), str(destination).encode(),
                                                ctypes.byref(params))
    finally:
        logger.setLevel(level)
    if status != 0:
        raise RuntimeError(f"llama.cpp could not quantize {source} (recipe {ftype}, status {status}).")


_VERIFIED: set[Path] = set()
_BUILD_LOCK = threading.Lock()


def _check_name(name: str) -> str:
    if not isinstance(name, str) or name.lower() not in LOCAL_MODELS:
        raise ValueError(f"`model` must be one of {', '.join(LOCAL_MODELS)} (or give `model_path`, a GGUF file); "
                         f"got {name!r}.")
    return name.lower()


def build_variant(name: str, *, directory: str | Path | None = None) -> Path:
    """Build (once) and verify the variant ``name``; return its path.

    The file is written to a temporary name in ``directory`` (default
    :func:`models_dir`) and renamed only once its SHA-256 matches, so a
    crash or a concurrent build never leaves a partial or wrong model
    under the final name.  An existing file is verified once per process.

    Raises
    ------
    QuantizationMismatch
        The bytes differ from the recorded hash.
    """
    name = _check_name(name)
    if name == REFERENCE_MODEL:
        return smollm2_path()
    variant = VARIANTS[name]
    directory = Path(directory) if directory is not None else models_dir()
    path = directory / variant.file_name
    with _BUILD_LOCK:
        if path in _VERIFIED:
            return path
        if path.exists():
            actual = file_sha256(path)
            if actual != variant.sha256:
                raise QuantizationMismatch(
                    f"{path} has SHA-256 {actual[:16]}…, not the recorded {variant.sha256[:16]}…: delete it and it "
                    "will be built again.")
        else:
            directory.mkdir(parents=True, exist_ok=True)
            partial = directory / f".{variant.file_name}.{os.getpid()}.{threading.get_ident()}.partial"
            try:
                quantize_file(smollm2_path(), partial, variant.ftype)
                actual = file_sha256(partial)
                if actual != variant.sha256:
                    raise QuantizationMismatch(
                        f"{name}: llama.cpp's {variant.recipe} quantization gave SHA-256 {actual[:16]}…, not the "
                        f"recorded {variant.sha256[:16]}… (recorded with llama-cpp-python {LLAMA_CPP_VERSION}). "
                        "Another llama.cpp build quantizes differently: install the pinned llama-cpp-python with "
                        "scripts/install.sh.")
                os.replace(partial, path)  # atomic on one file system
            finally:
                partial.unlink(missing_ok=True)
        _VERIFIED.add(path)
        return path


def local_model_path(name: str = REFERENCE_MODEL) -> Path:
    """The GGUF file of a local model by name: ``"smollm2"`` (packaged) or a variant in :data:`VARIANTS`.

    A variant is built on first use (about a second on two cores) and
    verified against its recorded SHA-256.

    Examples
    --------
    >>> local_model_path("smollm2-q4_0").name
    'SmolLM2-135M-Instruct.Q4_0.gguf'
    """
    return build_variant(name)


def build_all(*, directory: str | Path | None = None) -> dict[str, Path]:
    """Build and verify every variant (``python -m dbpa_core.samplers.quantize``, run by scripts/install.sh)."""
    return {name: build_variant(name, directory=directory) for name in VARIANTS}


if __name__ == "__main__":
    for variant_name, variant_path in build_all().items():
        print(f"{variant_name}: {variant_path} (SHA-256 verified)")
