"""Episodes without the forgotten events: the versions that held them go, the latest comes back without them.

Episodes are immutable and versioned by parent_id, and a newer version holds every event of the one it
extends. So every version that lists a forgotten event is removed, and where the latest version of a
chain had other events, a new version with just those takes its place (id as episodes.py makes them,
so rebuilding the partition later finds it unchanged). Its writer outcome is carried over: its events
were processed, and the writer skips them anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms, stable_id
from nexus_memory.core.tokens import estimate_tokens


@dataclass
class EpisodeChanges:
    """Episode versions removed and created by one forget."""

    removed: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)


def episodes_holding(conn: db.Connection, event_ids: Sequence[str]) -> list[str]:
    """Every episode version that lists one of these events."""
    return sorted(
        db.column_in(conn, "SELECT DISTINCT episode_id FROM episode_events WHERE event_id IN ({marks})", event_ids)
    )


def rebuild_without(conn: db.Connection, event_ids: Sequence[str], forgotten_entities: Sequence[str]) -> EpisodeChanges:
    """Remove every episode version holding a forgotten event; re-create the latest ones without them.

    Call before the events are deleted (the new versions' times and token counts come from them) and
    after the analysis runs on the removed versions are gone.
    """
    changes = EpisodeChanges(removed=episodes_holding(conn, event_ids))
    if not changes.removed:
        return changes
    doomed_events, doomed = set(event_ids), set(changes.removed)
    replacements: dict[str, str | None] = {}
    for episode_id in changes.removed:
        if _is_latest(conn, episode_id):
            new_id = _new_version(conn, episode_id, doomed_events, doomed, set(forgotten_entities))
            if new_id:
                changes.created.append(new_id)
            replacements[episode_id] = new_id
    # New versions point at the nearest surviving ancestor; the removed ones are detached from each other first,
    # so chunked deletes never leave a version pointing at a deleted one.
    db.execute_in(conn, "UPDATE episodes SET parent_id = NULL WHERE id IN ({marks})", changes.removed)
    db.execute_in(conn, "DELETE FROM episodes WHERE id IN ({marks})", changes.removed)
    return changes


def _is_latest(conn: db.Connection, episode_id: str) -> bool:
    return conn.execute("SELECT 1 FROM episodes WHERE parent_id = ? LIMIT 1", (episode_id,)).fetchone() is None


def _surviving_ancestor(conn: db.Connection, episode_id: str, doomed: set[str]) -> str | None:
    parent = conn.execute("SELECT parent_id FROM episodes WHERE id = ?", (episode_id,)).fetchone()[0]
    while parent is not None and parent in doomed:
        parent = conn.execute("SELECT parent_id FROM episodes WHERE id = ?", (parent,)).fetchone()[0]
    return parent


def _new_version(
    conn: db.Connection, episode_id: str, doomed_events: set[str], doomed: set[str], forgotten_entities: set[str]
) -> str | None:
    """The latest version again without the forgotten events; None when nothing else was in it."""
    old = conn.execute("SELECT * FROM episodes WHERE id = ?", (episode_id,)).fetchone()
    rows = conn.execute(
        """SELECT ee.event_id, ev.as_of, ev.content, ev.thread_id FROM episode_events ee
           JOIN events ev ON ev.id = ee.event_id WHERE ee.episode_id = ? ORDER BY ee.position""",
        (episode_id,),
    ).fetchall()
    kept = [r for r in rows if r[0] not in doomed_events]
    if not kept:
        return None
    member_ids = [r[0] for r in kept]
    new_id = stable_id("ep", old["definition_id"], *member_ids)
    if conn.execute("SELECT 1 FROM episodes WHERE id = ?", (new_id,)).fetchone():
        return new_id if new_id not in doomed else None  # an older version that held exactly these events
    conn.execute(
        """INSERT INTO episodes (id, definition_id, platform, thread_id, start_time, end_time, event_count,
               first_event_id, last_event_id, parent_id, created_at, partition_key, group_key, token_estimate)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            new_id,
            old["definition_id"],
            old["platform"],
            kept[0][3],
            kept[0][1],
            kept[-1][1],
            len(kept),
            member_ids[0],
            member_ids[-1],
            _surviving_ancestor(conn, episode_id, doomed),
            now_ms(),
            old["partition_key"],
            old["group_key"],
            sum(estimate_tokens(r[2]) for r in kept),
        ),
    )
    conn.executemany(
        "INSERT INTO episode_events (episode_id, event_id, position) VALUES (?, ?, ?)",
        [(new_id, event_id, i) for i, event_id in enumerate(member_ids)],
    )
    conn.execute(
        """INSERT INTO episode_processing (episode_id, status, writer, attempts, facts_written, prompt_tokens,
               completion_tokens, error, updated_at)
           SELECT ?, status, writer, attempts, 0, 0, 0, error, ? FROM episode_processing WHERE episode_id = ?""",
        (new_id, now_ms(), episode_id),
    )
    mentions = conn.execute(
        "SELECT entity_id, mention_count FROM episode_entity_mentions WHERE episode_id = ?", (episode_id,)
    ).fetchall()
    conn.executemany(
        "INSERT INTO episode_entity_mentions (episode_id, entity_id, mention_count) VALUES (?, ?, ?)",
        [(new_id, m[0], m[1]) for m in mentions if m[0] not in forgotten_entities],
    )
    return new_id
