"""identity.db rows of a forget: forgotten entities with everything that names them, and the counts
(co-occurrences, mention counts) that the forgotten facts had added to the entities that stay."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from nexus_memory import db


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
    counts: dict[str, int] = Counter()
    for part in db.chunked(list(fact_ids)):
        counts["merge_journal_items"] += conn.execute(
            f"DELETE FROM merge_journal_items WHERE kind = 'fact' AND item IN ({db.placeholders(part)})", part
        ).rowcount
    for part in db.chunked(list(entity_ids)):
        marks = db.placeholders(part)
        both = [*part, *part]
        sessions = [r[0] for r in conn.execute(f"SELECT id FROM sessions WHERE entity_id IN ({marks})", part)]
        statements = {
            "merge_journal": (f"DELETE FROM merge_journal WHERE winner_id IN ({marks}) OR loser_id IN ({marks})", both),
            "merge_candidates": (
                f"DELETE FROM merge_candidates WHERE entity_a_id IN ({marks}) OR entity_b_id IN ({marks})",
                both,
            ),
            "aliases": (f"DELETE FROM aliases WHERE entity_id IN ({marks})", part),
            "entity_tags": (f"DELETE FROM entity_tags WHERE entity_id IN ({marks})", part),
            "entity_cooccurrences": (
                f"DELETE FROM entity_cooccurrences WHERE entity_a IN ({marks}) OR entity_b IN ({marks})",
                both,
            ),
            "contacts": (f"DELETE FROM contacts WHERE entity_id IN ({marks})", part),
            "session_aliases": (
                f"DELETE FROM session_aliases WHERE entity_id IN ({marks}) OR via_merge_of IN ({marks})"
                f" OR session_id IN ({db.placeholders(sessions) or 'NULL'})",
                [*both, *sessions],
            ),
            "sessions": (f"DELETE FROM sessions WHERE entity_id IN ({marks})", part),
        }
        for table, (sql, args) in statements.items():
            counts[table] += conn.execute(sql, args).rowcount
    # One statement, so entities merged into each other inside the set satisfy their foreign keys at its end.
    for part in db.chunked(list(entity_ids)):
        counts["entities"] += conn.execute(f"DELETE FROM entities WHERE id IN ({db.placeholders(part)})", part).rowcount
    return dict(counts)
