"""The `analytics` group: the operator's view of the stores, one asset per section of nexus_memory.analytics.

Each asset reads the stores read-only (Arrow through ADBC, figures by DuckDB) and shows its section as
materialisation metadata: numbers (plotted by Dagster across materialisations), tables, and charts as
images. `nexus-memory report` prints the same sections from the same core function.
"""

import time
from typing import Any

import dagster as dg

from nexus_memory.analytics.chart import markdown_image, render_png
from nexus_memory.analytics.model import Section, Table
from nexus_memory.analytics.report import SECTIONS, compute_section
from resources import StoresResource

GROUP = "analytics"

# The layers each section reads; unpartitioned, so each depends on every partition of them.
UPSTREAM: dict[str, list[str]] = {
    "ingest_activity": ["events", "episodes", "facts"],
    "writer_outcomes": ["episodes", "facts"],
    "entity_graph": ["facts"],
    "consolidation_coverage": ["facts"],
    "embedding_coverage": ["embeddings"],
}


def table_metadata(table: Table) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        records=[dg.TableRecord(row) for row in table.rows],
        schema=dg.TableSchema(columns=[dg.TableColumn(name, kind) for name, kind in table.columns.items()]),
    )


def section_metadata(section: Section) -> dict[str, Any]:
    """Numbers as plain metadata (plotted), tables as table metadata, charts as inline PNG images."""
    metadata: dict[str, Any] = dict(section.numbers)
    metadata.update({name: table_metadata(table) for name, table in section.tables.items()})
    for name, chart in section.charts.items():
        metadata[name] = dg.MetadataValue.md(markdown_image(render_png(chart), chart.title))
    if section.notes:
        metadata["notes"] = dg.MetadataValue.md("\n".join(f"- {note}" for note in section.notes))
    return metadata


def _section_asset(name: str) -> dg.AssetsDefinition:
    summary = (SECTIONS[name].__doc__ or name).strip().splitlines()[0]

    @dg.asset(
        name=name,
        group_name=GROUP,
        deps=UPSTREAM[name],
        kinds={"duckdb"},
        description=f"{summary} Read-only over the stores; `nexus-memory report --section {name}` prints the same.",
    )
    def section_asset(context: dg.AssetExecutionContext, stores: StoresResource) -> dg.MaterializeResult:
        section = compute_section(name, stores.settings())
        context.log.info(f"{name}: " + ", ".join(f"{k}={v}" for k, v in list(section.numbers.items())[:6]))
        return dg.MaterializeResult(metadata=section_metadata(section))

    return section_asset


analytics_assets = [_section_asset(name) for name in SECTIONS]

analytics_job = dg.define_asset_job(
    "analytics",
    selection=dg.AssetSelection.groups(GROUP),
    description="Recompute the operator's figures (read-only; seconds on a 100k-event store).",
)

analytics_schedule = dg.ScheduleDefinition(
    name="analytics_hourly",
    job=analytics_job,
    cron_schedule="0 * * * *",
    description="The operator's figures every hour; turn on in the UI (Automation) to keep the plots current.",
)

defs = dg.Definitions(assets=analytics_assets, jobs=[analytics_job], schedules=[analytics_schedule])


def time_materialisation(data_dir: str) -> dict[str, Any]:
    """Materialise the group in-process on a throwaway instance; seconds per asset step and for the run."""
    instance = dg.DagsterInstance.ephemeral()
    started = time.perf_counter()
    result = dg.materialize(
        analytics_assets, resources={"stores": StoresResource(data_dir=data_dir)}, instance=instance
    )
    wall = time.perf_counter() - started
    begun: dict[str, float] = {}
    steps: dict[str, float] = {}
    for entry in instance.all_logs(result.run_id):
        event = entry.dagster_event
        if event is None or event.step_key is None:
            continue
        if event.event_type == dg.DagsterEventType.STEP_START:
            begun[event.step_key] = entry.timestamp
        elif event.event_type == dg.DagsterEventType.STEP_SUCCESS:
            steps[event.step_key] = round(entry.timestamp - begun[event.step_key], 3)
    return {"success": result.success, "steps_s": steps, "run_wall_s": round(wall, 3)}
