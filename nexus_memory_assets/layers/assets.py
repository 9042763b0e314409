"""One asset per memory layer, partitioned by (day, platform): events -> episodes -> facts -> embeddings.

Each asset body is glue: for each platform of the run, find the ledger days its partitions stand
for, call `nexus_memory.pipeline.layers.run_layer` for its own layer, and report what a person wants to see.
A run covers a range of days (BackfillPolicy.single_run), so a UI backfill of a platform's history
is one run, not one per day; the log gets one line per batch, and a line every few seconds while
a long batch runs.
"""

import functools
from collections.abc import Sequence
from typing import Any

import dagster as dg

from nexus_memory.core.ids import now_ms
from nexus_memory.events.partitions import partition_key
from nexus_memory.pipeline.layers import LayerReport, run_layer
from nexus_memory.writer.run import FailedEpisode, ModeCost, episode_costs
from nexus_memory_assets.common import MEMORY_GROUP, SQLITE_POOL, md_table
from nexus_memory_assets.loggers import progress_log
from nexus_memory_assets.partitions import run_days
from nexus_memory_assets.runs import claim_run
from nexus_memory_assets.tenant import tenant_tags
from resources import EmbedderResource, StoresResource, WriterResource

# One run per contiguous range of one platform's days: time order inside it, and no per-day run cost.
BACKFILL_POLICY = dg.BackfillPolicy.single_run()


class FactsConfig(dg.Config):
    """Rerun knobs: only the failed episodes, or named episodes."""

    only_failed: bool = False
    episode_ids: list[str] = []  # noqa: RUF012 - pydantic copies defaults


def run_batches(
    context: dg.OpExecutionContext,
    partitions_def: dg.MultiPartitionsDefinition,
    stores: StoresResource,
    layer: str,
    **options: Any,
) -> list[LayerReport]:
    """Run one layer over the run's partitions, a batch per platform; log one line per batch."""
    claim_run(context, tenant_tags(stores.settings()))
    reports: list[LayerReport] = []
    with stores.open() as opened:
        for platform, days in run_days(context, partitions_def, opened):
            progress = progress_log(context, f"{layer} {platform}")
            report = run_layer(opened, layer, platform, days, progress=progress, **options)
            context.log.info(report.line())
            reports.append(report)
    return reports


def batch_metadata(reports: list[LayerReport]) -> dict[str, Any]:
    """The numbers of a layer's batches, summed where there are several (a range spanning platforms)."""
    metadata: dict[str, Any] = {
        "batches": md_table(
            ["platform", "ledger days", "rows", "seconds"],
            [[r.platform, r.span, r.rows, round(r.seconds, 2)] for r in reports],
        ),
        "rows": sum(r.rows for r in reports),
        "seconds": round(sum(r.seconds for r in reports), 3),
    }
    for report in reports:
        for name, value in report.details.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                metadata.setdefault(name, value)
            else:
                metadata[name] = metadata.get(name, 0) + value
    return metadata


def failed_episodes_table(failures: Sequence[FailedEpisode]) -> dg.MetadataValue:
    """The failed episodes as a table: partition, episode, attempts and the last error."""
    return md_table(
        ["partition", "episode", "attempts", "mode", "seconds", "error"],
        [[f.partition_key, f.episode_id, f.attempts, f.mode or "", round(f.seconds, 1), f.error] for f in failures],
    )


def episode_cost_table(costs: Sequence[ModeCost]) -> dg.MetadataValue:
    """What the run's writer episodes cost per mode: episodes (ok), seconds and tokens, in all and each."""
    return md_table(
        ["mode", "episodes", "ok", "seconds", "s / episode", "tokens (prompt + completion)", "tokens / episode"],
        [
            [
                c.mode or "(not recorded)",
                c.episodes,
                c.ok,
                round(c.seconds, 1),
                round(c.seconds_per_episode, 1),
                f"{c.prompt_tokens} + {c.completion_tokens}",
                round(c.tokens_per_episode),
            ]
            for c in costs
        ],
    )


def build_layer_assets(partitions_def: dg.MultiPartitionsDefinition) -> list[dg.AssetsDefinition]:
    """The four layer assets over these partitions."""
    layer_asset = functools.partial(
        dg.asset,
        partitions_def=partitions_def,
        backfill_policy=BACKFILL_POLICY,
        group_name=MEMORY_GROUP,
        pool=SQLITE_POOL,
    )

    @layer_asset(
        description="Layer 1: the immutable events ledger (events.db) for the run's days of a platform.",
    )
    def events(context: dg.AssetExecutionContext, stores: StoresResource) -> dg.MaterializeResult:
        reports = run_batches(context.op_execution_context, partitions_def, stores, "events")
        metadata = batch_metadata(reports)
        by_direction = metadata.pop("by_direction", {})
        metadata["by_direction"] = md_table(["direction", "events"], [[k, v] for k, v in by_direction.items()])
        return dg.MaterializeResult(metadata=metadata)

    @layer_asset(
        deps=[events],
        description="Layer 2: events grouped into versioned episodes (time gap in a thread, token-capped).",
    )
    def episodes(context: dg.AssetExecutionContext, stores: StoresResource) -> dg.MaterializeResult:
        reports = run_batches(context.op_execution_context, partitions_def, stores, "episodes")
        return dg.MaterializeResult(metadata=batch_metadata(reports))

    @layer_asset(
        deps=[episodes],
        description="Layer 3: facts, entities, causal links and merge proposals written per episode. "
        "An episode that fails is recorded with its reason (check no_failed_episodes) and rerun alone.",
    )
    def facts(
        context: dg.AssetExecutionContext,
        config: FactsConfig,
        stores: StoresResource,
        writer: WriterResource,
        embedder: EmbedderResource,
    ) -> dg.MaterializeResult:
        episode_writer = writer.get_writer()
        started_ms = now_ms()
        reports = run_batches(
            context.op_execution_context,
            partitions_def,
            stores,
            "facts",
            writer=episode_writer,
            embedder=embedder.get(),  # new facts are embedded beside the writer, for the next step to store
            only_failed=config.only_failed,
            episode_ids=config.episode_ids or None,
        )
        metadata = batch_metadata(reports)
        with stores.open() as opened:
            keys = [partition_key(day, r.platform) for r in reports for day in r.days]
            costs = episode_costs(opened, keys, since_ms=started_ms)
        if costs:
            metadata["cost_by_mode"] = episode_cost_table(costs)
        failures = [f for r in reports for f in r.failures]
        if failures:
            # Good episodes stay committed and go on to be embedded; the failed ones wait for a rerun.
            metadata["failures"] = failed_episodes_table(failures)
            context.log.warning(
                f"{len(failures)} episodes failed; `nexus-memory failed` lists them, and the "
                "rerun_failed_episodes job (or `nexus-memory pipeline --only-failed`) redoes only them"
            )
        return dg.MaterializeResult(metadata=metadata)

    @layer_asset(
        deps=[facts],
        description="Layer 4: vectors for new facts (sentence-transformers) in embeddings.db and the search index.",
    )
    def embeddings(
        context: dg.AssetExecutionContext, stores: StoresResource, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        reports = run_batches(
            context.op_execution_context, partitions_def, stores, "embeddings", embedder=embedder.get()
        )
        return dg.MaterializeResult(metadata=batch_metadata(reports))

    return [events, episodes, facts, embeddings]
