"""The code location: every asset, check, job and sensor of Nexus Memory, with their resources."""

from __future__ import annotations

import dagster as dg

from nexus_memory_assets import assets, checks, consolidation
from nexus_memory_assets.jobs import memory_pipeline_job, rerun_failed_episodes_job
from nexus_memory_assets.maintenance import reembed_job
from resources import EmbedderResource, StoresResource, WriterResource
from sensors import new_events_sensor

defs = dg.Definitions(
    assets=[*dg.load_assets_from_modules([assets]), *consolidation.CONSOLIDATION_ASSETS],
    asset_checks=[*dg.load_asset_checks_from_modules([checks]), *consolidation.CONSOLIDATION_CHECKS],
    jobs=[memory_pipeline_job, rerun_failed_episodes_job, reembed_job, *consolidation.CONSOLIDATION_JOBS],
    schedules=consolidation.CONSOLIDATION_SCHEDULES,
    sensors=[new_events_sensor, *consolidation.CONSOLIDATION_SENSORS],
    resources={
        "stores": StoresResource(),
        "writer": WriterResource(),
        "embedder": EmbedderResource(),
        "consolidator": consolidation.ConsolidatorResource(),
    },
    # Steps of one run go one after another in one process: the SQLite stores take one writer at a
    # time anyway, and parallelism comes from runs of different platforms (see dagster.yaml).
    executor=dg.in_process_executor,
)
