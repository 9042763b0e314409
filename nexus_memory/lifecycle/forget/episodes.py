"""Episodes without the forgotten events: every version that lists one loses it in place.

Episodes are versioned by parent_id and otherwise immutable; a forget is the one edit. Each version
holding a forgotten event keeps its id, its writer outcome and its entity mentions, and loses the
event's membership row; its count, first and last events, times, thread and token estimate become
those of the events it keeps (membership positions keep their gaps: only their order is read). A
version left with no event is deleted, its children pointed at its nearest surviving ancestor.

Why in place and not a new version without the event: a sender's messages can sit in a thousand
episodes of fifty events, and a new version rewrote all fifty membership rows of each (and zeroed the
old ones) where this deletes one. Rebuilding a partition later still finds the edited version
unchanged: the builder looks an episode up by its group and members, and a chunk whose events it
already holds adds nothing (episodes/grouping.py); the id, a hash of the members it was made with, is
only a name from then on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from nexus_memory.core import db
from nexus_memory.core.tokens import estimate_tokens


@dataclass
class EpisodeChanges:
    """Episode versions edited and removed by one forget."""

    edited: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def episodes_holding(conn: db.Connection, event_ids: Sequence[str]) -> list[str]:
    """Every episode version that lists one of these events."""
    return sorted(
        db.column_in(conn, "SELECT DISTINCT episode_id FROM episode_events WHERE event_id IN ({marks})", event_ids)
    )


def remove_events(conn: db.Connection, event_ids: Sequence[str]) -> EpisodeChanges:
    """Take these events out of every episode version that lists them (module docstring).

    Call before the events are deleted (the new times and token counts come from the ledger) and after the
    analysis runs on these versions are gone. Reads and writes a chunk of episodes per statement.
    """
    unique = list(dict.fromkeys(event_ids))
    doomed_in: dict[str, list[str]] = defaultdict(list)
    for part in db.chunked(unique):
        for episode_id, event_id in conn.execute(
            f"SELECT episode_id, event_id FROM episode_events WHERE event_id IN ({db.placeholders(part)})", part
        ):
            doomed_in[episode_id].append(event_id)
    holding = sorted(doomed_in)
    if not holding:
        return EpisodeChanges()
    # A version's token estimate is the sum over its events (episodes/grouping.py): the edited one is the old one
    # less the forgotten events', so the kept events' texts are never read.
    doomed_tokens = {
        r[0]: estimate_tokens(r[1])
        for part in db.chunked(unique)
        for r in conn.execute(f"SELECT id, content FROM events WHERE id IN ({db.placeholders(part)})", part)
    }
    db.execute_in(conn, "DELETE FROM episode_events WHERE event_id IN ({marks})", unique)
    changes = EpisodeChanges()
    updates: list[tuple[object, ...]] = []
    for part in db.chunked(holding):
        marks = db.placeholders(part)
        tokens_before = dict(conn.execute(f"SELECT id, token_estimate FROM episodes WHERE id IN ({marks})", part))
        kept = {
            r[0]: (r[1], r[2], r[3])
            for r in conn.execute(
                f"""SELECT ee.episode_id, count(*),
                        (SELECT f.event_id FROM episode_events f WHERE f.episode_id = ee.episode_id
                         ORDER BY f.position LIMIT 1),
                        (SELECT l.event_id FROM episode_events l WHERE l.episode_id = ee.episode_id
                         ORDER BY l.position DESC LIMIT 1)
                    FROM episode_events ee WHERE ee.episode_id IN ({marks}) GROUP BY ee.episode_id""",
                part,
            )
        }
        ends = sorted({e for _, first, last in kept.values() for e in (first, last)})
        ends_sql = f"SELECT id, as_of, thread_id FROM events WHERE id IN ({db.placeholders(ends)})"
        when = {r[0]: (r[1], r[2]) for r in conn.execute(ends_sql, ends)}
        for episode_id in part:
            if episode_id not in kept:
                changes.removed.append(episode_id)
                continue
            count, first, last = kept[episode_id]
            tokens = max(0, tokens_before[episode_id] - sum(doomed_tokens.get(e, 0) for e in doomed_in[episode_id]))
            updates.append((count, first, last, when[first][0], when[last][0], when[first][1], tokens, episode_id))
            changes.edited.append(episode_id)
    conn.executemany(
        """UPDATE episodes SET event_count = ?, first_event_id = ?, last_event_id = ?, start_time = ?, end_time = ?,
               thread_id = ?, token_estimate = ? WHERE id = ?""",
        updates,
    )
    _delete_versions(conn, changes.removed)
    return changes


def _delete_versions(conn: db.Connection, doomed: list[str]) -> None:
    """Delete emptied versions; a surviving child points at the nearest surviving ancestor instead."""
    gone = set(doomed)
    parent_of: dict[str, str | None] = {}
    for part in db.chunked(doomed):
        marks = db.placeholders(part)
        parent_of.update(conn.execute(f"SELECT id, parent_id FROM episodes WHERE id IN ({marks})", part))
    for version_id in doomed:
        ancestor = parent_of[version_id]
        while ancestor is not None and ancestor in gone:
            ancestor = parent_of[ancestor]
        conn.execute("UPDATE episodes SET parent_id = ? WHERE parent_id = ?", (ancestor, version_id))
    db.execute_in(conn, "DELETE FROM episodes WHERE id IN ({marks})", doomed)
