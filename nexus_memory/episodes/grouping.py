"""Episodes: events grouped by time gap within a thread, by session, or by token budget.

Episodes are immutable. When new events extend an episode (a thread that goes on past midnight,
a late import), a new version is created with `parent_id` pointing at the old one, which stays.
Grouping is deterministic: episode ids hash their definition and event ids, so re-running a
partition creates nothing new.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms, stable_id
from nexus_memory.core.stores import Stores
from nexus_memory.core.tokens import estimate_tokens
from nexus_memory.events.ledger import Event, row_to_event
from nexus_memory.events.partitions import partition_key

WRITER_DEFINITION = "thread_gap_30m"
# An event's columns as `ledger_event` reads them (select them as EVENT_COLUMNS from `events e`).
_EVENT_FIELDS = (
    "id",
    "platform",
    "sender_id",
    "content",
    "as_of",
    "direction",
    "sender_name",
    "peer_id",
    "peer_kind",
    "thread_id",
    "session_id",
    "metadata",
    "source",
)
EVENT_COLUMNS = ", ".join(f"e.{name}" for name in _EVENT_FIELDS)


@dataclass(frozen=True)
class EpisodeDefinition:
    """How to cut a platform's events into episodes."""

    name: str
    strategy: str  # 'time_gap' | 'session' | 'token_budget'
    gap_minutes: int = 30
    max_tokens: int = 6000
    description: str = ""

    @property
    def id(self) -> str:
        return f"def_{self.name}"

    def group_key(self, event: Event) -> str:
        if self.strategy == "session":
            return event.session_id or event.thread_id or event.peer_id or event.sender_id
        return event.thread_id or event.session_id or event.peer_id or event.sender_id


DEFINITIONS: dict[str, EpisodeDefinition] = {
    d.name: d
    for d in (
        EpisodeDefinition(
            "thread_gap_30m",
            "time_gap",
            30,
            6000,
            "A thread's events until a 30-minute silence, capped at ~6K tokens. The writer's input.",
        ),
        EpisodeDefinition("session", "session", 0, 8000, "One agent/chat session, capped at ~8K tokens."),
        EpisodeDefinition(
            "backfill_6k",
            "token_budget",
            0,
            6000,
            "A thread's events packed into ~4-8K-token chunks for bulk backfill extraction.",
        ),
    )
}


@dataclass
class EpisodeBuildStats:
    """What one build_episodes call did: events read, episodes created, extended or left as they were."""

    events: int = 0
    created: int = 0
    extended: int = 0
    unchanged: int = 0
    by_definition: dict[str, int] = field(default_factory=dict)


def ensure_definitions(stores: Stores) -> None:
    """Seed episode_definitions with the built-in strategies."""
    for d in DEFINITIONS.values():
        stores.conn.execute(
            """INSERT OR IGNORE INTO episode_definitions (id, name, strategy, params, description, created_at)
               VALUES (?, ?, ?, ?, ?, ?)""",
            (
                d.id,
                d.name,
                d.strategy,
                json.dumps({"gap_minutes": d.gap_minutes, "max_tokens": d.max_tokens}),
                d.description,
                now_ms(),
            ),
        )


def partition_events(stores: Stores, day: str, platform: str) -> list[Event]:
    rows = stores.conn.execute(
        "SELECT * FROM events WHERE platform = ? AND day = ? ORDER BY as_of, id", (platform, day)
    ).fetchall()
    return [row_to_event(r) for r in rows]


def split(events: Sequence[Event], definition: EpisodeDefinition) -> list[list[Event]]:
    """Cut time-ordered events into chunks by the definition's key, gap and token budget."""
    by_key: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_key[definition.group_key(event)].append(event)
    chunks: list[list[Event]] = []
    gap_ms = definition.gap_minutes * 60_000
    for key_events in by_key.values():
        current: list[Event] = []
        tokens = 0
        for event in key_events:
            cost = estimate_tokens(event.content)
            gap_break = definition.strategy == "time_gap" and current and event.as_of - current[-1].as_of > gap_ms
            if current and (gap_break or tokens + cost > definition.max_tokens):
                chunks.append(current)
                current, tokens = [], 0
            current.append(event)
            tokens += cost
        if current:
            chunks.append(current)
    return chunks


def build_episodes(
    stores: Stores,
    day: str,
    platform: str,
    definitions: Sequence[str] = (WRITER_DEFINITION,),
    *,
    events: Sequence[Event] | None = None,
) -> EpisodeBuildStats:
    """Group one (day, platform) partition's events into episodes for each definition; `events` are the
    partition's events (`partition_events`) when the caller read them already."""
    stats = EpisodeBuildStats()
    events = partition_events(stores, day, platform) if events is None else events
    stats.events = len(events)
    key = partition_key(day, platform)
    with stores.transaction():
        ensure_definitions(stores)
        for name in definitions:
            definition = DEFINITIONS[name]
            chunks = split(events, definition)
            for chunk in chunks:
                outcome = _store_chunk(stores, definition, chunk, platform, key)
                setattr(stats, outcome, getattr(stats, outcome) + 1)
            stats.by_definition[name] = len(chunks)
    return stats


