"""Browser test: the real app in headless Chromium, every page visited and photographed.

Screenshots go to test-artifacts/screenshots/ (kept as test artifacts, gitignored).  One pass over every page
(``test_no_clipped_text``, issue 46: it carries what test_every_page and test_audit_run_and_upload checked): each
page opened, then each of its main actions, drawn at 1280 px and photographed; the clipped-text guard (issue 29)
on every view at 1024, 1280 and 1600 px by resizing the same page, never reloading it (tests/clipping.js says what
counts).  Every wait is on a condition (a text, the app idle, the layout settled), never a fixed sleep.  The
"Across many prompts" page has its own test at the end (once tests/test_many_browser.py), on the same server.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from servers import CHROMIUM, CHROMIUM_ARGS, browser_app, chromium_browser, streamlit_app

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts" / "screenshots"
PAGES = [
    ("", "How it works", "Did the intervention change"),
    ("audit_one", "Audit one perturbation", "Audit one perturbation"),
    ("many_perturbations", "Many perturbations", "Many perturbations"),
    ("tpr_fpr", "TPR / FPR", "True and false positives"),
    ("alignment", "Alignment with a reference", "Alignment with a reference model"),
    ("byo_samples", "Bring your own samples", "Bring your own samples"),
    ("persona_study", "Persona study", "Persona study"),
    ("model_audit", "Is this the claimed model?", "Is this API the model it claims to be?"),
    ("stability", "Stability under shift", "Stability under distribution shift"),
]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with browser_app(tmp_path_factory.mktemp("streamlit")) as url:
        yield url


@pytest.fixture(scope="module")
def page():
    with chromium_browser() as browser:
        yield browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()


#: True once the page has been still for four polls in a row: no script running (the app's script state, as
#: Streamlit's own browser tests read it, and its status widget), every chart in view drawn (Plotly draws after
#: its script chunk loads) and every grid in view painted, and the sizes of the main block, its elements, charts
#: and grids unchanged (charts and grids re-lay out after a resize; a page draws its title before importing the
#: statistics stack).  The poll keeps its last reading on ``window``.
SETTLED_JS = """() => {
  const quiet = () => { window.__dbpaQuiet = 0; return false; };
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning') return quiet();
  if (document.querySelector('[data-testid="stStatusWidget"]')) return quiet();
  const visible = el => el.getClientRects().length > 0 && el.getBoundingClientRect().width > 0;
  for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]'))
    if (visible(chart) && !chart.querySelector('.main-svg')) return quiet();
  for (const grid of document.querySelectorAll('[data-testid="stDataFrame"]'))
    if (visible(grid) && !grid.querySelector('canvas')) return quiet();
  const boxes = document.querySelectorAll('[data-testid="stMainBlockContainer"], [data-testid="stElementContainer"], '
                                          + '.js-plotly-plot .main-svg, [data-testid="stDataFrame"] canvas');
  const reading = [innerWidth, innerHeight, ...[...boxes].map(el => {
    const box = el.getBoundingClientRect();
    return Math.round(box.width) + 'x' + Math.round(box.height);
  })].join(',');
  if (reading !== window.__dbpaLayout) { window.__dbpaLayout = reading; return quiet(); }
  window.__dbpaQuiet = (window.__dbpaQuiet || 0) + 1;
  return window.__dbpaQuiet >= 4;
}"""


def settle(page, timeout=240_000):
    """Until the page is idle and its layout still (:data:`SETTLED_JS`, polled every 150 ms)."""
    page.evaluate("() => { window.__dbpaQuiet = 0; window.__dbpaLayout = null; }")
    page.wait_for_function(SETTLED_JS, polling=150, timeout=timeout)


def wait_until_idle(page, timeout=240_000):
    """Streamlit shows a 'running' status widget while a script runs: until it has gone and the page is still
    (a rerun just asked for shows the widget only after a moment, so an instant's absence is not enough)."""
    settle(page, timeout)


def settled_count(locator, *, timeout_ms=120_000):
    """The number of elements once the page is still (:func:`settle`).

    Streamlit draws a page's later sections (the "What changed" charts) after the
    status widget has gone, so a count taken at once can miss them.
    """
    settle(locator.page, timeout_ms)
    return locator.count()


def assert_no_exception(page, name):
    assert page.locator("[data-testid='stException']").count() == 0, f"exception box on {name}"


def assert_screenshot(path: Path, width: int) -> None:
    """The picture was written just now, is a PNG of the page at ``width`` and is not blank."""
    from PIL import Image, ImageStat

    with Image.open(path) as image:
        assert image.format == "PNG" and image.width == width, (path.name, image.format, image.size)
        spread = ImageStat.Stat(image.convert("L")).stddev[0]
    assert spread > 5, f"{path.name} is blank"


def test_a_page_opened_first_by_its_url(tmp_path):
    """On a fresh server, a page's URL opened before any other shows that page with the app's sidebar,
    not a traceback (Streamlit would otherwise run it in its legacy pages/-folder mode, without app.py)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is not installed (scripts/install.sh installs it)")
        pytest.skip("chromium not installed")
    with sync_playwright() as playwright, streamlit_app(tmp_path) as url:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1024, "height": 900})
        page.goto(f"{url}/many_perturbations", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Many perturbations").first.wait_for(timeout=120_000)
        page.get_by_text("Sampler").first.wait_for(timeout=60_000)  # the app's own sidebar
        wait_until_idle(page)
        assert_no_exception(page, "many_perturbations opened by its URL")
        assert page.get_by_role("link", name="Audit one perturbation").count() >= 1  # the app's routing table
        browser.close()


def test_null_replay_stays_in_place(app_url, page):
    """Replaying the null animates the one chart: one section 02, no page jump."""
    page.set_viewport_size({"width": 1024, "height": 900})
    page.goto(f"{app_url}/", wait_until="domcontentloaded")
    page.get_by_text("REJECT H₀").first.wait_for(timeout=240_000)
    wait_until_idle(page)
    chart = page.locator("[data-testid='stPlotlyChart']").nth(1)
    chart.wait_for(timeout=60_000)
    charts_before = settled_count(page.locator("[data-testid='stPlotlyChart']"))
    chart.scroll_into_view_if_needed()  # so that the click below scrolls nothing by itself
    top_before = chart.bounding_box()["y"]
    chart.get_by_text("Watch the null build up").click()
    # mid-replay: the slider's counter has moved on from its start and not yet reached all B re-splits
    chart.get_by_text(re.compile(r"b = (?!800 )\d+ / 800")).first.wait_for(timeout=30_000)
    assert page.get_by_text("02 · Outputs and the permutation null").count() == 1
    assert page.locator("[data-testid='stPlotlyChart']").count() == charts_before
    assert abs(chart.bounding_box()["y"] - top_before) < 5
    chart.get_by_text("b = 800 / 800").first.wait_for(timeout=30_000)  # the replay ends on all B re-splits
    assert_no_exception(page, "home after replay")


def test_what_changed_panel(app_url, page):
    """The home page's "What changed" under the Earth → Mars result, photographed at 1024, 1280 and 1600 px:
    its readings, themes table, theme cloud and representative outputs."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{app_url}/", wait_until="domcontentloaded")
    page.get_by_text("What changed").first.wait_for(timeout=240_000)
    wait_until_idle(page)
    page.get_by_text("What changed: the themes that moved").first.click()  # a toggle: one click away (issue 45)
    page.locator(".st-key-home_what_changed").first.wait_for(timeout=240_000)
    wait_until_idle(page)
    page.locator(".st-key-home_pick_6 button").first.click()  # quick pick 6: Earth → Mars
    page.get_by_text(re.compile(r"Theme .* of perturbed outputs vs")).first.wait_for(timeout=120_000)
    wait_until_idle(page)
    panel = page.locator(".st-key-home_what_changed")
    for width in (1024, 1280, 1600):
        # Streamlit scrolls inside its main block: a tall viewport draws the whole panel for the picture.
        page.set_viewport_size({"width": width, "height": 5000})
        settle(page)
        panel.scroll_into_view_if_needed()
        panel.locator(".js-plotly-plot").nth(1).wait_for(timeout=60_000)
        settle(page)  # Plotly redraws at the new width
        shot = ARTIFACTS / f"what_changed_{width}.png"
        shot.unlink(missing_ok=True)
        panel.screenshot(path=str(shot))
        assert_no_exception(page, f"home What changed at {width} px")
    assert panel.get_by_text("significant (FDR 0.1)").count() >= 1  # the themes table's header


