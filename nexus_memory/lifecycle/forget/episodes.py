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
    after the analysis runs on the removed versions are gone. The versions are read, and the new ones
    written, a chunk of episodes per statement: a sender's messages can sit in a thousand episodes.
    """
    changes = EpisodeChanges(removed=episodes_holding(conn, event_ids))
    if not changes.removed:
        return changes
    doomed_events, doomed = set(event_ids), set(changes.removed)
    forgotten = set(forgotten_entities)
    extended = set(db.column_in(conn, "SELECT parent_id FROM episodes WHERE parent_id IN ({marks})", changes.removed))
    latest = [e for e in changes.removed if e not in extended]
    # A version's token estimate is the sum over its events (episodes/grouping.py): the new one is the old one
    # less the forgotten events', so the kept events' texts are never read (a thousand episodes of 50 events).
    doomed_tokens = {
        r[0]: estimate_tokens(r[1])
        for part in db.chunked(list(doomed_events))
        for r in conn.execute(f"SELECT id, content FROM events WHERE id IN ({db.placeholders(part)})", part)
    }
    versions = _NewVersions()
    for part in db.chunked(latest):
        marks = db.placeholders(part)
        old = {r["id"]: r for r in conn.execute(f"SELECT * FROM episodes WHERE id IN ({marks})", part)}
        members: dict[str, list[str]] = {e: [] for e in part}
        for episode_id, event_id in conn.execute(
            f"SELECT episode_id, event_id FROM episode_events WHERE episode_id IN ({marks}) "
            "ORDER BY episode_id, position",
            part,
        ):
            members[episode_id].append(event_id)
        kept = {e: [m for m in ids if m not in doomed_events] for e, ids in members.items()}
        ends = sorted({m for ids in kept.values() if ids for m in (ids[0], ids[-1])})
        when = {
            r[0]: (r[1], r[2])
            for r in conn.execute(
                f"SELECT id, as_of, thread_id FROM events WHERE id IN ({db.placeholders(ends)})", ends
            )
        }
        for episode_id in part:
            tokens = old[episode_id]["token_estimate"]
            if tokens is None:  # not estimated when it was written: count what is kept
                texts = db.column_in(conn, "SELECT content FROM events WHERE id IN ({marks})", kept[episode_id])
                tokens = sum(estimate_tokens(t) for t in texts)
            else:
                tokens -= sum(doomed_tokens.get(m, 0) for m in members[episode_id] if m in doomed_events)
            new_id = versions.add(conn, old[episode_id], kept[episode_id], when, tokens, doomed)
            if new_id:
                changes.created.append(new_id)
    versions.write(conn, forgotten)
    # New versions point at the nearest surviving ancestor; the removed ones are detached from each other first,
    # so chunked deletes never leave a version pointing at a deleted one.
    db.execute_in(conn, "UPDATE episodes SET parent_id = NULL WHERE id IN ({marks})", changes.removed)
    db.execute_in(conn, "DELETE FROM episodes WHERE id IN ({marks})", changes.removed)
    return changes


def _surviving_ancestor(conn: db.Connection, episode_id: str, doomed: set[str]) -> str | None:
    parent = conn.execute("SELECT parent_id FROM episodes WHERE id = ?", (episode_id,)).fetchone()[0]
    while parent is not None and parent in doomed:
        parent = conn.execute("SELECT parent_id FROM episodes WHERE id = ?", (parent,)).fetchone()[0]
    return parent


@dataclass
class _NewVersions:
    """The rows of the new versions, gathered, then written a statement per table."""

    episodes: list[tuple[object, ...]] = field(default_factory=list)
    events: list[tuple[str, str, int]] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)  # (new id, the version it replaces)
    created: set[str] = field(default_factory=set)

    def add(
        self,
        conn: db.Connection,
        old: db.Row,
        kept: list[str],
        when: dict[str, tuple[int, str | None]],
        tokens: int,
        doomed: set[str],
    ) -> str | None:
        """The latest version again with the `kept` events (`when`: as_of and thread of the first and last); None
        when nothing else was in it."""
        if not kept:
            return None
        new_id = stable_id("ep", old["definition_id"], *kept)
        if new_id in self.created or conn.execute("SELECT 1 FROM episodes WHERE id = ?", (new_id,)).fetchone():
            return new_id if new_id not in doomed else None  # an older version that held exactly these events
        self.episodes.append(
            (
                new_id,
                old["definition_id"],
                old["platform"],
                when[kept[0]][1],
                when[kept[0]][0],
                when[kept[-1]][0],
                len(kept),
                kept[0],
                kept[-1],
                _surviving_ancestor(conn, old["id"], doomed),
                now_ms(),
                old["partition_key"],
                old["group_key"],
                tokens,
            )
        )
        self.events += [(new_id, event_id, i) for i, event_id in enumerate(kept)]
        self.replaced.append((new_id, old["id"]))
        self.created.add(new_id)
        return new_id

    def write(self, conn: db.Connection, forgotten_entities: set[str]) -> None:
        """Insert the new versions with their events; each takes its old version's writer outcome (its events were
        processed, and the writer skips them anyway) and its entity mentions but the forgotten entities'."""
        conn.executemany(
            """INSERT INTO episodes (id, definition_id, platform, thread_id, start_time, end_time, event_count,
                   first_event_id, last_event_id, parent_id, created_at, partition_key, group_key, token_estimate)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            self.episodes,
        )
        conn.executemany("INSERT INTO episode_events (episode_id, event_id, position) VALUES (?, ?, ?)", self.events)
        now = now_ms()
        conn.executemany(
            """INSERT INTO episode_processing (episode_id, status, writer, attempts, facts_written, prompt_tokens,
                   completion_tokens, error, updated_at)
               SELECT ?, status, writer, attempts, 0, 0, 0, error, ? FROM episode_processing WHERE episode_id = ?""",
            [(new_id, now, old_id) for new_id, old_id in self.replaced],
        )
        old_of = {old_id: new_id for new_id, old_id in self.replaced}
        mentions = [
            tuple(r)
            for part in db.chunked(list(old_of))
            for r in conn.execute(
                "SELECT episode_id, entity_id, mention_count FROM episode_entity_mentions "
                f"WHERE episode_id IN ({db.placeholders(part)})",
                part,
            )
        ]
        conn.executemany(
            "INSERT INTO episode_entity_mentions (episode_id, entity_id, mention_count) VALUES (?, ?, ?)",
            [(old_of[m[0]], m[1], m[2]) for m in mentions if m[1] not in forgotten_entities],
        )
