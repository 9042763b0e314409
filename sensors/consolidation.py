"""New fact vectors (an `embeddings` materialisation) with facts waiting: consolidate them."""

import dagster as dg

from nexus_memory.observations.store import pending_fact_count
from nexus_memory.observations.triggers import facts_high_water
from nexus_memory_assets.consolidation.jobs import consolidation_job
from resources import StoresResource


@dg.sensor(
    job=consolidation_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches `embeddings`: when new fact vectors land, consolidate them (one run per batch of facts).",
)
def consolidate_after_embeddings(context: dg.SensorEvaluationContext, stores: StoresResource) -> dg.SensorResult:
    latest = context.instance.fetch_materializations(dg.AssetKey("embeddings"), limit=1).records
    seen = int(context.cursor or 0)
    if not latest or latest[0].storage_id <= seen:
        return dg.SensorResult(skip_reason="no new fact vectors")
    cursor = str(latest[0].storage_id)
    with stores.open() as s:
        pending, high_water = pending_fact_count(s.conn), facts_high_water(s.conn)
    if not pending:
        return dg.SensorResult(skip_reason="no fact waits for consolidation", cursor=cursor)
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"facts:{high_water}")], cursor=cursor)
