"""A backfill from the UI: `dagster dev` (webserver and daemon, as `make ui` starts them) on a free loopback
port, a partition-range backfill launched through GraphQL, the stores checked, the lineage drawn in Chromium.

The new-events sensor runs too, as it does under `make ui`: it launches its own runs for the same pending
events, so the backfill's runs and the sensor's write the same stores at the same time.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import pytest
from test_ui_browser import TIMEOUT_MS, _screenshot, ui_page  # noqa: F401  (ui_page is a fixture)
from webserver import REPO, Webserver, dagster_home, free_port, process_group

from nexus_memory.bench.history import HistoryGenerator
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.events.partitions import Calendar, ledger_partitions
from nexus_memory.pipeline.layers import LAYERS, pending_partitions
from nexus_memory_assets.partitions import register_partitions

if TYPE_CHECKING:
    from playwright.sync_api import Page

START = "2023-01-01"  # NEXUS_PARTITION_START; the history begins on 2023-01-02
FIRST, LAST = "2023-01-02", "2023-01-08"
PLATFORMS = ("imessage", "gmail")
BACKFILL_TIMEOUT_S = 900  # each run is a new process that loads the model, on two busy cores

LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}"""
STATUS = """
query Status($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status numPartitions }
    ... on Error { message }
  }
}"""
RUNS = """{ runsOrError { ... on Runs { results { runId status tags { key value } } } } }"""
GROUP_ASSETS = """
{ assetNodes(group: {groupName: "memory", repositoryName: "__repository__", repositoryLocationName: "nexus_memory"}) {
    assetKey { path } } }"""
UNFINISHED = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING", "MANAGED"}


def _history(settings_data: Path) -> int:
    """A week of imessage and gmail from the bench's history, ingested; returns the events."""
    records = [r for r in HistoryGenerator(400, seed=5, days=7).events() if r["platform"] in PLATFORMS]
    settings = load_settings(data_dir=settings_data, partition_start=START)
    with Stores(settings) as stores:
        summary = ingest(stores, [RawRecord("history", i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
    assert summary.ingested == len(records)
    return len(records)


def _wait_for_backfill(server: Webserver, backfill_id: str, log: Path) -> str:
    deadline = time.monotonic() + BACKFILL_TIMEOUT_S
    while time.monotonic() < deadline:
        answer = server.graphql(STATUS, {"id": backfill_id}, timeout=60)["data"]["partitionBackfillOrError"]
        assert answer["__typename"] == "PartitionBackfill", answer
        if answer["status"] not in ("REQUESTED", "CANCELING", "FAILING"):
            return answer["status"]
        time.sleep(3)
    pytest.fail(f"backfill {backfill_id} still running after {BACKFILL_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def _wait_for_runs(server: Webserver) -> list[dict]:
    """Every run in the instance, once none is queued or running any more."""
    deadline = time.monotonic() + BACKFILL_TIMEOUT_S
    while True:
        runs = server.graphql(RUNS, timeout=60)["data"]["runsOrError"]["results"]
        if not any(r["status"] in UNFINISHED for r in runs) or time.monotonic() > deadline:
            return runs
        time.sleep(3)


@pytest.mark.slow
def test_ui_backfill_of_a_partition_range(tmp_path: Path, ui_page: Page) -> None:  # noqa: F811
    from playwright.sync_api import expect

    data_dir = tmp_path / "data"
    events = _history(data_dir)
    home = dagster_home(tmp_path)
    settings = load_settings(data_dir=data_dir, partition_start=START)
    with Stores(settings) as stores, dg.DagsterInstance.from_config(str(home)) as instance:
        # The days and platforms with events are partitions, as the sensor registers them.
        days = register_partitions(instance, ledger_partitions(stores), Calendar.from_settings(settings))
    assert days[: days.index(LAST) + 1] == [f"2023-01-0{d}" for d in range(2, 9)]  # each day of the week has events
    server = Webserver(free_port(), home=home, data_dir=data_dir)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "NEXUS_DATA_DIR": str(data_dir),
        "NEXUS_INBOX_DIR": str(tmp_path / "inbox"),
        "NEXUS_PARTITION_START": START,
    }
    dagster = Path(sys.executable).parent / "dagster"
    command = [str(dagster), "dev", "-h", "127.0.0.1", "-p", str(server.port), "-w", str(REPO / "workspace.yaml")]
    log = tmp_path / "dagster_dev.log"
    with process_group(command, env, log, server):
        # One platform's week, every layer: one range of daily partitions, one run (BackfillPolicy.single_run).
        params = {
            "partitionsByAssets": [
                {
                    "assetKey": {"path": [layer]},
                    "partitions": {"range": {"start": f"{FIRST}|imessage", "end": f"{LAST}|imessage"}},
                }
                for layer in LAYERS
            ],
            "title": "imessage, first week",
        }
        launched = server.graphql(LAUNCH, {"params": params}, timeout=120)["data"]["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        status = _wait_for_backfill(server, launched["backfillId"], log)
        runs = _wait_for_runs(server)
        assert status == "COMPLETED_SUCCESS", log.read_text()[-3000:]

        backfill_runs = [r for r in runs if any(t["key"] == "dagster/backfill" for t in r["tags"])]
        sensor_runs = [r for r in runs if any(t["key"] == "dagster/sensor_name" for t in r["tags"])]
        assert len(backfill_runs) == 1  # the week of partitions is one run
        assert sensor_runs, "the sensor launched nothing for the pending events"
        assert {r["status"] for r in runs} == {"SUCCESS"}, runs
        with dg.DagsterInstance.from_config(str(home)) as instance:
            done = instance.get_materialized_partitions(dg.AssetKey("embeddings"))
            assert {f"{day}|imessage" for day in ("2023-01-02", "2023-01-05", "2023-01-08")} <= done
            for run in runs:  # the backfill's runs and the sensor's wrote at once: nobody waited out a lock
                for entry in instance.all_logs(run["runId"]):
                    assert "database is locked" not in (entry.user_message or ""), entry.user_message

        with Stores(load_settings(data_dir=data_dir)) as stores:
            assert pending_partitions(stores) == []  # every event of both platforms is processed
            counts = stores.counts()
            assert counts["events"] == events and counts["facts"] > 0 and counts["embeddings"] >= counts["facts"]
            unprocessed = stores.conn.execute(
                "SELECT count(*) FROM events WHERE id NOT IN (SELECT event_id FROM memory_processing_log)"
            ).fetchone()[0]
            assert unprocessed == 0

        # The whole lineage of the memory group, drawn: every asset the code location defines in it.
        group = server.graphql(GROUP_ASSETS, timeout=60)["data"]["assetNodes"]
        names = {"/".join(node["assetKey"]["path"]) for node in group}
        assert set(LAYERS) <= names
        page = ui_page
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        try:
            page.goto(f"{server.url}/locations/nexus_memory/asset-groups/memory/lineage")
            graph = page.locator("svg foreignObject")
            for name in sorted(names):
                expect(graph.get_by_text(name, exact=True)).to_be_visible(timeout=TIMEOUT_MS)
            _screenshot(page, tmp_path / "backfill_lineage.png")
        except Exception:
            _screenshot(page, tmp_path / "backfill_failure.png")
            raise
        assert not errors, f"JavaScript errors in the page: {errors}"
