"""identity.db rows of a forget: forgotten entities with everything that names them, a forgotten sender handle's
rows on entities that stay, and the counts (co-occurrences, mention counts) that the forgotten facts had added
to the entities that stay."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from nexus_memory.core import db
from nexus_memory.identity.store import normalize


def uncount_links(conn: db.Connection, links: Sequence[tuple[str, str]], forgotten: Sequence[str]) -> dict[str, int]:
    """Take back what the forgotten facts' links counted: co-occurrence pairs and mention counts."""
    doomed = set(forgotten)
    by_fact: dict[str, list[str]] = {}
    for fact_id, entity_id in links:
        if entity_id not in doomed:
            by_fact.setdefault(fact_id, []).append(entity_id)
    pairs: Counter[tuple[str, str]] = Counter()
    mentions: Counter[str] = Counter()
    for entities in by_fact.values():
        mentions.update(entities)
        pairs.update(tuple(sorted(p)) for p in combinations(sorted(set(entities)), 2))
    conn.executemany(
        "UPDATE entity_cooccurrences SET count = count - ? WHERE entity_a = ? AND entity_b = ?",
        [(n, a, b) for (a, b), n in pairs.items()],
    )
    removed = conn.execute("DELETE FROM entity_cooccurrences WHERE count <= 0").rowcount
    conn.executemany(
        "UPDATE entities SET mention_count = max(mention_count - ?, 0) WHERE id = ?",
        [(n, e) for e, n in mentions.items()],
    )
    return {"entity_cooccurrences": removed, "mention_counts_lowered": len(mentions)}


def delete_entities(conn: db.Connection, entity_ids: Sequence[str], fact_ids: Sequence[str]) -> dict[str, int]:
    """Delete forgotten entities and every identity row that names them (children before parents)."""
    counts: dict[str, int] = {
        "merge_journal_items": db.execute_in(
            conn, "DELETE FROM merge_journal_items WHERE kind = 'fact' AND item IN ({marks})", fact_ids
        )
    }
    sessions = db.column_in(conn, "SELECT id FROM sessions WHERE entity_id IN ({marks})", entity_ids)
    counts["session_aliases"] = db.execute_in(
        conn, "DELETE FROM session_aliases WHERE session_id IN ({marks})", sessions
    )
    for table, columns in (
        ("merge_journal", ("winner_id", "loser_id")),
        ("merge_candidates", ("entity_a_id", "entity_b_id")),
        ("aliases", ("entity_id",)),
        ("entity_tags", ("entity_id",)),
        ("entity_cooccurrences", ("entity_a", "entity_b")),
        ("contacts", ("entity_id",)),
        ("session_aliases", ("entity_id", "via_merge_of")),
        ("sessions", ("entity_id",)),
    ):
        counts[table] = counts.get(table, 0) + sum(
            db.execute_in(conn, f"DELETE FROM {table} WHERE {column} IN ({{marks}})", entity_ids) for column in columns
        )
    # Detached from each other first, so chunked deletes never leave an entity merged into a deleted one.
    db.execute_in(conn, "UPDATE entities SET merged_into = NULL WHERE id IN ({marks})", entity_ids)
    counts["entities"] = db.execute_in(conn, "DELETE FROM entities WHERE id IN ({marks})", entity_ids)
    return {k: v for k, v in counts.items() if v}


def delete_handles(conn: db.Connection, handles: Sequence[str]) -> dict[str, int]:
    """A forgotten sender handle's rows on entities that stay: its contacts, the aliases it normalises to, and the
    merge journal's record of them."""
    counts: Counter[str] = Counter()
    for handle in handles:
        key = normalize(handle)
        counts["merge_journal_items"] += conn.execute(
            """DELETE FROM merge_journal_items WHERE (kind = 'alias' AND item = ?)
                   OR (kind = 'contact' AND lower(substr(item, instr(item, char(9)) + 1)) = lower(?))""",
            (key, handle),
        ).rowcount
        counts["contacts"] += conn.execute("DELETE FROM contacts WHERE lower(handle) = lower(?)", (handle,)).rowcount
        counts["aliases"] += conn.execute("DELETE FROM aliases WHERE normalized = ?", (key,)).rowcount
    return {k: v for k, v in counts.items() if v}
