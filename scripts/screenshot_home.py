"""Take the README's screenshot of the home page (docs/images/home.png) from a fresh server on this checkout.

    python scripts/screenshot_home.py

Starts the packaged app headless on 127.0.0.1 (a free port, a temporary sample store), waits for the first
verdict, and saves the first screen at 1280×800 with Debian's Chromium (tests/servers.py).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from servers import CHROMIUM, CHROMIUM_ARGS, streamlit_app  # noqa: E402


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder, streamlit_app(Path(folder)) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.get_by_text("REJECT H₀", exact=False).first.wait_for(timeout=180_000)
        page.wait_for_timeout(1500)  # the charts finish drawing
        out = REPO / "docs" / "images" / "home.png"
        page.screenshot(path=str(out))
        browser.close()
    print(f"{out} ({out.stat().st_size // 1024} kB)")


if __name__ == "__main__":
    main()
