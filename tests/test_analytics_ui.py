"""The analytics group in a real browser: after a materialisation, the asset page shows the chart and the tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import pytest
from analytics_store import build_fixed_store
from test_ui_browser import TIMEOUT_MS, _screenshot, ui_page  # noqa: F401  (ui_page is a fixture)
from webserver import Webserver

from nexus_memory.core.config import load_settings
from nexus_memory_assets.analytics import analytics_assets
from resources import StoresResource

if TYPE_CHECKING:
    from playwright.sync_api import Page


@pytest.fixture
def materialised(webserver: Webserver) -> Webserver:
    """The fixed store, and the analytics group materialised into the instance the webserver serves.

    Done before the browser starts: Playwright's event loop and an in-process run do not share a thread well.
    """
    settings = load_settings(data_dir=webserver.data_dir)  # the stores the webserver's code location reads
    build_fixed_store(settings)
    with dg.DagsterInstance.from_config(str(webserver.home)) as instance:
        result = dg.materialize(
            analytics_assets, resources={"stores": StoresResource(data_dir=str(settings.data_dir))}, instance=instance
        )
    assert result.success
    return webserver


@pytest.mark.slow
def test_ui_shows_the_events_chart_and_backlog_table(
    materialised: Webserver,
    ui_page: Page,  # noqa: F811
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    webserver = materialised
    page = ui_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{webserver.url}/assets/ingest_activity")
        backlog = page.locator("tr", has=page.get_by_text("backlog_by_platform", exact=True))
        expect(backlog).to_contain_text("discord", timeout=TIMEOUT_MS)  # the table renders inline
        chart_row = page.locator("tr", has=page.get_by_text("events_per_day", exact=True))
        chart_row.get_by_text("[Show Markdown]").click()
        image = page.get_by_role("dialog").locator('img[src^="data:image/png;base64,"]')
        expect(image).to_be_visible(timeout=TIMEOUT_MS)
        # Decoded and laid out by the browser: a broken data URI has no natural size.
        assert image.evaluate("img => [img.complete, img.naturalWidth, img.naturalHeight]") == [True, 1000, 360]
        _screenshot(page, tmp_path / "analytics_chart.png")
    except Exception:
        _screenshot(page, tmp_path / "analytics_failure.png")
        raise
    assert not errors, f"JavaScript errors in the page: {errors}"
