"""The code location: every asset, check, job and sensor of Nexus Memory, with their resources."""

from __future__ import annotations

import dagster as dg

from nexus_memory_assets import analytics, assets, checks
from nexus_memory_assets.jobs import memory_pipeline_job, rerun_failed_episodes_job
from nexus_memory_assets.maintenance import reembed_job
from resources import EmbedderResource, StoresResource, WriterResource
from sensors import new_events_sensor

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([assets]),
    asset_checks=dg.load_asset_checks_from_modules([checks]),
    jobs=[memory_pipeline_job, rerun_failed_episodes_job, reembed_job],
    sensors=[new_events_sensor],
    resources={"stores": StoresResource(), "writer": WriterResource(), "embedder": EmbedderResource()},
    # Steps of one run go one after another in one process: the SQLite stores take one writer at a
    # time anyway, and parallelism comes from runs of different platforms (see dagster.yaml).
    executor=dg.in_process_executor,
)

# The operator's analytics group, its job and schedule (nexus_memory_assets/analytics.py).
defs = dg.Definitions.merge(defs, analytics.defs)
