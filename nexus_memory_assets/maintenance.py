"""Repair jobs an operator launches from the UI: store-wide work that no partition owns."""

import dagster as dg

from nexus_memory.embeddings.step import reembed
from nexus_memory_assets.common import SQLITE_POOL
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
    last_logged = [0]

    def progress(done: int, total: int) -> None:
        if done == total or done - last_logged[0] >= 1_000:  # a line per ~1,000 rows, not per batch
            last_logged[0] = done
            context.log.info(f"embedded {done}/{total}")

    with stores.open() as opened:
        stats = reembed(opened, model, config.target_types, on_progress=progress)
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


defs = dg.Definitions(jobs=[reembed_job])
