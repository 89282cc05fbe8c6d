#!/usr/bin/env bash
# The README's test command (and exactly what .ci/run calls): install everything, lint, run the tests.
# It ends on where the time went: pytest's 25 slowest tests, then the wall time of each step and the total
# (issue 46: every CI run shows what to cut next).  Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { printf '%-8s %5d s\n' "$1" "$2"; }
bash scripts/install.sh all
installed=$SECONDS
py=${VIRTUAL_ENV:-$PWD/.venv}/bin/python
"$py" -m ruff check .
linted=$SECONDS
status=0
# Two workers, each test file on one of them (a file's module fixtures, e.g. a Streamlit server, start once).
"$py" -m pytest -n 2 --dist loadfile --durations=25 "$@" || status=$?
echo "== wall time (issue 46: CI within 15 min) =="
step install $((installed - start))
step ruff $((linted - installed))
step pytest $((SECONDS - linted))
step total $((SECONDS - start))
exit $status
