"""Asset checks of `observations`: no near-duplicate observations, and no link to a fact that is gone."""

import dagster as dg

from nexus_memory.observations.duplicates import near_duplicate_pairs
from nexus_memory.observations.store import dangling_observation_facts
from nexus_memory_assets.consolidation.assets import observations
from resources import StoresResource


@dg.asset_check(asset=observations, description="No two current observations of one entity are near-duplicates.")
def observations_not_duplicated(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
    with stores.open() as s:
        pairs = near_duplicate_pairs(s.conn)
    return dg.AssetCheckResult(
        passed=not pairs,
        metadata={"near_duplicate_pairs": len(pairs), "examples": dg.MetadataValue.json([list(p) for p in pairs[:5]])},
    )


@dg.asset_check(asset=observations, description="observation_facts only point at facts that exist (provenance).")
def observation_facts_exist(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
    with stores.open() as s:
        dangling = dangling_observation_facts(s.conn)
    return dg.AssetCheckResult(passed=dangling == 0, metadata={"links_to_missing_facts": dangling})
