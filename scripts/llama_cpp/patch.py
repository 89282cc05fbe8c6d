"""Add DBPA Explorer's CPU kernel changes to an unpacked llama-cpp-python source distribution.

    python scripts/llama_cpp/patch.py DIR        # DIR: llama_cpp_python-0.3.36, unpacked from PyPI's sdist
    python scripts/llama_cpp/patch.py --version  # the version a patched build reports

scripts/install.sh downloads the pinned sdist (SHA-256 checked), runs this
script on it and builds it with ``CMAKE_ARGS="-DGGML_NATIVE=OFF"``.  Three
changes, none of which changes a number llama.cpp computes (tested bit for
bit, ``tests/test_engine.py``):

1. ``dbpa_gemm.h`` (beside this script): tiled matrix products for x86 that
   llamafile's ``llamafile_sgemm`` now runs on steps of two or more tokens:
   Q4_1 weights (the packaged SmolLM2's format; AVX-512 VNNI where the CPU
   has it, else AVX2) and, with AVX-512 VNNI, Q8_0 weights (SmolLM2's
   output matrix, and the 8-bit requantization).  Stock llama.cpp runs one
   vector dot per (weight row, token) for Q4_1, so a step of 16 sequences
   cost about as much as 16 one-token steps; with the kernels, batched
   decoding gains what the hardware allows (bench/RESULTS.md).
2. ``llama-kv-cache.cpp``: attention reads the KV cells in use padded to 32,
   not to 256: an audit's short answers used 40-100 of a stream's 256 cells
   and paid attention over all of them.  The padded cells are masked to zero
   weight, and 32 keeps every attention kernel on the same path (tinyBLAS
   needs a multiple of 8, ggml's F16 dot of 32), so the sums are unchanged.
   ``DBPA_KV_PAD=256`` in the environment restores the stock padding at run time.
3. ``llama_cpp/__init__.py``: the version becomes ``0.3.36+dbpa.3`` (a local
   version: ``llama-cpp-python==0.3.36`` in requirements.txt still matches),
   so that install.sh can tell the patched build from a stock one.

Every edit checks that its anchor occurs exactly once, so a different
llama.cpp fails here, by name, instead of building something else.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The version the patched build reports (scripts/install.sh checks it).
PATCHED_VERSION = "0.3.36+dbpa.3"
KERNEL = "dbpa_gemm.h"

# DBPA Explorer's kernels first (dbpa_gemm.h); each returns false where llama.cpp's own path should run.
Q4_1_CASE = """    case GGML_TYPE_Q4_1: {
#if defined(DBPA_GEMM)
        return dbpa::q4_1_gemm(m, n, k, A, lda, B, ldb, C, ldc, Btype, params->ith, params->nth);
#else
        return false;
#endif
    }

"""
Q8_0_HOOK = """#if defined(DBPA_GEMM)
        if (dbpa::q8_0_gemm(m, n, k, A, lda, B, ldb, C, ldc, Btype, params->ith, params->nth))
            return true;
#endif
"""

# The padding change has its own run-time switch so that it can be compared
# with stock llama.cpp in one build: DBPA_KV_PAD=256 restores the stock padding.
KV_PAD_SWITCH = """#include <cstdlib>

// DBPA Explorer (scripts/llama_cpp/patch.py): attention over the KV cells in use
// padded to 32, not 256; the environment variable DBPA_KV_PAD=256 restores stock.
static uint32_t dbpa_kv_pad() {
    static const uint32_t pad = [] {
        const char * value = std::getenv("DBPA_KV_PAD");
        return (value != nullptr && std::strcmp(value, "256") == 0) ? 256u : 32u;
    }();
    return pad;
}
"""


def replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    count = text.count(old)
    if count != 1:
        raise SystemExit(f"patch.py: {path}: expected the anchor once, found it {count} times: {old[:60]!r}")
    path.write_text(text.replace(old, new), encoding="utf-8")


def patch(source: Path) -> None:
    """Apply the three changes of the module docstring to the unpacked sdist ``source``."""
    init = source / "llama_cpp" / "__init__.py"
    if PATCHED_VERSION in init.read_text(encoding="utf-8"):
        raise SystemExit(f"patch.py: {source} is patched already")
    llamafile = source / "vendor" / "llama.cpp" / "ggml" / "src" / "ggml-cpu" / "llamafile"
    shutil.copyfile(HERE / KERNEL, llamafile / KERNEL)
    sgemm = llamafile / "sgemm.cpp"
    entry = "bool llamafile_sgemm(const struct ggml_compute_params * params, int64_t m, int64_t n, int64_t k,"
    replace_once(sgemm, entry, f'#include "{KERNEL}"\n\n{entry}')
    q4_0 = "    case GGML_TYPE_Q4_0: {\n        if (Btype != GGML_TYPE_Q8_0)"
    replace_once(sgemm, q4_0, Q4_1_CASE + q4_0)
    q8_0 = "    case GGML_TYPE_Q8_0: {\n        if (Btype != GGML_TYPE_Q8_0)\n           return false;\n"
    replace_once(sgemm, q8_0, q8_0 + Q8_0_HOOK)
    kv_cache = source / "vendor" / "llama.cpp" / "src" / "llama-kv-cache.cpp"
    replace_once(kv_cache, "#include <unordered_map>\n", "#include <unordered_map>\n" + KV_PAD_SWITCH)
    replace_once(kv_cache, "const uint32_t n_pad_cur = std::max(n_pad, 256u);",
                 "const uint32_t n_pad_cur = std::max(n_pad, dbpa_kv_pad());  // DBPA Explorer: stock 256")
    replace_once(init, '__version__ = "0.3.36"', f'__version__ = "{PATCHED_VERSION}"')


if __name__ == "__main__":
    if sys.argv[1:] == ["--version"]:
        print(PATCHED_VERSION)
        raise SystemExit(0)
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        raise SystemExit("usage: python scripts/llama_cpp/patch.py DIR  (the unpacked llama_cpp_python-0.3.36 sdist)")
    patch(Path(sys.argv[1]))
    print(f"patch.py: {sys.argv[1]} patched ({PATCHED_VERSION})")
