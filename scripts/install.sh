#!/usr/bin/env bash
# Install everything DBPA Explorer needs on a fresh machine (idempotent: a
# second run only checks).  Used by the README's two commands and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_PROGRESS_BAR=off PIP_DISABLE_PIP_VERSION_CHECK=1
# 1. torch first: the local CPU wheel.  Anything that asks for torch later is
#    then satisfied and cannot pull a newer build with GBs of CUDA packages.
python -m pip install -q torch==2.13.0
# 2. llama-cpp-python, compiled from PyPI's source distribution (SHA-256 pinned)
#    with DBPA Explorer's CPU kernel changes (scripts/llama_cpp/patch.py: tiled
#    Q4_1 and Q8_0 matrix products and tighter attention padding, the same
#    numbers bit for bit, several times the speed of batched steps).  The default
#    native build crashes on this CPU family, hence GGML_NATIVE=OFF.  A patched
#    build reports the version 0.3.36+dbpa.2, which `==0.3.36` in
#    requirements.txt accepts, so step 3 keeps it (and installs its dependencies).
LLAMA_CPP_VERSION=0.3.36
LLAMA_CPP_SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
patched=$(python scripts/llama_cpp/patch.py --version)
if [ "$(python -c 'import importlib.metadata as m; print(m.version("llama_cpp_python"))' 2>/dev/null)" != "$patched" ]; then
  build=$(mktemp -d)
  python -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$LLAMA_CPP_VERSION" -d "$build"
  echo "$LLAMA_CPP_SDIST_SHA256  $build/llama_cpp_python-$LLAMA_CPP_VERSION.tar.gz" | sha256sum -c --quiet -
  tar -xzf "$build/llama_cpp_python-$LLAMA_CPP_VERSION.tar.gz" -C "$build"
  python scripts/llama_cpp/patch.py "$build/llama_cpp_python-$LLAMA_CPP_VERSION"
  CMAKE_ARGS="-DGGML_NATIVE=OFF" python -m pip install -q --no-deps "$build/llama_cpp_python-$LLAMA_CPP_VERSION"
  rm -rf "$build"
fi
# 3. Everything else, pinned.
CMAKE_ARGS="-DGGML_NATIVE=OFF" python -m pip install -q -r requirements.txt
# 4. Packages whose declared dependencies must not be resolved (they would
#    pull an unpinned torch or the llm CLI); we only read the files they ship.
if [ -s requirements-nodeps.txt ]; then
  python -m pip install -q --no-deps -r requirements-nodeps.txt
fi
# 5. dbpa_core itself, editable, so `python -m dbpa_core` and `dbpa` work from anywhere.
python -m pip install -q --no-deps --no-build-isolation -e .
# 6. Debian's Chromium for the browser test (Playwright drives it; it never
#    downloads a browser of its own).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "install: chromium is missing; run: sudo apt-get install -y chromium (needed by the browser test)" >&2
  fi
fi
# 7. The requantized SmolLM2 variants (substituted-model stand-ins for the RUT
#    audit): built offline from the packaged GGUF with llama.cpp's quantizer
#    (≈ 1 s each), SHA-256 verified; a second run only verifies them.
python -m dbpa_core.samplers.quantize
python -c "import dbpa_core" && echo "install: ok"
