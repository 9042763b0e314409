"""The partition view of `facts` in the browser: after a demo-like ingest it lists the days that hold events, not every
day since NEXUS_PARTITION_START, and tells the (day, platform) partitions that are done from those still to do.

The sample data (`make demo`'s file: 22 days, four platforms) is ingested and one platform run through the pipeline
(`nexus-memory pipeline --platform gmail`, as the CLI runs it), then a real `dagster-webserver` serves the instance.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import pytest
from test_ui_browser import TIMEOUT_MS, _screenshot, ui_page  # noqa: F401  (ui_page is a fixture)
from webserver import REPO, Webserver, dagster_home, free_port, process_group

from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.ingest import ingest_file
from nexus_memory.events.partitions import ledger_partitions
from nexus_memory_assets.pipeline import run_pipeline

if TYPE_CHECKING:
    from playwright.sync_api import Page

SAMPLE = REPO / "nexus_memory" / "sample_data" / "events.jsonl"
STATS = """
{ assetNodeOrError(assetKey: {path: ["facts"]}) {
    ... on AssetNode {
      partitionStats { numPartitions numMaterialized numFailed numMaterializing }
      partitionKeysByDimension { name partitionKeys }
    } } }"""


@pytest.mark.slow
def test_facts_partition_view_shows_the_days_with_events(tmp_path: Path, ui_page: Page) -> None:  # noqa: F811
    from playwright.sync_api import expect

    data_dir, home = tmp_path / "data", dagster_home(tmp_path)
    settings = load_settings(data_dir=data_dir, inbox_dir=tmp_path / "inbox")
    with Stores(settings) as stores:
        assert ingest_file(stores, SAMPLE, "jsonl").ingested == 308
        pairs = ledger_partitions(stores)
    days = sorted({day for day, _ in pairs})
    platforms = sorted({platform for _, platform in pairs})
    gmail_days = sorted(day for day, platform in pairs if platform == "gmail")
    assert (len(days), len(platforms), len(pairs)) == (22, 4, 52)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        outcome = run_pipeline(settings, platforms=["gmail"], instance=instance)
        assert outcome.ok and [(r.first, r.last) for r in outcome.runs] == [(gmail_days[0], gmail_days[-1])]
    # The range of gmail's days covers the days between them too (other platforms' days, empty for gmail).
    done = [day for day in days if gmail_days[0] <= day <= gmail_days[-1]]

    server = Webserver(free_port(), home=home, data_dir=data_dir)
    env = {**os.environ, "DAGSTER_HOME": str(home), "NEXUS_DATA_DIR": str(data_dir)}
    command = [str(Path(sys.executable).parent / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(server.port)]
    with process_group([*command, "-w", str(REPO / "workspace.yaml")], env, tmp_path / "webserver.log", server):
        node = server.graphql(STATS, timeout=60)["data"]["assetNodeOrError"]
        keys = {dimension["name"]: dimension["partitionKeys"] for dimension in node["partitionKeysByDimension"]}
        assert keys == {"day": days, "platform": platforms}  # days with events only, not every day since 2019
        stats = node["partitionStats"]
        assert stats == {
            "numPartitions": len(days) * len(platforms),
            "numMaterialized": len(done),
            "numFailed": 0,
            "numMaterializing": 0,
        }

        page = ui_page
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        try:
            page.goto(f"{server.url}/assets/facts?view=partitions")
            missing = len(days) * len(platforms) - len(done)
            expect(page.get_by_text(f"{len(days) * len(platforms)} Partitions Selected")).to_be_visible(
                timeout=TIMEOUT_MS
            )
            expect(page.get_by_text(f"Materialized ({len(done)})")).to_be_visible()
            expect(page.get_by_text(f"Missing ({missing})")).to_be_visible()
            for day in (days[0], days[-1]):  # the day list holds the days with events, and no others
                expect(page.get_by_text(day, exact=True).first).to_be_visible()
            expect(page.get_by_text("2019-01-01", exact=True)).to_have_count(0)
            expect(page.get_by_text("2025-03-02", exact=True)).to_have_count(0)  # the day before the first
            # One day: gmail done, the other platforms' partitions of that day still to do.
            page.get_by_text(gmail_days[0], exact=True).first.click()
            for platform in platforms:
                expect(page.get_by_text(platform, exact=True).first).to_be_visible()
            _screenshot(page, tmp_path / "facts_partitions.png")
        except Exception:
            _screenshot(page, tmp_path / "facts_partitions_failure.png")
            raise
        assert not errors, f"JavaScript errors in the page: {errors}"
