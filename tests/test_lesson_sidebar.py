"""The sidebar's Backend box once Recorded is chosen, in real Chromium at 1024, 1280 and 1600 px (issue 45: its
value was cut with an ellipsis).  The clipping guard is tests/clipping.js, read on the sidebar's text."""

from __future__ import annotations

from pathlib import Path

import pytest

from servers import browser_app, chromium_browser

CLIPPING_JS = (Path(__file__).parent / "clipping.js").read_text()


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with browser_app(tmp_path_factory.mktemp("sidebar")) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


@pytest.mark.parametrize("width", [1024, 1280, 1600])
def test_backend_box_is_not_cut_once_recorded_is_chosen(app_url, browser, width):
    from dbpa_app.ui.settings import BACKEND_LABELS

    page = browser.new_page(viewport={"width": width, "height": 900})
    # Reproduce the paper: a page that draws no sample, so choosing Recorded reruns it at once.
    page.goto(f"{app_url}/reproduce", wait_until="domcontentloaded")
    sidebar = page.locator('[data-testid="stSidebar"]')
    backend = sidebar.locator('[data-testid="stSelectbox"]').filter(has_text="Backend").first
    backend.wait_for(timeout=240_000)
    backend.click()
    page.get_by_role("option", name=BACKEND_LABELS["recorded"]).click()
    sidebar.get_by_text("Recorded answers replay as they were generated").first.wait_for(timeout=120_000)
    page.wait_for_timeout(500)
    # The select's value is drawn in an input (its text is not in innerText): its label is matched by name.
    shown = sidebar.inner_text() + "\n" + BACKEND_LABELS["recorded"]
    clipped = [c for c in page.evaluate(CLIPPING_JS) if c["text"] and c["text"] in shown]
    page.close()
    assert not clipped, clipped
