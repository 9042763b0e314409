"""Facts and what hangs off them in memory.db: entity links, causal links, state, the keyword index.

Deleting a fact cascades (schema foreign keys) to fact_entities, causal_links, observation_facts,
fact_state and fact_conflicts, and its FTS row goes through the delete trigger (FTS5 secure-delete,
so the terms leave the index at once). Turn labels and the processing log of forgotten events go too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from nexus_memory.core import db


def fact_links(conn: db.Connection, fact_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(fact_id, entity_id) of every link of these facts (read before they go: co-occurrences need them)."""
    links: list[tuple[str, str]] = []
    for part in db.chunked(list(fact_ids)):
        marks = db.placeholders(part)
        links += [
            tuple(r)
            for r in conn.execute(f"SELECT fact_id, entity_id FROM fact_entities WHERE fact_id IN ({marks})", part)
        ]
    return links


def delete_facts(conn: db.Connection, fact_ids: Sequence[str]) -> dict[str, int]:
    """Delete the facts (and by cascade their links and state); returns rows removed per table."""
    counts = {
        "fact_entities": len(fact_links(conn, fact_ids)),
        "causal_links": len(
            db.column_in(
                conn,
                "SELECT from_fact_id || char(9) || to_fact_id FROM causal_links WHERE from_fact_id IN ({marks}) "
                "UNION SELECT from_fact_id || char(9) || to_fact_id FROM causal_links WHERE to_fact_id IN ({marks})",
                fact_ids,
            )
        ),
    }
    # A surviving fact corrected by a forgotten one stays hidden (it was wrong), without a dangling link.
    db.execute_in(conn, "UPDATE fact_state SET superseded_by = NULL WHERE superseded_by IN ({marks})", fact_ids)
    counts["facts"] = db.execute_in(conn, "DELETE FROM facts WHERE id IN ({marks})", fact_ids)
    return counts


def delete_event_rows(conn: db.Connection, event_ids: Sequence[str]) -> dict[str, int]:
    """Turn labels and processing-log rows of forgotten events."""
    return {
        table: db.execute_in(conn, f"DELETE FROM {table} WHERE event_id IN ({{marks}})", event_ids)
        for table in ("turn_labels", "memory_processing_log")
    }


def drop_entity_references(conn: db.Connection, entity_ids: Sequence[str]) -> dict[str, int]:
    """Rows of memory.db that name forgotten entities: links of facts that stay (a sender's entity goes without
    the facts about it), episode mentions, facets, turn-label entity lists."""
    counts = {
        table: db.execute_in(conn, f"DELETE FROM {table} WHERE entity_id IN ({{marks}})", entity_ids)
        for table in ("fact_entities", "episode_entity_mentions", "facets")
    }
    doomed = set(entity_ids)
    labels = db.column_in(
        conn,
        """SELECT t.event_id FROM turn_labels t, json_each(t.entity_ids) j
           WHERE json_valid(t.entity_ids) AND j.value IN ({marks})""",
        entity_ids,
    )
    for event_id in labels:
        entity_json = conn.execute("SELECT entity_ids FROM turn_labels WHERE event_id = ?", (event_id,)).fetchone()[0]
        kept = [e for e in json.loads(entity_json) if e not in doomed]
        conn.execute("UPDATE turn_labels SET entity_ids = ? WHERE event_id = ?", (json.dumps(kept), event_id))
    counts["turn_labels_edited"] = len(labels)
    return counts
