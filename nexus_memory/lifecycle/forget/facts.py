"""Facts and what hangs off them in memory.db: entity links, causal links, state, the keyword index.

Deleting a fact cascades (schema foreign keys) to fact_entities, causal_links, observation_facts,
fact_state and fact_conflicts, and its rows in the keyword indexes go through the delete triggers. Their
terms must leave the index segments at once, one of two ways, whichever costs less: FTS5 secure-delete
edits the segments one document at a time (about 0.4 ms a fact and index at 100k facts), 'optimize'
rewrites the whole index without the deleted documents for a cost that grows with the index, not with
the forget (0.05-0.15 s an index at 100k). Past one fact in BULK_RATIO the rewrite is cheaper; both
leave no term of a forgotten fact in the file (tests/test_forget_bulk.py scans the bytes after each).
Turn labels and the processing log of forgotten events go too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from nexus_memory.core import db

KEYWORD_INDEXES = ("facts_fts", "fact_keys_fts")  # FTS5 tables with secure-delete on (memory_*.sql)
BULK_RATIO = 500  # rewrite the keyword indexes when a forget takes at least 1 fact in this many


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
    bulk = bool(fact_ids) and len(fact_ids) * BULK_RATIO >= conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    if bulk:  # inside the forget's transaction: an error restores the setting with everything else
        _secure_delete(conn, on=False)
    counts["facts"] = db.execute_in(conn, "DELETE FROM facts WHERE id IN ({marks})", fact_ids)
    if bulk:
        for table in KEYWORD_INDEXES:
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
        _secure_delete(conn, on=True)
    return counts


def _secure_delete(conn: db.Connection, *, on: bool) -> None:
    for table in KEYWORD_INDEXES:
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('secure-delete', ?)", (int(on),))


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
