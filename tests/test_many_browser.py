"""The "Across many prompts" page in real Chromium: after its main actions (the shipped example run, then the
planner), no text is
cut off at 1024, 1280 and 1600 px (tests/clipping.js), no exception, the small multiples drawn; photographed.

A file of its own (tests/test_browser.py belongs to another engineer); it reuses that file's fixtures and helpers.
"""

from __future__ import annotations

from test_browser import (ARTIFACTS, WIDTHS, app_url, assert_no_exception, click, clipped_text,  # noqa: F401
                          page, photograph, wait_until_idle)


def test_many_prompts_run_has_no_clipped_text(app_url, page):  # noqa: F811 - pytest fixtures
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{app_url}/many_prompts", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Across many prompts").first.wait_for(timeout=240_000)
    page.wait_for_timeout(1500)
    wait_until_idle(page)
    click("Run the test", "Download result (JSON)")(page, None)
    page.get_by_text("Each panel is one of the 6 most changed prompts").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)  # Plotly draws asynchronously
    assert_no_exception(page, "many_prompts run")
    # The six panels' titles are drawn (subplot titles are SVG annotations).
    assert page.locator(".js-plotly-plot .annotation-text").count() >= 6
    problems = []
    for view in ("run", "plan"):
        if view == "plan":  # the second action: the planner across prompts, from this run as a pilot
            page.set_viewport_size({"width": 1280, "height": 900})
            click("Plan by simulation", "Smallest k per number of prompts")(page, None)
            page.wait_for_timeout(1000)
            assert_no_exception(page, "many_prompts plan")
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(700)
            problems += [f"{view} @ {width}px · {p['kind']}: {p['text']!r} (needs {p['need']} px, has {p['have']})"
                         for p in clipped_text(page)]
            photograph(page, ARTIFACTS / f"many_prompts_{view}_{width}.png", width)
    assert not problems, "clipped text on many_prompts:\n" + "\n".join(problems)
