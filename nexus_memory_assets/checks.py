"""Asset checks, evaluated in the run that materialises the asset.

Per-partition invariants look only at the run's partitions, so a backfill half done is not failed
for the partitions it has not reached. `facts_have_provenance` blocks: a fact without its source
event must not be embedded and recalled. `fact_vectors_current` samples the whole store.
"""

from collections.abc import Callable

import dagster as dg

from nexus_memory.embeddings import StaleVectors, stale_fact_vectors
from nexus_memory.invariants import (
    active_model,
    events_without_episode,
    facts_without_active_vector,
    facts_without_source_event,
)
from nexus_memory.partitions import partition_key
from nexus_memory.stores import Stores
from nexus_memory.writer.run import FailedEpisode, failed_episodes
from nexus_memory_assets.assets import md_table
from nexus_memory_assets.partitions import run_days
from resources import StoresResource

# (stores, platform, ledger days) -> rows breaking the invariant
Counter = Callable[[Stores, str, list[str]], int]


def count_in_run(
    context: dg.AssetCheckExecutionContext,
    partitions_def: dg.MultiPartitionsDefinition,
    stores: StoresResource,
    count: Counter,
) -> tuple[int, dict[str, int]]:
    """Rows breaking an invariant in the run's partitions: the total and the count per platform."""
    per_platform: dict[str, int] = {}
    with stores.open() as opened:
        for platform, days in run_days(context.op_execution_context, partitions_def, opened):
            per_platform[platform] = count(opened, platform, days)
    return sum(per_platform.values()), per_platform


def build_layer_checks(partitions_def: dg.MultiPartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    """The checks of the four layer assets over these partitions."""

    def invariant(
        name: str, asset: str, metric: str, count: Counter, description: str, blocking: bool = False
    ) -> dg.AssetChecksDefinition:
        """A check that passes when `count` finds no row breaking the invariant in the run's partitions."""

        @dg.asset_check(
            name=name, asset=asset, partitions_def=partitions_def, blocking=blocking, description=description
        )
        def check(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
            broken, per_platform = count_in_run(context, partitions_def, stores, count)
            return dg.AssetCheckResult(passed=broken == 0, metadata={metric: broken, "by_platform": per_platform})

        return check

    episodes_cover_events = invariant(
        "episodes_cover_events",
        "episodes",
        "events_without_episode",
        events_without_episode,
        "Every event of the run's partitions belongs to a writer episode.",
    )
    facts_have_provenance = invariant(
        "facts_have_provenance",
        "facts",
        "facts_without_source_event",
        facts_without_source_event,
        "Every fact written for the run's partitions points at an event that exists (provenance); "
        "blocks embedding when one does not.",
        blocking=True,
    )
    facts_embedded = invariant(
        "facts_embedded",
        "embeddings",
        "facts_without_vector",
        facts_without_active_vector,
        "Every fact of the run's partitions has a vector of the model the search index serves.",
    )

    @dg.asset_check(
        asset="facts",
        partitions_def=partitions_def,
        description="No writer episode of the run's partitions is left failed (rerun_failed_episodes clears it).",
    )
    def no_failed_episodes(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
        found: list[FailedEpisode] = []

        def failed(opened: Stores, platform: str, days: list[str]) -> int:
            mine = failed_episodes(opened, [partition_key(day, platform) for day in days])
            found.extend(mine)
            return len(mine)

        count_in_run(context, partitions_def, stores, failed)
        metadata: dict[str, object] = {"failed_episodes": len(found)}
        if found:
            metadata["failures"] = md_table(
                ["partition", "episode", "attempts", "error"],
                [[f.partition_key, f.episode_id, f.attempts, f.error] for f in found[:100]],
            )
        return dg.AssetCheckResult(passed=not found, metadata=metadata)

    @dg.asset_check(
        asset="embeddings",
        description="The newest 1,000 fact vectors were made from the text embedded today (warns; run reembed_job).",
    )
    def fact_vectors_current(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
        with stores.open() as opened:
            model = active_model(opened)
            found = stale_fact_vectors(opened.conn, model) if model else StaleVectors(checked=0, stale=0, unknown=0)
        outdated = found.stale + found.unknown
        return dg.AssetCheckResult(
            passed=outdated == 0,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"checked": found.checked, "stale": found.stale, "unknown": found.unknown},
            description=None
            if outdated == 0
            else f"{outdated} of the newest {found.checked} fact vectors were made from another text than "
            "today's (the embedded text changed, or they predate text hashes): launch reembed_job.",
        )

    return [episodes_cover_events, facts_have_provenance, no_failed_episodes, facts_embedded, fact_vectors_current]
