"""Build (once per machine) and cache the llama-cpp-python wheel the local model runs on.

    python scripts/llama_cpp/build_wheel.py      # prints the path of the cached wheel

PyPI has no binary wheel of llama-cpp-python, so the ``local`` extra compiles
llama.cpp (about 6.5 min on a 2-core x86 machine).  This script does it once
and keeps the wheel under the user cache, keyed by everything that changes
the build: the pinned sdist's SHA-256, the patch and kernel files, the CMake
arguments, the platform and the Python version.  A second install, and every
CI run on the same machine, then installs the cached wheel in seconds.

Where the build differs by machine:

* x86-64: DBPA Explorer's kernel changes are applied (``patch.py``: tiled
  Q4_1/Q8_0 matrix products, attention padded to 32 cells; the same numbers
  bit for bit) and ``-DGGML_NATIVE=OFF`` is passed (a native build crashes on
  some x86 CPU families; the kernels pick AVX2 or AVX-512 VNNI at run time).
* Elsewhere (ARM Linux, Apple Silicon): stock llama.cpp, native build (which
  keeps ARM's dot-product kernels).  One line says so.
* ``DBPA_LLAMA_PATCH=0`` builds stock llama.cpp on any machine;
  ``DBPA_GGML_NATIVE=ON|OFF`` forces the native setting.
* A patch that does not apply (another llama.cpp) never aborts the install:
  it prints one line and builds stock llama.cpp.

``-DLLAVA_BUILD=OFF`` skips the multimodal library, which nothing here uses.
Nothing is written outside a temporary folder and the user cache.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import patch as llama_patch  # noqa: E402  (beside this script; not a package)

VERSION = "0.3.36"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"


def cache_root() -> Path:
    """The user cache (``$XDG_CACHE_HOME`` or ``~/.cache``; ``~/Library/Caches`` on macOS)."""
    if os.environ.get("DBPA_CACHE_DIR"):
        return Path(os.environ["DBPA_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "dbpa_explorer"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "dbpa_explorer"
    return Path.home() / ".cache" / "dbpa_explorer"


def wants_patch() -> tuple[bool, str]:
    """Whether to apply the kernel patch here, and why (one line for the log)."""
    if os.environ.get("DBPA_LLAMA_PATCH", "1") == "0":
        return False, "DBPA_LLAMA_PATCH=0: building stock llama.cpp"
    machine = platform.machine().lower()
    if machine not in {"x86_64", "amd64"}:
        return False, f"{machine}: the tiled kernels are x86-64 only; building stock llama.cpp"
    return True, "x86-64: building llama.cpp with DBPA Explorer's tiled kernels (scripts/llama_cpp)"


def cmake_args() -> str:
    native = os.environ.get("DBPA_GGML_NATIVE", "").upper()
    if native not in {"ON", "OFF"}:
        native = "OFF" if platform.machine().lower() in {"x86_64", "amd64"} else "ON"
    return f"-DLLAVA_BUILD=OFF -DGGML_NATIVE={native}"


def build_key(patched: bool) -> str:
    digest = hashlib.sha256()
    parts = [SDIST_SHA256, cmake_args(), sysconfig.get_platform(), sys.implementation.cache_tag, str(patched)]
    for part in parts:
        digest.update(part.encode() + b"\0")
    if patched:
        for name in ("patch.py", llama_patch.KERNEL):
            digest.update((HERE / name).read_bytes())
    return digest.hexdigest()[:16]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _unpack(sdist: Path, into: Path) -> Path:
    with tarfile.open(sdist) as archive:
        archive.extractall(into, filter="data")
    return into / f"llama_cpp_python-{VERSION}"


def build(work: Path, patched: bool) -> Path:
    """Download the pinned sdist, patch it where asked, and build a wheel in ``work``."""
    pip = [sys.executable, "-m", "pip"]
    subprocess.run(pip + ["download", "-q", "--no-deps", "--no-binary", ":all:",
                          f"llama-cpp-python=={VERSION}", "-d", str(work)], check=True)
    sdist = work / f"llama_cpp_python-{VERSION}.tar.gz"
    if _sha256(sdist) != SDIST_SHA256:
        raise SystemExit(f"build_wheel: {sdist.name} does not have the pinned SHA-256 {SDIST_SHA256}")
    source = _unpack(sdist, work / "src")
    if patched:
        try:
            llama_patch.patch(source)
        except SystemExit as refusal:  # another llama.cpp: build stock rather than abort the install
            print(f"build_wheel: the kernel patch does not apply ({refusal}); building stock llama.cpp")
            shutil.rmtree(work / "src")
            source = _unpack(sdist, work / "src")
    env = dict(os.environ, CMAKE_ARGS=cmake_args())
    subprocess.run(pip + ["wheel", "-q", "--no-deps", str(source), "-w", str(work / "wheel")], check=True, env=env)
    (wheel,) = (work / "wheel").glob("llama_cpp_python-*.whl")
    return wheel


def cached_wheel() -> Path:
    """The cached wheel for this machine, built first if missing."""
    patched, why = wants_patch()
    folder = cache_root() / "wheels" / build_key(patched)
    found = sorted(folder.glob("llama_cpp_python-*.whl"))
    if found:
        return found[0]
    print(f"build_wheel: {why}; compiling once (several minutes), then cached in {folder}", flush=True)
    with tempfile.TemporaryDirectory(prefix="dbpa-llama-") as tmp:
        wheel = build(Path(tmp), patched)
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / (wheel.name + ".partial")
        shutil.copyfile(wheel, partial)
        partial.rename(folder / wheel.name)  # atomic: a killed build never leaves a half wheel
    return folder / wheel.name


if __name__ == "__main__":
    print(cached_wheel())
