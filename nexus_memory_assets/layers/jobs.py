"""Jobs of the layer assets: the whole memory pipeline for a range of partitions, and a rerun of failed episodes."""

from __future__ import annotations

import dagster as dg

from nexus_memory_assets.common import MEMORY_GROUP

# Both jobs take their (day, platform) partitions from the assets they select.
memory_pipeline_job = dg.define_asset_job(
    "memory_pipeline",
    # The (day, platform) layers; observations and mental models have their own jobs (consolidation/).
    selection=dg.AssetSelection.groups(MEMORY_GROUP) - dg.AssetSelection.assets("observations", "mental_models"),
    description="events -> episodes -> facts -> embeddings for the selected partitions (a range of days is one run).",
)

rerun_failed_episodes_job = dg.define_asset_job(
    "rerun_failed_episodes",
    selection=dg.AssetSelection.assets("facts", "embeddings"),
    config={"ops": {"facts": {"config": {"only_failed": True}}}},
    description="Redo only the episodes whose writer run failed, then embed what they produce.",
)
