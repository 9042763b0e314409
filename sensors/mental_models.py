"""Mental models that are due or new: registered as partitions and refreshed, one run per model version."""

import dagster as dg

from nexus_memory.mental_models import get_model
from nexus_memory.mental_models.api import models_to_materialize
from nexus_memory_assets.consolidation.assets import mental_model_partitions, mental_models
from nexus_memory_assets.consolidation.jobs import refresh_mental_models_job
from resources import StoresResource


@dg.sensor(
    job=refresh_mental_models_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers new mental models as partitions and refreshes the ones that are due "
    "(stale and refreshed after consolidation) or never materialised.",
)
def mental_models_sensor(context: dg.SensorEvaluationContext, stores: StoresResource) -> dg.SensorResult:
    name = mental_model_partitions.name or "mental_model"
    known = set(context.instance.get_dynamic_partitions(name))
    materialized = context.instance.get_materialized_partitions(mental_models.key)
    with stores.open() as s:
        todo = models_to_materialize(s, sorted(materialized))
        versions = {key: get_model(s, key).id for key in todo}
    new = [key for key in todo if key not in known]
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"{key}:{versions[key]}", partition_key=key) for key in todo],
        dynamic_partitions_requests=[mental_model_partitions.build_add_request(new)] if new else [],
        skip_reason=None if todo else "no mental model is due",
    )
