"""What the asset checks verify: counts of rows that break an invariant, for the ledger days of one platform
(what a run's partitions hold) or, for what no partition owns (identity, derived indexes), the whole store."""

from __future__ import annotations

import json
from collections.abc import Sequence

from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.vectors.vec0 import index_state
from nexus_memory.episodes.grouping import DEFINITIONS, WRITER_DEFINITION
from nexus_memory.events.partitions import partition_key


def events_without_episode(stores: Stores, platform: str, days: Sequence[str]) -> int:
    """Events of these days that no writer episode holds (the writer would never see them).

    CROSS JOIN: memberships looked up by event id (see layers._EVENT_HAS_WORK_LEFT)."""
    return stores.conn.execute(
        """SELECT count(*) FROM events e
           WHERE e.platform = ? AND e.day IN (SELECT value FROM json_each(?)) AND NOT EXISTS (
               SELECT 1 FROM episode_events ee CROSS JOIN episodes ep ON ep.id = ee.episode_id
               WHERE ee.event_id = e.id AND ep.definition_id = ?)""",
        (platform, json.dumps(list(days)), DEFINITIONS[WRITER_DEFINITION].id),
    ).fetchone()[0]


def facts_without_source_event(stores: Stores, platform: str, days: Sequence[str]) -> int:
    """Facts written for these days' episodes whose source event is unset or does not exist."""
    keys = [partition_key(day, platform) for day in days]
    return stores.conn.execute(
        """SELECT count(*) FROM facts f
           WHERE json_extract(f.metadata, '$.episode_id') IN (
                   SELECT id FROM episodes WHERE partition_key IN (SELECT value FROM json_each(?)))
             AND (f.source_event_id IS NULL
                  OR NOT EXISTS (SELECT 1 FROM events e WHERE e.id = f.source_event_id))""",
        (json.dumps(keys),),
    ).fetchone()[0]


def active_model(stores: Stores) -> str | None:
    """The embedding model the search index serves (None before anything was embedded)."""
    state = index_state(stores.conn)
    return state[0] if state else None


def facts_without_vector(stores: Stores, platform: str, days: Sequence[str], model: str | None) -> int:
    """Facts drawn from these days' events with no vector of `model` (every such fact when model is None)."""
    return stores.conn.execute(
        """SELECT count(*) FROM facts f JOIN events e ON e.id = f.source_event_id
           WHERE e.platform = ? AND e.day IN (SELECT value FROM json_each(?)) AND NOT EXISTS (
               SELECT 1 FROM embeddings m WHERE m.target_type = 'fact' AND m.target_id = f.id AND m.model IS ?)""",
        (platform, json.dumps(list(days)), model),
    ).fetchone()[0]


def facts_without_active_vector(stores: Stores, platform: str, days: Sequence[str]) -> int:
    """Facts drawn from these days' events with no vector of the model the search index serves."""
    return facts_without_vector(stores, platform, days, active_model(stores))


# --- the store's derived indexes and links -----------------------------------------------------------


def facts_missing_from_keyword_index(stores: Stores, platform: str, days: Sequence[str]) -> int:
    """Facts drawn from these days' events that the keyword index (facts_fts) holds no row for."""
    return stores.conn.execute(
        """SELECT count(*) FROM facts f JOIN events e ON e.id = f.source_event_id
           WHERE e.platform = ? AND e.day IN (SELECT value FROM json_each(?))
             AND NOT EXISTS (SELECT 1 FROM facts_fts_docsize d WHERE d.id = f.rowid)""",
        (platform, json.dumps(list(days))),
    ).fetchone()[0]


def keyword_index_rows_off(stores: Stores) -> int:
    """How far the keyword index's row count is from the facts table's (0: one index row per fact)."""
    indexed = stores.conn.execute("SELECT count(*) FROM facts_fts_docsize").fetchone()[0]
    return abs(indexed - stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0])


def vectors_missing_from_index(stores: Stores, platform: str, days: Sequence[str]) -> int:
    """Canonical vectors of these days' facts, of the model the search index serves, with no index row."""
    return stores.conn.execute(
        """SELECT count(*) FROM facts f JOIN events e ON e.id = f.source_event_id
            JOIN embeddings m ON m.target_type = 'fact' AND m.target_id = f.id AND m.model = ?
            WHERE e.platform = ? AND e.day IN (SELECT value FROM json_each(?))
              AND m.rowid NOT IN (SELECT rowid FROM vec_embeddings)""",  # vec0 finds no row by rowid fast
        (active_model(stores), platform, json.dumps(list(days))),
    ).fetchone()[0]


