"""The code location: every asset, check, job and sensor of Nexus Memory, with their resources.

`build_definitions(settings)` is the one place they are put together; `defs` is what `make ui`
loads (settings from the environment, read once here), and `nexus-memory pipeline` builds its own
from the settings it was given.
"""

from __future__ import annotations

import warnings

import dagster as dg

from nexus_memory.core.config import Settings, load_settings
from nexus_memory_assets import analytics, consolidation, lifecycle
from nexus_memory_assets.assets import build_layer_assets
from nexus_memory_assets.checks import build_layer_checks
from nexus_memory_assets.inbox import ingest_inbox_job
from nexus_memory_assets.jobs import memory_pipeline_job, rerun_failed_episodes_job
from nexus_memory_assets.loggers import terse_logger
from nexus_memory_assets.maintenance import reembed_job
from nexus_memory_assets.partitions import day_platform_partitions
from resources import resources_for
from sensors import build_new_events_sensor
from sensors.sessions import new_session_sensor


def build_definitions(settings: Settings) -> dg.Definitions:
    """Assets, checks, jobs, the sensor and resources for one installation's settings."""
    partitions_def = day_platform_partitions(settings)
    with warnings.catch_warnings():
        # BackfillPolicy, partitioned checks and a sensor's `owners` (set by Dagster itself when it binds
        # resources to the sensor's jobs) are marked beta in this Dagster; the behaviour is tested here.
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        warnings.simplefilter("ignore", category=dg.PreviewWarning)
        definitions = dg.Definitions(
            assets=[*build_layer_assets(partitions_def), *consolidation.CONSOLIDATION_ASSETS],
            asset_checks=[*build_layer_checks(partitions_def), *consolidation.CONSOLIDATION_CHECKS],
            jobs=[
                memory_pipeline_job,
                rerun_failed_episodes_job,
                reembed_job,
                ingest_inbox_job,
                *lifecycle.jobs,
                *consolidation.CONSOLIDATION_JOBS,
            ],
            schedules=[*lifecycle.schedules, *consolidation.CONSOLIDATION_SCHEDULES],
            sensors=[build_new_events_sensor(partitions_def), new_session_sensor, *consolidation.CONSOLIDATION_SENSORS],
            resources={**resources_for(settings), "consolidator": consolidation.ConsolidatorResource()},
            # Runs use Dagster's console logger unless their run config picks another;
            # `nexus-memory pipeline` picks `terse` (one line per batch in the terminal).
            loggers={"console": dg.colored_console_logger, "terse": terse_logger},
            # Steps of one run go one after another in one process: the SQLite stores take one writer at a
            # time anyway, and parallelism comes from runs of different platforms (see dagster.yaml).
            executor=dg.in_process_executor,
        )
        # The operator's analytics group, its job and schedule (nexus_memory_assets/analytics.py).
        definitions = dg.Definitions.merge(definitions, analytics.defs)
        definitions.get_repository_def()  # resolved here, inside the filter, and cached
    return definitions


defs = build_definitions(load_settings())
