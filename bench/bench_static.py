"""What a first visit asks the server for, and what each kind of request costs its CPU (issue 45).

    python bench/bench_static.py                      # this checkout: counts, bytes, server CPU per kind
    python bench/bench_static.py --visits 3 --profile /tmp/visit.txt   # and py-spy's stacks during 3 first visits
    python bench/bench_static.py --checkout /tmp/base # another checkout (e.g. ``git archive main``)

Starts the app the documented way (``python -m dbpa_app``, fresh store, 127.0.0.1), lets one session compute
the home page and the server finish its background work (MiniLM), then opens the home page in ``--visits``
fresh browser contexts (first visits: empty caches), one after the other.  For each visit it records every
request Chromium makes (Playwright's ``requestfinished``) and the websocket's frames, grouped by kind
(JS chunks, CSS, fonts, other static media, the HTML, health / host-config polls, the app's own media,
the websocket), with the bytes received, and the server's CPU seconds for the whole visit (/proc).

Then it replays the visit's HTTP requests (one keep-alive connection, no browser, same headers) and reads the
server's CPU per kind again: that is what serving those files costs, with the script run and the websocket
left out.  ``--profile FILE`` runs py-spy on the server during the browser visits (raw collapsed stacks).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import http.client
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from bench_load import cpu_seconds, wait_until_quiet  # noqa: E402
from servers import CHROMIUM, CHROMIUM_ARGS, free_port, serve  # noqa: E402

READY = "REJECT H₀"  # the home page's decision box ("REJECT H₀" or "FAIL TO REJECT H₀")
PY_SPY = os.environ.get("PY_SPY", "/work/main/.venv/bin/py-spy")


def kind(url: str) -> str:
    """The kind of one request, from its path."""
    path = urlsplit(url).path
    if path.startswith("/static/js/"):
        return "JS chunk"
    if path.startswith("/static/css/"):
        return "CSS"
    if path.startswith("/static/media/"):
        return "font" if path.endswith((".woff2", ".woff", ".ttf")) else "static media"
    if path.startswith("/_stcore/health") or path.startswith("/_stcore/host-config"):
        return "health/host-config"
    if path.startswith("/_stcore/stream"):
        return "websocket"
    if path.startswith("/media/"):
        return "app media"
    if path.startswith("/component/") or path.startswith("/_stcore/bidi"):
        return "component"
    if path.endswith((".png", ".ico", ".svg")):
        return "favicon/icon"
    return "HTML/other"


async def first_visit(browser, url: str, timeout_ms: int, server: int):
    """One fresh context on ``url``: its requests (url, kind, bytes, headers), websocket bytes, server CPU."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    requests, frames = [], collections.Counter()

    async def finished(request):
        try:
            sizes = await request.sizes()
        except Exception:  # noqa: BLE001 - a request whose page went away: no sizes
            sizes = {"responseBodySize": 0, "responseHeadersSize": 0}
        requests.append((request.url, kind(request.url), sizes["responseBodySize"],
                         sizes["responseHeadersSize"], await request.all_headers()))

    page.on("requestfinished", lambda request: asyncio.ensure_future(finished(request)))

    def on_socket(socket):
        socket.on("framereceived", lambda payload: frames.update(received=len(payload), frames_in=1))
        socket.on("framesent", lambda payload: frames.update(sent=len(payload), frames_out=1))

    page.on("websocket", on_socket)
    before = cpu_seconds(server)
    started = time.perf_counter()
    await page.goto(url, wait_until="commit", timeout=timeout_ms)
    await page.get_by_text(READY).first.wait_for(timeout=timeout_ms)
    elapsed = time.perf_counter() - started
    await page.wait_for_timeout(1500)  # what the page still fetches once the result is drawn
    cpu = cpu_seconds(server) - before
    await context.close()
    return requests, frames, cpu, elapsed


#: Where a sampled stack is: the first of these found in it (every request's stack passes through the
#: middleware, so the specific parts come first).
PARTS = [("the script run (ScriptRunner thread)", "script_runner.py"),
         ("websocket messages", "websocket"),
         ("Streamlit's static files (starlette staticfiles/FileResponse)", "staticfiles.py"),
         ("Streamlit's static files (starlette staticfiles/FileResponse)", "responses.py"),
         ("frontend files from memory (static_cache.py)", "static_cache.py"),
         ("HTTP parsing (uvicorn h11)", "h11"),
         ("middleware and routing", "starlette/middleware"),
         ("middleware and routing", "routing.py"),
         ("worker threads (anyio)", "anyio/_backends"),
         ("asyncio event loop, other", "asyncio/")]


