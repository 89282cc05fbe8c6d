"""Benchmark of ``python -m dbpa_core reproduce`` for every experiment, cold and warm.

    python bench/bench_reproduce.py [--repeats 1] [--experiments table2 fig1 …] [--no-page]

Each experiment of :data:`dbpa_core.paper.registry.EXPERIMENTS` is run in a fresh process as a user would
run it, first on a cold store (an empty SQLite file: imports, and putting the shipped MiniLM vectors it needs
into the store, included), then again on the now warm store.  The "Reproduce the paper" page is timed on the
warm store (AppTest: first visit in a new process, then a rerun).  The machine's load average is printed
beside the figures: on the shared 2-core machine other processes' load slows every run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def cli(experiment: str, store: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dbpa_core", "reproduce", experiment, "--store", str(store)], cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO)}, check=True, capture_output=True)
    return time.perf_counter() - start


PAGE_TIMER = """
import sys, time
sys.path.insert(0, {repo!r})
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=900)
at.run()
start = time.perf_counter()
at.switch_page("views/reproduce.py").run()
first = time.perf_counter() - start
assert not at.exception, at.exception
start = time.perf_counter()
at.number_input(key="reproduce_b").set_value(1000).run()
print(first, time.perf_counter() - start)
"""


def page_open(store: Path) -> tuple[float, float]:
    code = PAGE_TIMER.format(repo=str(REPO), app=str(REPO / "dbpa_app" / "app.py"))
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO), "DBPA_STORE": str(store)}).stdout
    first, rerun = map(float, out.split()[-2:])
    return first, rerun


def load() -> str:
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())


def main() -> None:
    from dbpa_core.paper.registry import EXPERIMENTS

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--experiments", nargs="+", default=list(EXPERIMENTS), choices=EXPERIMENTS)
    parser.add_argument("--no-page", action="store_true", help="skip timing the Reproduce page")
    args = parser.parse_args()
    print(f"load average (1/5/15 min) at start: {load()}")
    print(f"{'experiment':12} {'cold store':>22} {'warm store':>22}  cold / warm")
    for experiment in args.experiments:
        colds, warms = [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as folder:
                store = Path(folder) / "store.sqlite"
                colds.append(cli(experiment, store))
                warms.append(cli(experiment, store))
        cold, warm = statistics.median(colds), statistics.median(warms)
        print(f"{experiment:12} {f'median {cold:.1f} s':>22} {f'median {warm:.1f} s':>22}  {cold / warm:.2f}×  "
              f"(cold {', '.join(f'{t:.1f}' for t in colds)}; warm {', '.join(f'{t:.1f}' for t in warms)})")
    if not args.no_page:
        with tempfile.TemporaryDirectory() as folder:
            store = Path(folder) / "store.sqlite"
            cli("table2", store)
            first, rerun = page_open(store)
        print(f"page 'Reproduce the paper', warm store: first visit in a new process {first:.2f} s, "
              f"rerun {rerun:.2f} s  target ≤ 2 s")
    print(f"load average (1/5/15 min) at end: {load()}")


if __name__ == "__main__":
    main()
