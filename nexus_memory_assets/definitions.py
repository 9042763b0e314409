"""The code location: every asset, check, job, schedule and sensor of Nexus Memory, with their resources.

Each domain of the glue exports its own definitions, merged here:

  layers/         events, episodes, facts, embeddings: (day, platform) partitions, checks, memory_pipeline
  ingest.py       ingest_inbox_file: one inbox file a run
  consolidation/  observations and mental_models, their checks, jobs and nightly schedule
  lifecycle.py    enrichment, decay, reflection and forget jobs, their schedules
  maintenance.py  the nightly vector index upkeep, reembed_job
  analytics.py    the operator's analytics group, its job and schedule

with every sensor (sensors/), every resource (resources/), the loggers and the executor. `build_definitions(settings)`
is the one place they are put together; `defs` is what `make ui` loads (settings from the environment,
read once here), and `nexus-memory pipeline` builds its own from the settings it was given.
"""

from __future__ import annotations

import warnings

import dagster as dg

from nexus_memory.core.config import Settings, load_settings
from nexus_memory_assets import analytics, consolidation, ingest, lifecycle, maintenance
from nexus_memory_assets.layers import build_layer_defs
from nexus_memory_assets.loggers import terse_logger
from nexus_memory_assets.partitions import day_platform_partitions
from nexus_memory_assets.tenant import tenant_tags, with_run_tags
from resources import ConsolidatorResource, resources_for
from sensors import build_sensors


def build_definitions(settings: Settings) -> dg.Definitions:
    """Assets, checks, jobs, schedules, sensors and resources for one installation's settings."""
    partitions_def = day_platform_partitions(settings)
    with warnings.catch_warnings():
        # BackfillPolicy, partitioned checks and a sensor's `owners` (set by Dagster itself when it binds
        # resources to the sensor's jobs) are marked beta in this Dagster; the behaviour is tested here.
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        warnings.simplefilter("ignore", category=dg.PreviewWarning)
        location = dg.Definitions(
            sensors=build_sensors(),
            resources={**resources_for(settings), "consolidator": ConsolidatorResource()},
            # Runs use Dagster's console logger unless their run config picks another;
            # `nexus-memory pipeline` picks `terse` (one line per batch in the terminal).
            loggers={"console": dg.colored_console_logger, "terse": terse_logger},
            # Steps of one run go one after another in one process: the SQLite stores take one writer at a
            # time anyway, and parallelism comes from runs of different platforms (see dagster.yaml).
            executor=dg.in_process_executor,
        )
        merged = dg.Definitions.merge(
            build_layer_defs(partitions_def),
            ingest.defs,
            consolidation.defs,
            lifecycle.defs,
            maintenance.defs,
            analytics.defs,
            location,
        )
        # Every run of a job, a schedule or a sensor carries the tenant (the run queue limits runs per tenant).
        definitions = with_run_tags(merged, tenant_tags(settings))
        definitions.get_repository_def()  # resolved here, inside the filter, and cached
    return definitions


defs = build_definitions(load_settings())
