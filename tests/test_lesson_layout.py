"""The home page as a lesson (issue 45), measured in real Chromium on a fresh server.

At 1280×900, the default view must show the verdict on the first screen, be at
most four screens tall and hold at most 700 visible words outside code; the
verdict strip stays in sight while the page scrolls; presentation mode
(``?present=1``) collapses the sidebar and enlarges the type (photographed);
the page shows no clipped text at 1024, 1280 and 1600 px (tests/clipping.js).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from servers import browser_app, chromium_browser

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "screenshots"
CLIPPING_JS = (Path(__file__).parent / "clipping.js").read_text()
WIDTH, HEIGHT = 1280, 900
MAX_SCREENS, MAX_WORDS = 4, 700

#: The page's height, its visible words outside code and the verdict strip's box, as a reader sees them:
#: text inside collapsed expanders (not displayed), code blocks, the sidebar and the charts' SVG (axis ticks,
#: slider steps, legends: Plotly keeps hidden copies too) is not counted; numbers in the text and tables are.
MEASURE_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  let words = 0;
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!el || el.closest('pre, code, [data-testid="stCode"], .js-plotly-plot')) continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    // Not shown: display none, hidden, transparent, or inside a collapsed expander (a closed <details> keeps its
    // content laid out, with a size, but not rendered).
    if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
    words += (node.textContent.match(/[\\p{L}\\p{N}]\\S*/gu) || []).length;
  }
  const verdict = document.querySelector('.dbpa-verdict');
  const box = verdict ? verdict.getBoundingClientRect() : null;
  return {height: main.scrollHeight, words, verdict: box && {top: box.top, bottom: box.bottom},
          text: verdict ? verdict.innerText : ''};
}"""


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with browser_app(tmp_path_factory.mktemp("lesson")) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


def open_home(browser, url: str, width: int = WIDTH):
    page = browser.new_page(viewport={"width": width, "height": HEIGHT})
    page.goto(url, wait_until="domcontentloaded")
    page.locator(".dbpa-verdict").first.wait_for(timeout=240_000)
    page.get_by_text("03 · A family of perturbations").first.wait_for(timeout=240_000)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=240_000)
    page.get_by_text("04 · The method").first.wait_for(timeout=240_000)
    # Streamlit draws the page's later parts (charts, table) after the status widget goes: wait until the
    # height has not changed for two seconds.
    last, quiet = -1, 0
    for _ in range(240):
        page.wait_for_timeout(250)
        height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
        quiet = quiet + 250 if height == last else 0
        last = height
        if quiet >= 2000:
            break
    return page


def test_the_default_view_fits_the_room(app_url, browser):
    """Verdict on the first screen, ≤ 4 screens tall, ≤ 700 visible words; the verdict stays in sight."""
    page = open_home(browser, f"{app_url}/")
    shown = page.evaluate(MEASURE_JS)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "home_lesson_1280.png"))
    print(f"home at {WIDTH}x{HEIGHT}: {shown['height']} px tall ({shown['height'] / HEIGHT:.2f} screens), "
          f"{shown['words']} words, verdict at {shown['verdict']}")
    assert shown["verdict"] and 0 <= shown["verdict"]["top"] and shown["verdict"]["bottom"] <= HEIGHT, shown
    assert shown["height"] <= MAX_SCREENS * HEIGHT, shown
    assert shown["words"] <= MAX_WORDS, shown
    # The plain verdict is the headline, the technical label beside it, smaller; never a negative effect.
    assert "No change detected (this does not prove there is none)" in shown["text"] or \
        "Changed the answers" in shown["text"]
    assert "REJECT H₀ at α = 0.05" in shown["text"] and "effect: " in shown["text"]
    assert "effect: −" not in shown["text"] and "effect: -" not in shown["text"]
    # Sticky: scrolled two screens down, the strip is still at the top of the window.
    page.evaluate("() => { document.querySelector('[data-testid=\"stMain\"]').scrollTop = 1800; }")
    page.wait_for_timeout(500)
    top = page.evaluate("() => document.querySelector('.dbpa-verdict').getBoundingClientRect().top")
    assert 0 <= top <= 150, f"the verdict strip scrolled away (top {top} px)"
    # A local favicon: nothing fetched from the internet for the tab's icon (it failed offline).
    icons = page.evaluate("() => [...document.querySelectorAll('link[rel~=\"icon\"]')].map(l => l.href)")
    assert icons and all(icon.startswith(app_url) or icon.startswith("data:") for icon in icons), icons
    page.close()


def test_presentation_mode(app_url, browser):
    """?present=1: the sidebar collapsed, larger type, captions not grey-on-white; photographed."""
    page = open_home(browser, f"{app_url}/?present=1")
    size = page.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert size >= 18, size
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert sidebar.get_attribute("data-collapsed") == "true"
    caption = page.locator('[data-testid="stCaptionContainer"]').first
    colour = caption.evaluate("el => getComputedStyle(el.querySelector('p') || el).color")
    assert colour in ("rgb(38, 39, 48)",), colour  # dark, not the 60 %-grey that washed out on a projector
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "home_present_1280.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000  # a page, not a blank frame
    # The guard reads the main area only: the collapsed sidebar keeps its widgets at zero width, not cut text.
    page.evaluate("() => document.querySelector('[data-testid=\"stSidebar\"]').setAttribute('data-testid', 'x')")
    assert not page.evaluate(CLIPPING_JS)
    page.close()


@pytest.mark.parametrize("width", [1024, 1280, 1600])
def test_no_clipped_text_on_the_lesson(app_url, browser, width):
    page = open_home(browser, f"{app_url}/", width=width)
    clipped = page.evaluate(CLIPPING_JS)
    page.close()
    assert not clipped, clipped


def test_stream_redraws_the_strip_in_place(app_url, browser):
    """Stream replays the evidence: the sticky strip shows each partial result, marked, then the final one."""
    page = open_home(browser, f"{app_url}/")
    final = page.locator(".st-key-verdict").inner_text()
    page.get_by_role("button", name="Stream").first.click()
    page.locator(".st-key-verdict").get_by_text("Streaming:").first.wait_for(timeout=60_000)
    page.wait_for_function("(final) => document.querySelector('.st-key-verdict').innerText === final", arg=final,
                           timeout=120_000)
    assert page.locator(".dbpa-verdict").count() == 1
    assert not page.get_by_text("unexpected error").count() and not page.locator('[data-testid="stException"]').count()
    page.close()
