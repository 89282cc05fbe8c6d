#!/usr/bin/env bash
# The README's test command (and exactly what .ci/run calls): install everything, lint, run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh all
py=${VIRTUAL_ENV:-$PWD/.venv}/bin/python
"$py" -m ruff check .
"$py" -m pytest -n 2 --dist loadfile --durations=25 "$@"