def index_rows_without_vector(stores: Stores) -> int:
    """Search-index rows that are no canonical vector of the model the index serves (stale or foreign)."""
    return stores.conn.execute(
        """SELECT count(*) FROM vec_embeddings v WHERE NOT EXISTS (
               SELECT 1 FROM embeddings m WHERE m.rowid = v.rowid AND m.model IS ?)""",
        (active_model(stores),),
    ).fetchone()[0]


def episode_events_without_event(stores: Stores, platform: str, days: Sequence[str]) -> int:
    """Memberships of these days' episodes that point at an event the ledger does not hold."""
    keys = [partition_key(day, platform) for day in days]
    return stores.conn.execute(
        """SELECT count(*) FROM episode_events ee JOIN episodes ep ON ep.id = ee.episode_id
           WHERE ep.partition_key IN (SELECT value FROM json_each(?))
             AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = ee.event_id)""",
        (json.dumps(keys),),
    ).fetchone()[0]


def orphan_links(stores: Stores) -> dict[str, int]:
    """Junction rows whose either end is gone, per table (episode_events, fact_entities, observation_facts).

    Links inside one store are also guarded by foreign keys; links across stores (a fact to an entity
    of identity.db, an episode to an event of events.db) only by the code that writes them.
    """
    q = stores.conn.execute
    return {
        "episode_events": q(
            """SELECT count(*) FROM episode_events ee
               WHERE NOT EXISTS (SELECT 1 FROM episodes ep WHERE ep.id = ee.episode_id)"""
        ).fetchone()[0],
        "fact_entities": q(
            """SELECT count(*) FROM fact_entities fe
               WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE f.id = fe.fact_id)
                  OR NOT EXISTS (SELECT 1 FROM entities n WHERE n.id = fe.entity_id)"""
        ).fetchone()[0],
        "observation_facts": q(
            """SELECT count(*) FROM observation_facts o
               WHERE NOT EXISTS (SELECT 1 FROM analysis_runs a WHERE a.id = o.analysis_run_id)
                  OR NOT EXISTS (SELECT 1 FROM facts f WHERE f.id = o.fact_id)"""
        ).fetchone()[0],
    }


def overlapping_episodes(stores: Stores, platform: str, days: Sequence[str]) -> int:
    """Current episodes of these days that overlap in time another current episode of the same
    definition and thread (or session): the same events would reach the writer twice.

    Current: no later version extends it (a version's parent stays, by design, and is not counted).
    Episodes that only touch (one ends as the next begins) do not overlap; two that begin at once do.
    """
    keys = [partition_key(day, platform) for day in days]
    return stores.conn.execute(
        """SELECT count(DISTINCT a.id) FROM episodes a JOIN episodes b
             ON b.definition_id = a.definition_id AND b.group_key = a.group_key AND b.id != a.id
            AND ((b.start_time < a.end_time AND a.start_time < b.end_time) OR b.start_time = a.start_time)
           WHERE a.partition_key IN (SELECT value FROM json_each(?))
             AND NOT EXISTS (SELECT 1 FROM episodes c WHERE c.parent_id = a.id)
             AND NOT EXISTS (SELECT 1 FROM episodes c WHERE c.parent_id = b.id)""",
        (json.dumps(keys),),
    ).fetchone()[0]


def merges_without_candidate(stores: Stores) -> list[str]:
    """Entities merged into another with no accepted (or automatic) merge candidate behind the merge.

    A candidate (a, b) merges b's then-live entity into a's then-live one, so it explains the merge of
    any entity on b's merged_into chain into one on a's chain.
    """
    merged = dict(stores.conn.execute("SELECT id, merged_into FROM entities WHERE merged_into IS NOT NULL"))

    def chain(entity_id: str) -> list[str]:
        path = [entity_id]
        while path[-1] in merged and merged[path[-1]] not in path:
            path.append(merged[path[-1]])
        return path

    explained: set[str] = set()
    for a, b in stores.conn.execute(
        "SELECT entity_a_id, entity_b_id FROM merge_candidates WHERE status IN ('accepted', 'auto_merged')"
    ):
        winners = set(chain(a))
        explained.update(node for node in chain(b) if merged.get(node) in winners)
    return sorted(set(merged) - explained)
