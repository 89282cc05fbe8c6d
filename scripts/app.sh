#!/usr/bin/env bash
# The README's app command: install the app on its embedded defaults (no compiler) and start it.
# Options go to Streamlit, e.g. bash scripts/app.sh --server.port 8601
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh app
exec "${VIRTUAL_ENV:-$PWD/.venv}/bin/dbpa" app "$@"
