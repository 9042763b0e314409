"""`nexus-memory pipeline`: materialise every asset for every partition with pending work, in-process.

This is the code path of `make demo` and of the benchmarks, and it goes through Dagster exactly as
a UI launch does (same assets, same resources, same run records in DAGSTER_HOME when it is set).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import dagster as dg

from nexus_memory.config import Settings
from nexus_memory.episodes import DEFINITIONS, WRITER_DEFINITION
from nexus_memory.stores import Stores
from nexus_memory_assets import assets
from nexus_memory_assets.partitions import partition_key, platform_partitions
from resources import resources_for


def pending_partitions(stores: Stores, platforms: list[str] | None = None) -> list[tuple[str, str]]:
    """(day, platform) pairs with work left in any layer, oldest first."""
    rows = stores.conn.execute(
        """SELECT DISTINCT e.day, e.platform FROM events e
           WHERE e.day >= ? AND (
             NOT EXISTS (SELECT 1 FROM episode_events ee JOIN episodes ep ON ep.id = ee.episode_id
                         WHERE ee.event_id = e.id AND ep.definition_id = :def)
             OR e.id NOT IN (SELECT event_id FROM memory_processing_log)
             OR EXISTS (SELECT 1 FROM facts f WHERE f.source_event_id = e.id AND NOT EXISTS (
                         SELECT 1 FROM embeddings m WHERE m.target_type = 'fact' AND m.target_id = f.id)))
           ORDER BY e.day, e.platform""".replace(":def", "?"),
        (stores.settings.partition_start, DEFINITIONS[WRITER_DEFINITION].id),
    ).fetchall()
    return [(r[0], r[1]) for r in rows if platforms is None or r[1] in platforms]


def get_instance() -> dg.DagsterInstance:
    """The DAGSTER_HOME instance (runs show in the UI) when set, else a throwaway one."""
    if os.environ.get("DAGSTER_HOME"):
        os.makedirs(os.environ["DAGSTER_HOME"], exist_ok=True)
        return dg.DagsterInstance.get()
    return dg.DagsterInstance.ephemeral()


def run_pipeline(
    settings: Settings,
    *,
    platforms: list[str] | None = None,
    only_failed: bool = False,
    instance: dg.DagsterInstance | None = None,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Materialise events -> episodes -> facts -> embeddings for each pending partition."""
    with Stores(settings) as stores:
        todo = pending_partitions(stores, platforms)
        if only_failed:
            failed = {
                tuple(r[0].split("|", 1))
                for r in stores.conn.execute(
                    """SELECT DISTINCT e.partition_key FROM episode_processing p JOIN episodes e ON e.id = p.episode_id
                   WHERE p.status = 'failed'"""
                )
            }
            todo = sorted(set(todo) | failed)  # type: ignore[arg-type]
    instance = instance or get_instance()
    new_platforms = sorted({p for _, p in todo} - set(instance.get_dynamic_partitions("platform")))
    if new_platforms:
        instance.add_dynamic_partitions(platform_partitions.name or "platform", new_platforms)
    resources = resources_for(settings)
    layer_assets = dg.load_assets_from_modules([assets])
    outcome: dict[str, Any] = {"partitions": len(todo), "succeeded": 0, "failed": [], "seconds": 0.0}
    started = time.perf_counter()
    for i, (day, platform) in enumerate(todo, 1):
        run_config = {"ops": {"facts": {"config": {"only_failed": only_failed}}}} if only_failed else None
        result = dg.materialize(
            layer_assets,
            partition_key=partition_key(day, platform),
            instance=instance,
            resources=resources,
            run_config=run_config,
            raise_on_error=False,
            tags={"nexus/platform": platform},
        )
        status = "ok" if result.success else "FAILED"
        progress(f"[{i}/{len(todo)}] {day} {platform}: {status}")
        if result.success:
            outcome["succeeded"] += 1
        else:
            outcome["failed"].append(f"{day}|{platform}")
    outcome["seconds"] = round(time.perf_counter() - started, 2)
    return outcome
