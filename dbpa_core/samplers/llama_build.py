"""Which llama.cpp this process runs: the kernels that multiply its weights, and its thread count."""

from __future__ import annotations

import ctypes
import os


#: What :func:`gemm_kernel` reports for each level of the patched CPU backend (scripts/llama_cpp/dbpa_gemm.h).
GEMM_KERNELS = {0: "llama.cpp's own kernels (DBPA_GEMM=0): a vector dot per Q4_1 weight row and token",
                1: "tiled Q4_1 kernel, AVX2 (Q8_0: llama.cpp's tinyBLAS)",
                2: "tiled Q4_1 and Q8_0 kernels, AVX-512 VNNI"}


#: What it reports for a llama-cpp-python built without them.
STOCK_KERNEL = "llama.cpp's own kernels (a stock build: run scripts/install.sh): a vector dot per Q4_1 weight row and token"


def gemm_kernel() -> str:
    """Which kernel multiplies the model's weights by a forward step's tokens in this process's llama.cpp.

    scripts/install.sh builds llama-cpp-python with tiled kernels
    (scripts/llama_cpp/patch.py) that give the same numbers as stock
    llama.cpp's, bit for bit, several times faster on steps of many tokens;
    a stock build works too, only slower.
    """
    from pathlib import Path

    import llama_cpp

    # The soname llama.cpp's own libraries were linked against: dlopen hands back the copy already loaded.
    library = Path(llama_cpp.__file__).parent / "lib" / "libggml-cpu.so.0"
    try:
        function = ctypes.CDLL(str(library)).dbpa_gemm
    except (OSError, AttributeError):
        return STOCK_KERNEL
    function.restype = ctypes.c_int
    return GEMM_KERNELS.get(function(), STOCK_KERNEL)


def default_threads() -> int:
    """llama.cpp's thread count when none is given: ``$DBPA_THREADS``, else every CPU core.

    llama.cpp's threads wait for each other by spinning, so two processes that
    each take every core slow each other down many times over (a classroom
    server beside a batch job; the test suite on two workers): set
    ``DBPA_THREADS`` to share the cores.  Results do not depend on it
    (``tests/test_engine.py``).
    """
    value = os.environ.get("DBPA_THREADS", "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"DBPA_THREADS={value!r} must be a positive integer (llama.cpp's thread count).")
        return int(value)
    return max(1, os.cpu_count() or 1)