def summarize(profile: Path) -> None:
    """py-spy's raw stacks by part of the server, as shares of the samples in which it was running."""
    parts, total = collections.Counter(), 0
    for line in profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        parts[next((name for name, key in PARTS if key in stack), "other")] += int(count)
    print(f"\npy-spy: {total} samples of the server running (250 per second) during the visits")
    for name, count in parts.most_common():
        print(f"  {name:>62}: {count / max(total, 1):6.1%}")


def replay(port: int, requests, server: int) -> dict[str, tuple[int, float]]:
    """Ask for the same HTTP resources again on one keep-alive connection: server CPU per kind."""
    by_kind: dict[str, list] = collections.defaultdict(list)
    for url, what, _, _, headers in requests:
        if what != "websocket":
            by_kind[what].append((url, headers))
    out = {}
    for what, items in by_kind.items():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        before = cpu_seconds(server)
        for url, headers in items:
            parts = urlsplit(url)
            sent = {name: value for name, value in headers.items() if not name.startswith(":")
                    and name.lower() not in ("if-none-match", "if-modified-since", "cookie")}
            connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=sent)
            connection.getresponse().read()
        out[what] = (len(items), cpu_seconds(server) - before)
        connection.close()
    return out


async def run(args) -> None:
    from playwright.async_api import async_playwright

    checkout = Path(args.checkout).resolve()
    folder = Path(tempfile.mkdtemp(prefix="bench-static-"))
    port = free_port()
    command = [sys.executable, "-m", "dbpa_app", "--server.headless", "true", "--server.address", "127.0.0.1",
               "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    env = {"DBPA_STORE": str(folder / "store.sqlite"), "PYTHONPATH": str(checkout)}
    base = f"http://127.0.0.1:{port}"
    print(f"== {checkout}: load average {os.getloadavg()[0]:.1f} (1 min)")
    with serve(command, f"{base}/_stcore/health", folder / "streamlit.log", env=env, cwd=checkout,
               timeout=180) as process:
        server = process.pid
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            await first_visit(browser, base + "/", args.timeout * 1000, server)  # the view computed once
            wait_until_quiet(server, window=5.0)  # and MiniLM loaded in the background
            spy = None
            if args.profile:
                spy = subprocess.Popen([PY_SPY, "record", "-p", str(server), "-r", "250", "-f", "raw",
                                        "-o", args.profile, "--nonblocking"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            visits = []
            for _ in range(args.visits):
                wait_until_quiet(server)
                visits.append(await first_visit(browser, base + "/", args.timeout * 1000, server))
            if spy is not None:
                spy.send_signal(2)
                spy.wait(timeout=60)
            await browser.close()
        wait_until_quiet(server)
        replayed = [replay(port, requests, server) for requests, *_ in visits[:2]]
    for number, (requests, frames, cpu, elapsed) in enumerate(visits, 1):
        counts, sizes = collections.Counter(), collections.Counter()
        for _, what, body, head, _ in requests:
            counts[what] += 1
            sizes[what] += max(body, 0) + max(head, 0)
        print(f"\nvisit {number}: first result {elapsed:.2f} s, server CPU {cpu:.3f} s for the whole visit; "
              f"{sum(counts.values())} requests, {sum(sizes.values()) / 1e6:.2f} MB; websocket "
              f"{frames['frames_in']} frames in ({frames['received'] / 1e6:.2f} MB), {frames['frames_out']} out")
        for what in sorted(counts, key=lambda w: -counts[w]):
            print(f"  {what:>20}: {counts[what]:4d} requests {sizes[what] / 1e6:7.2f} MB")
    for number, replayed_kinds in enumerate(replayed, 1):
        total_n = sum(n for n, _ in replayed_kinds.values())
        total_cpu = sum(c for _, c in replayed_kinds.values())
        print(f"\nreplay {number} (HTTP only, no browser): {total_n} requests, server CPU {total_cpu:.3f} s "
              f"({1000 * total_cpu / max(total_n, 1):.2f} ms per request)")
        for what, (n, cpu) in sorted(replayed_kinds.items(), key=lambda item: -item[1][1]):
            print(f"  {what:>20}: {n:4d} requests {cpu:6.3f} s")
    if args.profile:
        summarize(Path(args.profile))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", default=str(REPO), help="the checkout whose app to start (default: this one)")
    parser.add_argument("--visits", type=int, default=2, help="fresh first visits, one after the other")
    parser.add_argument("--profile", metavar="FILE", help="py-spy's raw stacks of the server during the visits")
    parser.add_argument("--timeout", type=int, default=300, help="seconds a visit may wait for its result")
    args = parser.parse_args()
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
