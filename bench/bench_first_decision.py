"""The first decision: seconds from ``python -m dbpa_app`` to the home page's verdict in a browser (issue 45).

    python bench/bench_first_decision.py                      # 5 fresh starts of this checkout
    git worktree add /tmp/base 82d1363                        # an earlier commit as the baseline …
    python bench/bench_first_decision.py --baseline /tmp/base # … alternated with this checkout, start by start

The room as it is when a class starts: a browser is already open (Chromium, launched before the clock
starts) and the teacher starts the server.  Each start is fresh: a new server process on a free port of
127.0.0.1 with an empty sample store and the packaged settings, started as ``python -m dbpa_app`` starts
it, the packages' bytecode compiled once before the first start (as ``pip install`` compiles it).  The
browser opens the home page the moment the health check first answers (polled every 20 ms, as Streamlit
opens a browser once its server is up) in a new browser context (nothing cached).  Printed per start, in
seconds after the server process was spawned: healthy, the page's HTML, Streamlit's websocket open (the
browser has loaded and run the app's JavaScript), the script's first message, and the frames in which the
page's title, the verdict strip and the page's own result are first rendered (taken in the page: a
MutationObserver on the displayed text, then the next animation frame); with the server's and the
browser's CPU seconds at the verdict (from /proc, read when Playwright sees it).  Then the median of each
mark over the starts, and with ``--baseline`` both checkouts side by side with the ratio of their medians.
Issue 45's goal: the verdict ≤ 2 s.

The browser runs on the same cores as the server here; on a real room it runs on each person's laptop.
Other jobs share this machine: the load average is printed with each start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))
from bench_load import PAGES, SCRIPT_ENDED, cpu_seconds, launcher_command, tree_cpu  # noqa: E402
from servers import CHROMIUM, CHROMIUM_ARGS, free_port, stop, wait_for_http  # noqa: E402

MARKS = ("healthy", "HTML received", "websocket open", "script started", "title drawn", "verdict drawn",
         "own result drawn")
VERDICT = PAGES["home"][1]
OWN_RESULT = "The numbers behind the verdict"
#: Marks taken in the page: the frame in which a text is first rendered (in ``innerText``, so displayed),
#: as the epoch milliseconds of the animation frame after the change.  Playwright's own waits poll at up
#: to 0.5 s intervals once a wait is long, which would add up to that much to a mark.
PAINTED = {"title drawn": "Did the intervention change", "verdict drawn": VERDICT, "own result drawn": OWN_RESULT}
OBSERVER = """
window.__painted = {};
const wanted = %s;
new MutationObserver(() => {
  const text = document.body ? document.body.innerText : '';
  for (const [name, needle] of Object.entries(wanted)) {
    if (!(name in window.__painted) && text.includes(needle)) {
      window.__painted[name] = null;
      requestAnimationFrame(() => { window.__painted[name] = performance.timeOrigin + performance.now(); });
    }
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


async def one_start(browser, app_dir: Path, *, timeout: float) -> dict[str, tuple[float, float, float]]:
    """Spawn ``app_dir``'s server, open its home page the moment it is healthy; each mark's (time, server CPU,
    browser CPU) after the spawn."""
    folder = Path(tempfile.mkdtemp(prefix="bench-first-"))
    port = free_port()
    command = [*launcher_command(app_dir), "--server.headless", "true", "--server.address", "127.0.0.1",
               "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    await page.add_init_script(OBSERVER % json.dumps(PAINTED))
    marks, me = {}, os.getpid()
    browser_cpu0 = tree_cpu(me, exclude=set())
    log = open(folder / "streamlit.log", "w")
    # PYTHONPATH: a baseline checkout runs its own packages, not the ones installed (editable) from this one.
    env = {**{name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"},
           "PYTHONUNBUFFERED": "1", "DBPA_STORE": str(folder / "store.sqlite"), "PYTHONPATH": str(app_dir)}
    spawned, spawned_epoch = time.perf_counter(), time.time()
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=app_dir, env=env)

    def mark(name: str) -> None:
        if name not in marks:
            marks[name] = (time.perf_counter() - spawned, cpu_seconds(process.pid),
                           tree_cpu(me, exclude={process.pid}) - browser_cpu0)

    def on_websocket(socket) -> None:
        if "_stcore/stream" in socket.url:
            mark("websocket open")
            socket.on("framereceived", lambda _: mark("script started"))

    try:
        await asyncio.to_thread(wait_for_http, f"http://127.0.0.1:{port}/_stcore/health", process, timeout,
                                folder / "streamlit.log", poll=0.02)
        mark("healthy")
        page.on("websocket", on_websocket)
        await page.goto(f"http://127.0.0.1:{port}/", wait_until="commit", timeout=timeout * 1000)
        mark("HTML received")
        for name in PAINTED:  # the CPU readings when Playwright sees it; the time from the page's own mark
            await page.wait_for_function(f"() => window.__painted[{json.dumps(name)}]", timeout=timeout * 1000)
            mark(name)
            painted = await page.evaluate(f"window.__painted[{json.dumps(name)}]")
            marks[name] = (painted / 1000 - spawned_epoch, *marks[name][1:])
        await page.wait_for_function(SCRIPT_ENDED, timeout=timeout * 1000)
    finally:
        await context.close()
        stop(process)
        log.close()
    errors = [line for line in (folder / "streamlit.log").read_text().splitlines()
              if "Traceback" in line or "Error" in line]
    if errors:
        raise RuntimeError(f"the server logged an error: {errors[0]}")
    return marks


def print_start(label: str, marks: dict, load: float) -> None:
    cells = "  ".join(f"{marks[name][0]:5.2f}" for name in MARKS)
    print(f"{label:<10} {cells}   | server CPU {marks['verdict drawn'][1]:4.2f} s, browser CPU "
          f"{marks['verdict drawn'][2]:4.2f} s to the verdict | load {load:4.1f}", flush=True)


def medians(starts: list[dict]) -> dict[str, float]:
    return {name: statistics.median(marks[name][0] for marks in starts) for name in MARKS}


async def main_async(args) -> None:
    from playwright.async_api import async_playwright

    checkouts = [("this", REPO)] + ([("baseline", Path(args.baseline).resolve())] if args.baseline else [])
    results = {label: [] for label, _ in checkouts}
    print(f"machine: {os.cpu_count()} cores; {args.starts} fresh starts per checkout"
          f"{', alternated' if args.baseline else ''}\n"
          f"{'':<10} " + "  ".join(f"{name.split()[0][:5]:>5}" for name in MARKS) + "   (s after the spawn)")
    for _, app_dir in checkouts:  # as `pip install` does: the packages' bytecode compiled once, at install
        subprocess.run([sys.executable, "-m", "compileall", "-q", "dbpa_app", "dbpa_core"], cwd=app_dir, check=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(args.starts):
            for label, app_dir in checkouts:
                load = os.getloadavg()[0]
                marks = await one_start(browser, app_dir, timeout=args.timeout)
                results[label].append(marks)
                print_start(label, marks, load)
        await browser.close()
    print("\nmedian over the starts (s after the spawn):")
    summary = {label: medians(starts) for label, starts in results.items()}
    for name in MARKS:
        row = f"  {name:<17}" + "".join(f"  {label} {summary[label][name]:5.2f}" for label in summary)
        if args.baseline:
            row += f"   ({summary['baseline'][name] / summary['this'][name]:4.2f}× sooner)"
        print(row)
    verdict = summary["this"]["verdict drawn"]
    print(f"first decision (this checkout): {verdict:.2f} s after `python -m dbpa_app` "
          f"(goal ≤ 2 s: {'met' if verdict <= 2 else 'NOT met'}); "
          f"{sum(m['verdict drawn'][0] <= 2 for m in results['this'])} of {args.starts} starts within 2 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=5, help="fresh server starts per checkout")
    parser.add_argument("--baseline", metavar="CHECKOUT", help="another checkout, started alternately")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a start may take to its result")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} not found: install Debian's chromium (scripts/install.sh)")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
