"""Browser test: the real app in headless Chromium, every page visited and photographed.

Screenshots go to test-artifacts/screenshots/ (kept as test artifacts).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from servers import CHROMIUM, CHROMIUM_ARGS, streamlit_app

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
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is not installed (scripts/install.sh installs it)")
        pytest.skip("chromium not installed")
    with streamlit_app(tmp_path_factory.mktemp("streamlit")) as url:
        yield url


@pytest.fixture(scope="module")
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        yield context.new_page()
        browser.close()


def wait_until_idle(page, timeout=240_000):
    """Streamlit shows a 'running' status widget while a script runs."""
    page.wait_for_timeout(500)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)


def assert_no_exception(page, name):
    assert page.locator("[data-testid='stException']").count() == 0, f"exception box on {name}"


def test_every_page(app_url, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for slug, link, heading in PAGES:
        page.goto(f"{app_url}/{slug}", wait_until="domcontentloaded")
        page.get_by_role("heading", name=heading).first.wait_for(timeout=240_000)
        wait_until_idle(page)
        page.screenshot(path=str(ARTIFACTS / f"{slug or 'home'}.png"), full_page=True)
        assert_no_exception(page, slug or "home")
        if slug == "":
            # the decision, the clouds and the null histogram are drawn
            page.get_by_text("FAIL TO REJECT H₀").or_(page.get_by_text("REJECT H₀")).first.wait_for()
            page.locator("[data-testid='stDataFrame']").first.wait_for(timeout=120_000)
            page.locator(".js-plotly-plot").nth(1).wait_for(timeout=60_000)
            page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)


def test_audit_run_and_upload(app_url, page, tmp_path):
    page.goto(f"{app_url}/audit_one", wait_until="domcontentloaded")
    page.get_by_role("button", name="Run the test").click()
    page.get_by_text("Decision").first.wait_for(timeout=240_000)
    wait_until_idle(page)
    assert_no_exception(page, "audit_one after run")
    # Plotly draws after its script chunk loads, asynchronously: wait for the third chart
    # (clouds, null histogram, similarity histograms) rather than counting at once.
    page.locator(".js-plotly-plot").nth(2).wait_for(timeout=60_000)
    assert page.locator(".js-plotly-plot").count() >= 3
    page.screenshot(path=str(ARTIFACTS / "audit_one_result.png"), full_page=True)

    rows = [{"arm": "original", "text": f"Stop smoking and take a statin, option {i}."} for i in range(8)]
    rows += [{"arm": "perturbed", "text": f"<b>Why</b> did the statin cross the road? Joke {i}."} for i in range(8)]
    upload = tmp_path / "samples.jsonl"
    upload.write_text("\n".join(json.dumps(r) for r in rows))
    page.goto(f"{app_url}/byo_samples", wait_until="domcontentloaded")
    page.locator("input[type='file']").set_input_files(str(upload))
    page.get_by_role("button", name="Run the test").wait_for(timeout=60_000)
    page.get_by_role("button", name="Run the test").click()
    page.get_by_text("REJECT H₀").first.wait_for(timeout=240_000)
    wait_until_idle(page)
    assert_no_exception(page, "byo after run")
    page.screenshot(path=str(ARTIFACTS / "byo_result.png"), full_page=True)

    bad = tmp_path / "bad.csv"
    bad.write_text("arm,text\noriginal,fine\n,no arm here\n")
    page.locator("input[type='file']").set_input_files(str(bad))
    page.get_by_text("row 3: column").first.wait_for(timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "byo_bad_file.png"), full_page=True)
    assert_no_exception(page, "byo bad file")


def test_artifacts_exist():
    shots = list(ARTIFACTS.glob("*.png")) if ARTIFACTS.exists() else []
    assert len(shots) >= len(PAGES), "every page was photographed"
    assert shutil.disk_usage(ARTIFACTS).free > 0
