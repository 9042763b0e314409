"""Facts and what hangs off them in memory.db: entity links, causal links, state, the keyword index.

Deleting a fact cascades (schema foreign keys) to fact_entities, causal_links, observation_facts,
fact_state and fact_conflicts, and its FTS row goes through the delete trigger (FTS5 secure-delete,
so the terms leave the index at once). Turn labels and the processing log of forgotten events go too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from nexus_memory import db


def fact_links(conn: db.Connection, fact_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(fact_id, entity_id) of every link of these facts (read before they go: co-occurrences need them)."""
    links: list[tuple[str, str]] = []
    for part in db.chunked(list(fact_ids)):
        links += [
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT fact_id, entity_id FROM fact_entities WHERE fact_id IN ({db.placeholders(part)})", part
            )
        ]
    return links


def delete_facts(conn: db.Connection, fact_ids: Sequence[str]) -> dict[str, int]:
    """Delete the facts (and by cascade their links and state); returns rows removed per table."""
    counts = {"facts": 0, "fact_entities": 0, "causal_links": 0}
    for part in db.chunked(list(fact_ids)):
        marks = db.placeholders(part)
        counts["fact_entities"] += conn.execute(
            f"SELECT count(*) FROM fact_entities WHERE fact_id IN ({marks})", part
        ).fetchone()[0]
        counts["causal_links"] += conn.execute(
            f"SELECT count(*) FROM causal_links WHERE from_fact_id IN ({marks}) OR to_fact_id IN ({marks})",
            [*part, *part],
        ).fetchone()[0]
        # A surviving fact corrected by a forgotten one stays hidden (it was wrong), without a dangling link.
        conn.execute(f"UPDATE fact_state SET superseded_by = NULL WHERE superseded_by IN ({marks})", part)
        counts["facts"] += conn.execute(f"DELETE FROM facts WHERE id IN ({marks})", part).rowcount
    return counts


def delete_event_rows(conn: db.Connection, event_ids: Sequence[str]) -> dict[str, int]:
    """Turn labels and processing-log rows of forgotten events."""
    counts = {"turn_labels": 0, "memory_processing_log": 0}
    for part in db.chunked(list(event_ids)):
        marks = db.placeholders(part)
        for table in counts:
            counts[table] += conn.execute(f"DELETE FROM {table} WHERE event_id IN ({marks})", part).rowcount
    return counts


def drop_entity_references(conn: db.Connection, entity_ids: Sequence[str]) -> dict[str, int]:
    """Rows of memory.db that name forgotten entities: episode mentions, facets, turn-label entity lists."""
    counts = {"episode_entity_mentions": 0, "facets": 0, "turn_labels_edited": 0}
    doomed = set(entity_ids)
    for part in db.chunked(list(entity_ids)):
        marks = db.placeholders(part)
        counts["episode_entity_mentions"] += conn.execute(
            f"DELETE FROM episode_entity_mentions WHERE entity_id IN ({marks})", part
        ).rowcount
        counts["facets"] += conn.execute(f"DELETE FROM facets WHERE entity_id IN ({marks})", part).rowcount
    for part in db.chunked(list(entity_ids)):
        rows = conn.execute(
            f"""SELECT DISTINCT t.event_id, t.entity_ids FROM turn_labels t, json_each(t.entity_ids) j
                WHERE json_valid(t.entity_ids) AND j.value IN ({db.placeholders(part)})""",
            part,
        ).fetchall()
        for event_id, entity_json in rows:
            kept = [e for e in json.loads(entity_json) if e not in doomed]
            conn.execute("UPDATE turn_labels SET entity_ids = ? WHERE event_id = ?", (json.dumps(kept), event_id))
            counts["turn_labels_edited"] += 1
    return counts