K_LIVE = 8  # outputs per arm of the live draw


def test_a_local_draw_streams_live_and_cancel_keeps_it(app_url, page):
    """Audit one perturbation on the local SmolLM2: the outputs appear as they arrive, in view in a 1280×900 window
    (photographed mid-stream), Cancel stops the draw and keeps what was drawn, and Run resumes from the store to
    the result."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{app_url}/audit_one", wait_until="domcontentloaded")
    page.get_by_role("button", name="Run the test").wait_for(timeout=240_000)
    wait_until_idle(page)
    page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").filter(has_text="Backend").click()
    page.get_by_role("option", name="Local SmolLM2-135M (CPU)").click()
    wait_until_idle(page)
    # Answers of varied length, so that the outputs of one batch end at different moments: the perturbed arm's
    # second output comes 0.6 s, its last 2.2 s after the arm starts on the idle machine (seeded, so always alike),
    # and the view with the null (both arms at two or more) stays on screen that long at least.
    page.get_by_text("Type both prompts", exact=True).click()
    wait_until_idle(page)
    for label, prompt in (("Original prompt x₀", "Name one fruit. Answer in a few words."),
                          ("Perturbed prompt x₁", "Name one red fruit, in a word or in a paragraph.")):
        page.get_by_label(label).fill(prompt)
        page.get_by_label(label).press("Control+Enter")
        wait_until_idle(page)
    page.get_by_label("Samples per arm k").fill(str(K_LIVE))
    page.get_by_label("Samples per arm k").press("Enter")
    wait_until_idle(page)
    page.get_by_role("button", name="Run the test").click()
    # Mid-stream: some outputs are in, not all, with the clouds, the null and P0/P1 (both arms have two).
    seen, deadline = [], time.monotonic() + 600
    while True:
        headers = page.get_by_text(re.compile(r"^Live: \d+ of")).all_inner_texts()
        counts = [tuple(int(n) for n in re.findall(rf"(\d+) of {K_LIVE}", h)[:2]) for h in headers]
        seen += [c for c in counts if c not in seen]
        plots = page.locator("[class*='st-key-live_'] .js-plotly-plot").count()
        # (On an idle machine the perturbed arm's first outputs come in seconds; on a loaded one, minutes.)
        if any(min(n0, n1) >= 2 and n0 + n1 < 2 * K_LIVE for n0, n1 in counts) and plots >= 3:
            drawn = max(n0 + n1 for n0, n1 in counts)
            break
        if time.monotonic() > deadline or page.get_by_text("Decision").count():
            page.screenshot(path=str(ARTIFACTS / "audit_one_live_missed.png"))
            pytest.fail(f"no mid-stream view with its charts; live counts seen: {seen}")
        page.wait_for_timeout(100)
    shot = ARTIFACTS / "audit_one_live_1280x900.png"
    shot.unlink(missing_ok=True)
    page.screenshot(path=str(shot))  # the window, not the page: what a user sees while it moves
    assert_screenshot(shot, 1280)
    assert_no_exception(page, "audit_one mid-stream")
    # Cancel, the bar, the counter and the three live charts are all in the window
    for element in [page.get_by_role("button", name="Cancel"), page.locator("[data-testid='stProgress']"),
                    page.get_by_text(re.compile(r"^Live:")).first,
                    *page.locator("[class*='st-key-live_'] .js-plotly-plot").all()]:
        box = element.bounding_box()
        assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= 900, box
    page.get_by_role("button", name="Cancel").click()
    notice = page.get_by_text(re.compile(r"stopped before it finished\. \d+ outputs sampled in it are in the store"))
    notice.wait_for(timeout=120_000)
    assert int(re.search(r"(\d+) outputs sampled", notice.inner_text()).group(1)) >= drawn
    wait_until_idle(page)
    page.get_by_role("button", name="Run the test").click()  # resumes from the store
    page.get_by_text("Decision").first.wait_for(timeout=600_000)
    wait_until_idle(page)
    assert_no_exception(page, "audit_one after the resumed draw")
    assert page.get_by_text(re.compile(r"^Live:")).count() == 0
    # the next tests run on the default backend
    page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").filter(has_text="Backend").click()
    page.get_by_role("option", name="Simulated (instant, known truth)").click()
    wait_until_idle(page)
    page.set_viewport_size({"width": 1400, "height": 1000})


# --------------------------------------------------------------------------- the clipped-text guard (issue 29)
CLIPPING_JS = (Path(__file__).parent / "clipping.js").read_text()
WIDTHS = (1024, 1280, 1600)


def wait_for_results(page, timeout=300_000):
    """Until the script is idle and no run is in flight (runs sample in a thread with a progress bar and a
    Cancel button while the script waits)."""
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stProgress\"]') && ![...document.querySelectorAll("
        "'button')].some(b => b.innerText.trim() === 'Cancel') && "
        "!document.querySelector('[data-testid=\"stStatusWidget\"]') && "
        "!document.querySelector('[data-testid=\"stSpinner\"]')", timeout=timeout)
    wait_until_idle(page, timeout)


def click(name: str, ready: str):
    """A view reached by pressing the button ``name`` (the page's main action); it is there once the text
    ``ready`` is shown and the run is over (a run samples in a thread while the script waits, so an idle
    status alone can come before the run has even started)."""
    def action(page, tmp_path):
        page.get_by_role("button", name=name, exact=True).first.click()
        page.get_by_text(ready).first.wait_for(timeout=300_000)
        wait_for_results(page)
    return action


def choose(label: str, ready: str):
    """A view reached by picking the radio option whose label starts with ``label``, there once ``ready`` shows."""
    def action(page, tmp_path):
        page.locator("[role='radiogroup'] label").filter(has_text=label).first.click()
        page.get_by_text(ready).first.wait_for(timeout=300_000)
        wait_for_results(page)
    return action


def backend(name: str):
    """A view reached by choosing the sampler backend ``name`` in the sidebar (a live run needs one that answers)."""
    def action(page, tmp_path):
        page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name=name).click()
        wait_until_idle(page)
    return action


def then(*actions):
    def action(page, tmp_path):
        for step in actions:
            step(page, tmp_path)
    return action


def upload_samples(page, tmp_path):
    """A class's file, its perturbed outputs holding HTML (``<b>Why</b>``: shown as text, never a traceback)."""
    rows = [{"arm": "original", "text": f"Stop smoking and take a statin, option {i}."} for i in range(12)]
    rows += [{"arm": "perturbed", "text": f"<b>Why</b> did the statin cross the road? Joke {i}."} for i in range(12)]
    upload = tmp_path / "samples.jsonl"
    upload.write_text("\n".join(json.dumps(r) for r in rows))
    page.locator("input[type='file']").set_input_files(str(upload))
    page.get_by_role("button", name="Run the test").wait_for(timeout=60_000)
    wait_until_idle(page)


def upload_bad_file(page, tmp_path):
    """A CSV whose third row has no arm: the page names the row and the column."""
    bad = tmp_path / "bad.csv"
    bad.write_text("arm,text\noriginal,fine\n,no arm here\n")
    page.locator("input[type='file']").set_input_files(str(bad))
    page.get_by_text("row 3: column").first.wait_for(timeout=60_000)
    wait_until_idle(page)


def charts(n: int, *also: str):
    """The view's first ``n`` Plotly charts are drawn (Plotly draws after its script chunk loads, asynchronously)
    and each text of ``also`` is shown; then the page settles."""
    def action(page, tmp_path):
        page.locator(".js-plotly-plot").nth(n - 1).wait_for(timeout=60_000)
        assert page.locator(".js-plotly-plot").count() >= n
        for text in also:
            page.get_by_text(text).first.wait_for(timeout=120_000)
        settle(page)
    return action


def enter(label: str, value: int):
    """The number box ``label`` set to ``value`` (typed, applied with Enter: the page reruns) before the main
    action: a smaller run that draws the same charts, tables and notes.  Its numbers are the AppTest suite's
    to check (tests/test_app.py); this pass checks what is drawn and whether its text fits."""
    def action(page, tmp_path):
        box = page.get_by_label(label, exact=True)
        box.fill(str(value))
        box.press("Enter")
        wait_until_idle(page)
        assert box.input_value() == str(value), (label, box.input_value())
    return action


def shown(ready: str):
    """The view a page opens on, there once the text ``ready`` is shown and nothing runs."""
    def action(page, tmp_path):
        page.get_by_text(ready).first.wait_for(timeout=300_000)
        wait_for_results(page)
    return action


#: Per page, the views a user reaches by its main actions: (view name, how to get there from the previous view;
#: each ends once the page has settled).  The first view of each page is the page as it opens (``open`` where
#: the page's main action comes next).  A live run is sized down where its cost grows with k (the outputs it
#: embeds) and a smaller k draws the same elements; what a smaller run still shows, measured with the default's
#: (issue 46): TPR / FPR at k = 3 its best-model banner, the ROC chart, the table and the downloads (and the
#: warning about AUCs near 0.5 besides); persona study at k = 10 the grid with its longest cell text, a three-star
#: one (p < 0.001 needs the default B = 1000); many perturbations at k = 15 the card of a target detected (two targets
#: rejected, stars as the default's) and of a control beside it; the planner for m = 1 its curve and reading.
VIEWS = {
    # the decision, the clouds and the null histogram are drawn (what test_every_page meant to check: its block
    # stood after its loop over the pages, so it ran on the last page, never on the home page)
    "": [("first", then(shown("03 · A family of perturbations"), charts(2, "REJECT H₀")))],
    "audit_one": [("open", shown("Run the test")),
                  # the clouds, the null histogram and the similarity histograms (test_audit_run_and_upload)
                  ("run", then(click("Run the test", "Download result (JSON)"), charts(3, "Decision")))],
    "many_perturbations": [("open", shown("Run the family")),
                           ("run", then(enter("Samples per arm k", 15),
                                        click("Run the family", "Download table (CSV)"))),
                           ("planner", then(enter("Perturbations m", 1),
                                            click("Check by simulation", "Each point is the share")))],
    "tpr_fpr": [("paper", shown("no one on this project wrote")),
                ("recorded", choose("Recorded: local models", "Agreement with the paper")),
                ("live", then(choose("Sample now", "Run"), enter("Samples per arm k", 3),
                              click("Run", "Download table (CSV)")))],
    "alignment": [("paper", shown("Results for:")),
                  ("live", then(choose("Sample now", "Compare"), click("Compare", "Download table (CSV)")))],
    "byo_samples": [("open", shown("Bring your own samples")),
                    ("run", then(upload_samples, click("Run the test", "Download result (JSON)"),
                                 charts(1, "REJECT H₀"))),
                    ("bad file", upload_bad_file)],
    "persona_study": [("paper", shown("Results for:")),
                      ("live", then(choose("Sample now", "Run the study"), enter("Samples per arm k", 10),
                                    click("Run the study", "Darker cells")))],
    "reproduce": [("table2", shown("Results for:")), ("fig1", choose("Figs 1", "Results for: Figs 1")),
                  ("fig3", choose("Fig 3", "Results for: Fig 3")), ("appendix", choose("Appendix", "C.3 ·"))],
    "model_audit": [("audit", shown("Decision")), ("paper", choose("The paper's experiments", "Highest power AUC"))],
    # the live run's form, up to its selectboxes (their chosen values were cut at 1024 and 1280 px)
    "stability": [("first", shown("of 200 resamples")),
                  ("live", then(backend("Local SmolLM2-135M (CPU)"), choose("Live run", "Items"),
                                choose("The shipped items", "Rewrites proposed by")))],
}
HEADINGS = {slug: heading for slug, _, heading in PAGES} | {"reproduce": "Reproduce the paper"}


def clipped_text(page) -> list[dict]:
    """Every cut-off text on the page now (tests/clipping.js)."""
    return page.evaluate(CLIPPING_JS)


def clipped_at_every_width(page, view: str, name: str, *, photograph_all: bool = True) -> list[str]:
    """The clipped texts of the view on screen at each width of :data:`CHECK_ORDER` (the page re-laid out after
    each resize), photographed at every width (else only at :data:`PASS_WIDTH`) as ``name``_WIDTH.png."""
    problems = []
    for width in CHECK_ORDER:
        if page.viewport_size != {"width": width, "height": 900}:
            page.set_viewport_size({"width": width, "height": 900})
            settle(page)  # charts and grids re-lay out on resize
        problems += [f"{view} @ {width}px · {p['kind']}: {p['text']!r} (needs {p['need']} px, has {p['have']})"
                     for p in clipped_text(page)]
        if photograph_all or width == PASS_WIDTH:
            photograph(page, ARTIFACTS / f"{name}_{width}.png", width)
    return problems


def photograph(page, path: Path, width: int) -> None:
    """The whole page at ``width``: Streamlit scrolls inside its main block, so the viewport is made as
    tall as that block first (and put back afterwards)."""
    height = page.evaluate("document.querySelector('[data-testid=\"stMainBlockContainer\"]')"
                           ".getBoundingClientRect().height + 200")
    before = page.viewport_size
    page.set_viewport_size({"width": width, "height": int(max(900, height))})
    settle(page)
    path.unlink(missing_ok=True)  # an earlier run's picture must not pass for this one
    page.screenshot(path=str(path), full_page=True)
    assert_screenshot(path, width)
    page.set_viewport_size(before)


#: The width of the one pass (each view is reached, checked and photographed there); the clipped-text guard
#: runs at every width of WIDTHS on the same page, resized: first at this one, where the view was drawn (no
#: resize), then at the others.  The page as it opens is photographed at each width.
PASS_WIDTH = 1280
CHECK_ORDER = (PASS_WIDTH, *(width for width in WIDTHS if width != PASS_WIDTH))


@pytest.mark.parametrize("slug", list(VIEWS), ids=[slug or "home" for slug in VIEWS])
def test_no_clipped_text(app_url, page, slug, tmp_path):
    """Every page as it opens and after each of its main actions: drawn without an exception, photographed (the
    opened page at 1024, 1280 and 1600 px, each later view at 1280 px) into test-artifacts/screenshots/, and at
    1024, 1280 and 1600 px no text is cut off (ellipsis, metric values, tabs, select values, table and dataframe
    cells, chart text).  One browser session: the widths are reached by resizing the page, not reloading it."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": PASS_WIDTH, "height": 900})
    page.goto(f"{app_url}/{slug}", wait_until="domcontentloaded")
    page.get_by_role("heading", name=HEADINGS[slug]).first.wait_for(timeout=240_000)
    problems = []  # (the first view's action waits until the page is idle and settled)
    for number, (view, action) in enumerate(VIEWS[slug]):
        page.set_viewport_size({"width": PASS_WIDTH, "height": 900})
        action(page, tmp_path)  # it ends on a settled page
        assert_no_exception(page, f"{slug or 'home'} {view}")
        problems += clipped_at_every_width(page, view, f"{slug or 'home'}_{view}", photograph_all=number == 0)
        assert_no_exception(page, f"{slug or 'home'} {view} after resizing")
    assert not problems, f"clipped text on {slug or 'home'}:\n" + "\n".join(problems)


def test_many_prompts_run_has_no_clipped_text(app_url, page):
    """The "Across many prompts" page after its two main actions (the shipped example run, then the planner from
    it as a pilot): no exception, the six small multiples drawn, and at 1024, 1280 and 1600 px no text cut off;
    each view photographed at every width.  (Once tests/test_many_browser.py: here it shares this file's server,
    warm from the pages above, instead of starting its own.)"""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{app_url}/many_prompts", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Across many prompts").first.wait_for(timeout=240_000)
    wait_until_idle(page)
    click("Run the test", "Download result (JSON)")(page, None)
    page.get_by_text("Each panel is one of the 6 most changed prompts").first.wait_for(timeout=60_000)
    settle(page)  # Plotly draws asynchronously: until every chart in view is drawn
    assert_no_exception(page, "many_prompts run")
    # The six panels' titles are drawn (subplot titles are SVG annotations).
    assert page.locator(".js-plotly-plot .annotation-text").count() >= 6
    problems = []
    for view in ("run", "plan"):
        if view == "plan":  # the second action: the planner across prompts, from this run as a pilot
            page.set_viewport_size({"width": 1280, "height": 900})
            click("Plan by simulation", "Smallest k per number of prompts")(page, None)
            assert_no_exception(page, "many_prompts plan")
        problems += clipped_at_every_width(page, view, f"many_prompts_{view}")
    assert not problems, "clipped text on many_prompts:\n" + "\n".join(problems)


#: What the Stability page's first screen at 1280×900 must hold: the verdict of both tasks, down to the last task's
#: numbers, under a short intro (issue 45: "no result on the first screen").
STABILITY_FIRST_SCREEN_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
  if (main) main.scrollTop = 0;
  const blocks = [...document.querySelectorAll('[data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"]')];
  const verdicts = blocks.filter(b => b.innerText.includes('is the most stable'));
  const kept = blocks.filter(b => b.innerText.trim().startsWith('R, most stable first'));
  const title = document.querySelector('h1');
  const intro = blocks.find(b => b.innerText.trim().startsWith('How costly a change'));
  return {verdicts: verdicts.map(b => b.getBoundingClientRect().top),
          kept: kept.map(b => b.getBoundingClientRect().bottom),
          title: title ? title.getBoundingClientRect().top : null,
          intro: intro ? intro.innerText.split(/\\s+/).length : null};
}"""


def test_the_stability_verdict_is_on_the_first_screen(app_url, page):
    """The recorded study's verdict, both tasks and how sure, is on the Stability page's first screen at 1280×900,
    after an intro of at most 60 words.  (Once tests/test_stability_browser.py, with a server of its own.)"""
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{app_url}/stability", wait_until="domcontentloaded")
    page.get_by_text("of 200 resamples").first.wait_for(timeout=240_000)
    settle(page)  # the tables and charts below lay out; the verdict must not move down
    found = page.evaluate(STABILITY_FIRST_SCREEN_JS)
    assert found["intro"] is not None and found["intro"] <= 60, found
    assert len(found["verdicts"]) == 2 and len(found["kept"]) == 2, found
    assert max(found["kept"]) <= 900, f"the verdict ends {max(found['kept']):.0f} px down, below the first screen"