def _store_chunk(
    stores: Stores, definition: EpisodeDefinition, chunk: list[Event], platform: str, partition_key: str
) -> str:
    """Insert a chunk as a new episode or a new version of the one it extends."""
    conn = stores.conn
    key = definition.group_key(chunk[0])
    chunk_ids = [e.id for e in chunk]
    parent = _episode_extended_by(stores, definition, key, chunk)
    if parent is not None:
        parent_events = [
            r[0]
            for r in conn.execute(
                "SELECT event_id FROM episode_events WHERE episode_id = ? ORDER BY position", (parent["id"],)
            )
        ]
        if set(chunk_ids) <= set(parent_events):
            return "unchanged"
        rows = conn.execute(
            f"SELECT * FROM events WHERE id IN ({db.placeholders(parent_events)})", parent_events
        ).fetchall()
        merged = {e.id: e for e in map(row_to_event, rows)}
        merged.update({e.id: e for e in chunk})
        members = sorted(merged.values(), key=lambda e: (e.as_of, e.id))
    else:
        members = chunk
    member_ids = [e.id for e in members]
    episode_id = stable_id("ep", definition.id, *member_ids)
    while conn.execute("SELECT 1 FROM episodes WHERE id = ?", (episode_id,)).fetchone():
        held = {r[0] for r in conn.execute("SELECT event_id FROM episode_events WHERE episode_id = ?", (episode_id,))}
        if held == set(member_ids):
            return "unchanged"
        # A forget edits a version in place and it keeps the name its old members gave it (lifecycle/forget/
        # episodes.py): a forgotten event ingested again makes those members a new version, named apart.
        episode_id = stable_id("ep", definition.id, *member_ids, episode_id)
    tokens = sum(estimate_tokens(e.content) for e in members)
    conn.execute(
        """INSERT INTO episodes (id, definition_id, platform, thread_id, start_time, end_time, event_count,
               first_event_id, last_event_id, parent_id, created_at, partition_key, group_key, token_estimate)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            episode_id,
            definition.id,
            platform,
            members[0].thread_id,
            members[0].as_of,
            members[-1].as_of,
            len(members),
            member_ids[0],
            member_ids[-1],
            parent["id"] if parent else None,
            now_ms(),
            partition_key,
            key,
            tokens,
        ),
    )
    conn.executemany(
        "INSERT INTO episode_events (episode_id, event_id, position) VALUES (?, ?, ?)",
        [(episode_id, event_id, i) for i, event_id in enumerate(member_ids)],
    )
    return "extended" if parent else "created"


def _episode_extended_by(stores: Stores, definition: EpisodeDefinition, key: str, chunk: list[Event]) -> Any:
    """The latest version of an episode that this chunk overlaps or continues, if any."""
    # A session continues however long the pause; a thread continues only within the gap.
    gap_ms = definition.gap_minutes * 60_000 if definition.strategy == "time_gap" else 10**15
    chunk_tokens = sum(estimate_tokens(e.content) for e in chunk)
    # Either way it ends at or after chunk[0].as_of - gap (an episode holding one of the chunk's events ends at
    # or after it): the index range stops there instead of going through the thread's whole history.
    return stores.conn.execute(
        """SELECT ep.* FROM episodes ep
           WHERE ep.definition_id = ? AND ep.group_key = ? AND ep.end_time >= ? - ?
             AND NOT EXISTS (SELECT 1 FROM episodes child WHERE child.parent_id = ep.id)
             AND (EXISTS (SELECT 1 FROM episode_events ee WHERE ee.episode_id = ep.id
                          AND ee.event_id IN (SELECT value FROM json_each(?)))
                  OR (ep.end_time <= ? AND ep.end_time >= ? - ? AND ep.token_estimate + ? <= ?
                      AND ? != 'token_budget'))
           ORDER BY ep.end_time DESC LIMIT 1""",
        (
            definition.id,
            key,
            chunk[0].as_of,
            gap_ms,
            json.dumps([e.id for e in chunk]),
            chunk[0].as_of,
            chunk[0].as_of,
            gap_ms,
            chunk_tokens,
            definition.max_tokens,
            definition.strategy,
        ),
    ).fetchone()


def episode_events(stores: Stores, episode_id: str) -> list[Event]:
    rows = stores.conn.execute(
        f"""SELECT {EVENT_COLUMNS} FROM episode_events ee JOIN events e ON e.id = ee.event_id
            WHERE ee.episode_id = ? ORDER BY ee.position""",
        (episode_id,),
    ).fetchall()
    return [ledger_event(tuple(r)) for r in rows]


# The writer reads each event again as context of every later episode of its thread (up to 20 times).
@functools.lru_cache(maxsize=8192)
def ledger_event(values: tuple[Any, ...]) -> Event:
    """The Event of an `events` row selected as EVENT_COLUMNS: the same values give the same (immutable) Event."""
    return row_to_event(dict(zip(_EVENT_FIELDS, values, strict=True)))
