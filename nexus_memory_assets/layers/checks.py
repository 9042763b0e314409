"""Asset checks of the four layer assets, evaluated in the run that materialises the asset.

Per-partition invariants look only at the run's partitions, so a backfill half done is not failed
for the partitions it has not reached; what no partition owns (identity merges, orphaned links, the
derived indexes' row counts) is checked over the whole store. A check blocks the steps after it where
a broken invariant would spread: overlapping episodes or memberships of missing events would reach
the writer, facts without provenance or merges without a candidate would be embedded and recalled.
The derived indexes (keyword, vector) do not block: they are rebuilt from the tables, as each says.
`fact_vectors_current` samples the whole store.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.step import StaleVectors, stale_fact_vectors
from nexus_memory.events.partitions import partition_key
from nexus_memory.pipeline.invariants import (
    active_model,
    episode_events_without_event,
    events_without_episode,
    facts_missing_from_keyword_index,
    facts_without_active_vector,
    facts_without_source_event,
    index_rows_without_vector,
    keyword_index_rows_off,
    merges_without_candidate,
    orphan_links,
    overlapping_episodes,
    vectors_missing_from_index,
)
from nexus_memory.writer.run import FailedEpisode, failed_episodes
from nexus_memory_assets.layers.assets import failed_episodes_table
from nexus_memory_assets.partitions import run_days
from resources import StoresResource

# (stores, platform, ledger days) -> rows breaking the invariant
Counter = Callable[[Stores, str, list[str]], int]
# (stores) -> rows breaking the invariant anywhere in the store (for what no partition owns)
StoreCounter = Callable[[Stores], int]


@dataclass(frozen=True)
class Invariant:
    """A check that passes when no counter finds a row breaking the invariant: `per_partition` counters
    in the run's partitions (with the count per platform), `whole_store` ones once over the store.

    Only a check with per-partition counters is partitioned: Dagster records a partitioned check's
    result for each partition of the run, which says nothing more about a whole-store invariant.
    """

    name: str
    asset: str
    description: str
    per_partition: dict[str, Counter] = field(default_factory=dict)
    whole_store: dict[str, StoreCounter] = field(default_factory=dict)
    blocking: bool = False
    fix: str | None = None  # what to do when it fails


INVARIANTS = [
    Invariant(
        "episodes_cover_events",
        "episodes",
        "Every event of the run's partitions belongs to a writer episode.",
        per_partition={"events_without_episode": events_without_episode},
    ),
    Invariant(
        "episodes_do_not_overlap",
        "episodes",
        "No current episode of the run's partitions overlaps in time another of the same definition and "
        "thread: the writer would read the same events twice. Blocks the writer when one does.",
        per_partition={"overlapping_episodes": overlapping_episodes},
        blocking=True,
    ),
    Invariant(
        "episode_links_intact",
        "episodes",
        "Every episode membership points at an episode and at an event that exist (episode_events). "
        "Blocks the writer when one does not.",
        per_partition={"members_without_event": episode_events_without_event},
        whole_store={"members_without_episode": lambda opened: orphan_links(opened)["episode_events"]},
        blocking=True,
    ),
    Invariant(
        "facts_have_provenance",
        "facts",
        "Every fact written for the run's partitions points at an event that exists (provenance); "
        "blocks embedding when one does not.",
        per_partition={"facts_without_source_event": facts_without_source_event},
        blocking=True,
    ),
    Invariant(
        "facts_in_keyword_index",
        "facts",
        "The keyword index (facts_fts) has a row for every fact of the run's partitions, and as many rows "
        "as there are facts.",
        per_partition={"facts_not_in_keyword_index": facts_missing_from_keyword_index},
        whole_store={"keyword_index_rows_off_by": keyword_index_rows_off},
        fix="Rebuild the keyword index: INSERT INTO facts_fts(facts_fts) VALUES ('rebuild') in memory.db.",
    ),
    Invariant(
        "fact_links_intact",
        "facts",
        "Every fact-entity link (fact_entities) and observation-fact link (observation_facts) points at rows "
        "that exist.",
        whole_store={
            "fact_entities_orphaned": lambda opened: orphan_links(opened)["fact_entities"],
            "observation_facts_orphaned": lambda opened: orphan_links(opened)["observation_facts"],
        },
    ),
    Invariant(
        "merges_have_candidates",
        "facts",
        "Every merged entity was merged by an accepted (or automatic) merge candidate: no identity changes "
        "without a record a person can review and undo. Blocks embedding when one was not.",
        whole_store={"merges_without_candidate": lambda opened: len(merges_without_candidate(opened))},
        blocking=True,
    ),
    Invariant(
        "facts_embedded",
        "embeddings",
        "Every fact of the run's partitions has a vector of the model the search index serves.",
        per_partition={"facts_without_vector": facts_without_active_vector},
    ),
    Invariant(
        "vector_index_matches_embeddings",
        "embeddings",
        "The search index (vec0) holds exactly the canonical vectors of the model it serves: one row for "
        "each of the run's partitions' fact vectors, and no row that is not one.",
        per_partition={"vectors_not_in_index": vectors_missing_from_index},
        whole_store={"index_rows_without_vector": index_rows_without_vector},
        fix="Rebuild the search index from the canonical vectors: nexus-memory rebuild-index.",
    ),
]


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


def invariant_result(
    invariant: Invariant, counts: dict[str, int], by_platform: dict[str, dict[str, int]]
) -> dg.AssetCheckResult:
    """Passed when every count is 0; metadata: the counts, and per-partition counts per platform."""
    metadata: dict[str, Any] = dict(counts)
    if len(by_platform) == 1:
        metadata["by_platform"] = next(iter(by_platform.values()))
    else:
        metadata.update((f"{metric}_by_platform", value) for metric, value in by_platform.items())
    broken = sum(counts.values())
    return dg.AssetCheckResult(passed=not broken, metadata=metadata, description=invariant.fix if broken else None)


def invariant_check(partitions_def: dg.MultiPartitionsDefinition, invariant: Invariant) -> dg.AssetChecksDefinition:
    """The asset check of one invariant over these partitions."""

    @dg.asset_check(
        name=invariant.name,
        asset=invariant.asset,
        partitions_def=partitions_def if invariant.per_partition else None,
        blocking=invariant.blocking,
        description=invariant.description,
    )
    def check(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
        counts: dict[str, int] = {}
        by_platform: dict[str, dict[str, int]] = {}
        for metric, count in invariant.per_partition.items():
            counts[metric], by_platform[metric] = count_in_run(context, partitions_def, stores, count)
        with stores.open() as opened:
            for metric, store_count in invariant.whole_store.items():
                counts[metric] = store_count(opened)
        return invariant_result(invariant, counts, by_platform)

    return check


def no_failed_episodes_check(partitions_def: dg.MultiPartitionsDefinition) -> dg.AssetChecksDefinition:
    """No writer episode of the run's partitions is left failed; the failures as a table when one is."""

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
            metadata["failures"] = failed_episodes_table(found[:100])
        return dg.AssetCheckResult(passed=not found, metadata=metadata)

    return no_failed_episodes


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


def build_layer_checks(partitions_def: dg.MultiPartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    """The checks of the four layer assets over these partitions."""
    return [
        *(invariant_check(partitions_def, invariant) for invariant in INVARIANTS),
        no_failed_episodes_check(partitions_def),
        fact_vectors_current,
    ]
