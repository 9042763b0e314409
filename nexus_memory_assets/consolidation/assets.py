"""The `observations` asset (facts consolidated) and the `mental_models` asset (one dynamic partition per model).

Partitioning, on purpose (see the README):
- `observations` is not partitioned. Consolidation works per entity across every day and platform (a
  person's facts arrive from all of them), and its unit of pending work is "facts not yet consolidated",
  tracked in the store; an unpartitioned asset that takes whatever is pending is incremental by
  construction, and one run at a time per store is enforced by the core (a lock).
- `mental_models` has one dynamic partition per model (its root id), so a person refreshes one model
  from the UI, and a refresh costs one model's report, never all of them.
"""

from typing import Any

import dagster as dg

from nexus_memory.embeddings.step import embed_pending
from nexus_memory.lifecycle import sessions
from nexus_memory.lifecycle.reconsolidate import run_consolidation
from nexus_memory.mental_models import refresh_model
from nexus_memory.observations import ConsolidationBusy
from nexus_memory_assets.common import MEMORY_GROUP, SQLITE_POOL, md_table
from nexus_memory_assets.loggers import progress_log
from resources import ConsolidatorResource, EmbedderResource, StoresResource

mental_model_partitions = dg.DynamicPartitionsDefinition(name="mental_model")


class SessionConfig(dg.Config):
    """nightly: end every open session first (the 03:00 run); otherwise only those a newer session ended."""

    nightly: bool = False


@dg.asset(
    deps=[dg.AssetKey("embeddings")],
    group_name=MEMORY_GROUP,
    pool=SQLITE_POOL,
    description="Layer 5: facts consolidated into versioned observations (one entity, one topic each), "
    "plus an emergent mental model for each most-discussed entity.",
)
def observations(
    context: dg.AssetExecutionContext, config: SessionConfig, stores: StoresResource, consolidator: ConsolidatorResource
) -> dg.MaterializeResult:
    settings = stores.settings()
    with stores.open() as s:
        try:
            outcome = run_consolidation(
                s,
                offline=consolidator.offline,
                llm_settings=consolidator.llm_settings(settings),
                refresh_models=False,  # the mental_models partitions refresh them (mental_models_sensor)
                progress=progress_log(context.op_execution_context, "observations"),
            )
        except ConsolidationBusy as busy:
            context.log.info(str(busy))
            return dg.MaterializeResult(metadata={"skipped": str(busy)})
        # Sessions that ended (a newer one started, or the nightly run) are stamped once their facts are
        # consolidated; the consolidation they wait for is the one that just ran.
        ended = sessions.consolidate_ended(s, nightly=config.nightly, consolidate=lambda _: outcome)
    created: list[str] = outcome["models_created"]
    if created:
        context.instance.add_dynamic_partitions(mental_model_partitions.name or "mental_model", created)
    metadata: dict[str, Any] = {
        "consolidator": outcome["consolidator"],
        "facts_consolidated": outcome["consolidated"],
        "facts_isolated": outcome["isolated"],
        "facts_failed": outcome["failed"],
        "facts_waiting_for_vectors": outcome["waiting_for_vectors"],
        "observations_created": outcome["observations_created"],
        "observations_versioned": outcome["observations_versioned"],
        "observations_retired": outcome["observations_retired"],
        "near_duplicates_merged": outcome["merged_duplicates"],
        "observations": outcome["observations"],
        "facts_per_observation": outcome["facts_per_observation"],
        "stale_observations": outcome["stale_observations"],
        "llm_prompt_tokens": outcome["prompt_tokens"],
        "llm_completion_tokens": outcome["completion_tokens"],
        "sessions_ended": ended.ended,
        "sessions_consolidated": ended.consolidated,
        "emergent_models_created": len(created),
        "dossiers_written": outcome["dossiers_written"],
        "seconds": outcome["seconds"],
    }
    if outcome["failures"]:
        metadata["failures"] = md_table(
            ["fact", "error"], [[f["fact_id"], f["error"]] for f in outcome["failures"][:50]]
        )
        # Good facts are committed; failing the step says a rerun is needed (only failed facts are redone).
        raise dg.Failure(
            description=f"{outcome['failed']} facts could not be consolidated; rerun to retry them", metadata=metadata
        )
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(
    partitions_def=mental_model_partitions,
    deps=[observations],
    group_name=MEMORY_GROUP,
    pool=SQLITE_POOL,
    description="Layer 6: one mental model (a versioned report and its markdown dossier) per partition.",
)
def mental_models(
    context: dg.AssetExecutionContext,
    stores: StoresResource,
    embedder: EmbedderResource,
    consolidator: ConsolidatorResource,
) -> dg.MaterializeResult:
    model_key = context.partition_key
    model = embedder.get()
    narrator = consolidator.narrator(stores.settings())
    with stores.open() as s:
        fresh, changed = refresh_model(s, model_key, embedder=model, narrator=narrator)
        embed_pending(s, model, target_types=("mental_model",))
    context.log.info(f"{model_key}: {'new version' if changed else 'unchanged'} v{fresh.version}")
    return dg.MaterializeResult(
        metadata={
            "model": fresh.id,
            "name": fresh.name,
            "version": fresh.version,
            "new_version": changed,
            "subtype": fresh.subtype,
            "observations": sum(1 for t, _ in fresh.sources if t == "observation"),
            "report_chars": len(fresh.description),
            "report": dg.MetadataValue.md(fresh.description[:4000]),
            "llm_prompt_tokens": narrator.prompt_tokens if narrator else 0,
            "llm_completion_tokens": narrator.completion_tokens if narrator else 0,
        }
    )
