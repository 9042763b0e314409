"""Asset checks: store-wide invariants of each layer, evaluated after each materialisation."""

import dagster as dg

from nexus_memory.embeddings import StaleVectors, stale_fact_vectors
from nexus_memory.episodes import DEFINITIONS, WRITER_DEFINITION
from nexus_memory.vectors.vec0 import index_state
from nexus_memory_assets.assets import embeddings, episodes, facts
from resources import StoresResource


@dg.asset_check(asset=episodes, description="Every event belongs to a writer episode.")
def episodes_cover_events(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
    with stores.open() as s:
        missing = s.conn.execute(
            """SELECT count(*) FROM events e WHERE NOT EXISTS (
                   SELECT 1 FROM episode_events ee JOIN episodes ep ON ep.id = ee.episode_id
                   WHERE ee.event_id = e.id AND ep.definition_id = ?)""",
            (DEFINITIONS[WRITER_DEFINITION].id,),
        ).fetchone()[0]
    return dg.AssetCheckResult(passed=missing == 0, metadata={"events_without_episode": missing})


@dg.asset_check(asset=facts, description="Every fact points at an event that exists (provenance).")
def facts_have_provenance(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
    with stores.open() as s:
        orphans = s.conn.execute(
            """SELECT count(*) FROM facts f WHERE f.source_event_id IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = f.source_event_id)"""
        ).fetchone()[0]
    return dg.AssetCheckResult(passed=orphans == 0, metadata={"facts_with_missing_event": orphans})


@dg.asset_check(asset=facts, description="No episode is left failed (warns; rerun to clear).")
def no_failed_episodes(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
    with stores.open() as s:
        failed = s.conn.execute("SELECT count(*) FROM episode_processing WHERE status = 'failed'").fetchone()[0]
    return dg.AssetCheckResult(
        passed=failed == 0, severity=dg.AssetCheckSeverity.WARN, metadata={"failed_episodes": failed}
    )


@dg.asset_check(asset=embeddings, description="Every fact has a vector for the active model.")
def facts_embedded(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
    with stores.open() as s:
        missing = s.conn.execute(
            """SELECT count(*) FROM facts f WHERE NOT EXISTS (
                   SELECT 1 FROM embeddings m WHERE m.target_type = 'fact' AND m.target_id = f.id)"""
        ).fetchone()[0]
    return dg.AssetCheckResult(passed=missing == 0, metadata={"facts_without_vector": missing})


@dg.asset_check(
    asset=embeddings,
    description="The newest 1,000 fact vectors were made from the text embedded today (warns; run reembed_job).",
)
def fact_vectors_current(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
    with stores.open() as s:
        state = index_state(s.conn)
        found = stale_fact_vectors(s.conn, state[0]) if state else StaleVectors(checked=0, stale=0, unknown=0)
    outdated = found.stale + found.unknown
    return dg.AssetCheckResult(
        passed=outdated == 0,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"checked": found.checked, "stale": found.stale, "unknown": found.unknown},
        description=None
        if outdated == 0
        else f"{outdated} of the newest {found.checked} fact vectors were made from another text than today's "
        "(the embedded text changed, or they predate text hashes): launch reembed_job.",
    )
