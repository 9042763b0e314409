"""Store-wide upkeep that no partition owns: the nightly vector index upkeep, and the repair jobs an operator
launches from the UI."""

import dagster as dg

from nexus_memory.embeddings.step import nightly_index_upkeep, reembed
from nexus_memory_assets.common import SQLITE_POOL
from nexus_memory_assets.loggers import progress_log
from resources import EmbedderResource, StoresResource


class ReembedConfig(dg.Config):
    """Which target types to embed again: fact, observation, mental_model, entity."""

    target_types: list[str] = ["fact"]  # noqa: RUF012 - pydantic copies defaults


@dg.op(pool=SQLITE_POOL)
def reembed_vectors(
    context: dg.OpExecutionContext, config: ReembedConfig, stores: StoresResource, embedder: EmbedderResource
) -> dg.Output[int]:
    """Drop and recompute the vectors of `target_types` with the current model and text recipe, then reindex."""
    model = embedder.get()
    progress = progress_log(context, "reembed")
    with stores.open() as opened:
        stats = reembed(
            opened, model, config.target_types, on_progress=lambda done, total: progress(done, total, "rows")
        )
    return dg.Output(
        stats.rows,
        metadata={
            "rows": stats.rows,
            "rows_per_s": round(stats.rows_per_s, 1),
            "seconds": round(stats.seconds, 1),
            "model": model.model_name,
            "by_type": dg.MetadataValue.json(stats.by_type),
        },
    )


@dg.job(
    description="Embed rows again after the model or the embedded text changed (nexus-memory "
    "rebuild-index --reembed); recall finds those rows by keyword and entity until it ends."
)
def reembed_job() -> None:
    reembed_vectors()


@dg.op(pool=SQLITE_POOL)
def retrain_vector_indexes(context: dg.OpExecutionContext, stores: StoresResource) -> dg.Output[int]:
    """Keep each IVF vector index fit, retraining the centroids of one that lost rows to a forget (a forget only
    drops the rows); metadata: what was done per target type."""
    with stores.open() as opened:
        done = nightly_index_upkeep(opened)
    context.log.info(f"vector indexes: {done or 'none yet'}")
    return dg.Output(sum(what != "none" for what in done.values()), metadata={"by_type": dg.MetadataValue.json(done)})


@dg.job(description="Vector index upkeep: fold in new rows, retrain an index that lost rows to a forget.")
def nightly_vector_index() -> None:
    retrain_vector_indexes()


nightly_vector_index_schedule = dg.ScheduleDefinition(
    name="nightly_vector_index_schedule",
    job=nightly_vector_index,
    cron_schedule="30 4 * * *",  # after the 04:00 decay, before anyone is about
    default_status=dg.DefaultScheduleStatus.RUNNING,
)

defs = dg.Definitions(jobs=[reembed_job, nightly_vector_index], schedules=[nightly_vector_index_schedule])
