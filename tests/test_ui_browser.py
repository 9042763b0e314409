"""The Dagster UI in a real browser: Debian's Chromium, driven by Playwright, renders the asset graph and the job."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from webserver import Webserver

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags Chromium keeps trying to reach Google, which a closed network refuses noisily.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ASSETS = ("events", "episodes", "facts", "embeddings")
TIMEOUT_MS = 60_000  # a cold React app on two busy cores


@pytest.fixture
def ui_page() -> Iterator[Page]:
    """A page in Debian's Chromium, checked for before the webserver starts: missing, the test fails and says why."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs Debian's Chromium (scripts/ensure-chromium.sh), "
            "or `sudo apt-get install -y --no-install-recommends chromium`"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "playwright is missing: `make install` (or `pip install -e '.[dev]'`); "
            f"no `playwright install` needed, the test drives {CHROMIUM}"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            browser.close()


def _screenshot(page: Page, path: Path) -> None:
    page.screenshot(path=path)
    if target := os.environ.get("NEXUS_UI_SCREENSHOT_DIR"):
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


@pytest.mark.slow
def test_ui_renders_the_asset_graph_and_the_job(ui_page: Page, webserver: Webserver, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    page = ui_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        # The memory group's lineage: each asset is a node of the graph (an SVG foreignObject), not just a list
        # row. (The global lineage shows one box per group now that there are two, memory and analytics.)
        page.goto(f"{webserver.url}/locations/nexus_memory/asset-groups/memory/lineage")
        graph = page.locator("svg foreignObject")
        for name in ASSETS:
            expect(graph.get_by_text(name, exact=True)).to_be_visible(timeout=TIMEOUT_MS)
        expect(page).to_have_title("Asset groups | memory")
        expect(page.get_by_role("dialog")).to_have_count(0)
        _screenshot(page, tmp_path / "asset_graph.png")

        page.goto(f"{webserver.url}/locations/nexus_memory/jobs/memory_pipeline")
        expect(page).to_have_title("Jobs | memory_pipeline", timeout=TIMEOUT_MS)
        # The job's description, rendered from the definitions (the UI draws each "->" as an arrow).
        expect(page.get_by_text("events -> episodes -> facts -> embeddings")).to_be_visible(timeout=TIMEOUT_MS)
        expect(page.locator("svg foreignObject").get_by_text("events", exact=True)).to_be_visible()
        # The nodes fill in their status last; screenshot the page once they have.
        expect(page.get_by_text(re.compile(r"^Loading"))).to_have_count(0, timeout=TIMEOUT_MS)
        expect(page.get_by_role("dialog")).to_have_count(0)
        _screenshot(page, tmp_path / "memory_pipeline_job.png")
    except Exception:
        _screenshot(page, tmp_path / "failure.png")
        raise
    assert not errors, f"JavaScript errors in the page: {errors}"
