"""Layers 1 to 4 in Dagster: the (day, platform)-partitioned assets events, episodes, facts and embeddings.

  assets.py  one asset per layer, a run over a range of days of one platform
  checks.py  their invariants, per partition of the run or over the whole store
  jobs.py    memory_pipeline (every layer) and rerun_failed_episodes (facts and embeddings)

Their sensor is sensors/new_events.py; `build_layer_defs` puts the rest together for one set of partitions.
"""

from __future__ import annotations

import dagster as dg

from nexus_memory_assets.layers.assets import build_layer_assets
from nexus_memory_assets.layers.checks import build_layer_checks
from nexus_memory_assets.layers.jobs import memory_pipeline_job, rerun_failed_episodes_job


def build_layer_defs(partitions_def: dg.MultiPartitionsDefinition) -> dg.Definitions:
    """The layer assets, their checks and their jobs over these (day, platform) partitions."""
    return dg.Definitions(
        assets=build_layer_assets(partitions_def),
        asset_checks=build_layer_checks(partitions_def),
        jobs=[memory_pipeline_job, rerun_failed_episodes_job],
    )
