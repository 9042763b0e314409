"""What the asset checks verify, for the ledger days of one platform: counts of rows that break an invariant."""

from __future__ import annotations

import json
from collections.abc import Sequence

from nexus_memory.episodes import DEFINITIONS, WRITER_DEFINITION
from nexus_memory.partitions import partition_key
from nexus_memory.stores import Stores
from nexus_memory.vectors.vec0 import index_state


def events_without_episode(stores: Stores, platform: str, days: Sequence[str]) -> int:
    """Events of these days that no writer episode holds (the writer would never see them)."""
    return stores.conn.execute(
        """SELECT count(*) FROM events e
           WHERE e.platform = ? AND e.day IN (SELECT value FROM json_each(?)) AND NOT EXISTS (
               SELECT 1 FROM episode_events ee JOIN episodes ep ON ep.id = ee.episode_id
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
