"""Jobs of the consolidation assets, and the nightly schedule that ends every open session and consolidates."""

import dagster as dg

from nexus_memory_assets.consolidation.assets import mental_models, observations

consolidation_job = dg.define_asset_job(
    "consolidation",
    selection=dg.AssetSelection.assets(observations),
    description="Consolidate pending facts into observations (and create emergent mental models).",
)

refresh_mental_models_job = dg.define_asset_job(
    "refresh_mental_models",
    selection=dg.AssetSelection.assets(mental_models),
    description="Refresh the selected mental models (one partition per model).",
)

nightly_consolidation = dg.ScheduleDefinition(
    name="nightly_consolidation",
    job=consolidation_job,
    cron_schedule="0 3 * * *",
    run_config={"ops": {"observations": {"config": {"nightly": True}}}},
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every night at 03:00 (UTC): end every open session and consolidate, whatever the sensors did.",
)
