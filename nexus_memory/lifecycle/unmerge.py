"""Undo an accepted (or automatic) merge from its journal, in one transaction.

What the merge moved goes back to the merged-away entity: its fact links (the survivor keeps only the
links it had before), the aliases and session aliases the survivor gained, the contacts it took over,
and the mention count. The merge candidate is marked rejected, so the pair is never proposed or merged
automatically again (identity.propose_merge checks). Facts written after the merge that named the
merged-away entity were linked to the survivor and stay with it: nothing says which of the two they meant.
A merge made before merges were journaled cannot be undone exactly and is refused.
"""

from __future__ import annotations

from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms
from nexus_memory.identity import store as identity
from nexus_memory.identity import writer_notes
from nexus_memory.lifecycle import reconsolidate


class UnmergeError(ValueError):
    """A merge that cannot be undone as asked (unknown candidate, not merged, not journaled)."""


def unmerge(conn: db.Connection, candidate_id: str) -> dict[str, Any]:
    """Undo the merge of a candidate (its entity b back out of entity a); returns what moved back."""
    candidate = conn.execute("SELECT * FROM merge_candidates WHERE id = ?", (candidate_id,)).fetchone()
    if candidate is None:
        raise UnmergeError(f"no merge candidate {candidate_id!r}")
    if candidate["status"] not in ("accepted", "auto_merged"):
        raise UnmergeError(f"merge candidate {candidate_id} is {candidate['status']}, not merged")
    loser_id = candidate["entity_b_id"]
    journal = conn.execute(
        "SELECT * FROM merge_journal WHERE loser_id = ? AND undone_at IS NULL ORDER BY merged_at DESC LIMIT 1",
        (loser_id,),
    ).fetchone()
    if journal is None:
        raise UnmergeError(f"merge candidate {candidate_id} was merged before merges were journaled; undo it by hand")
    winner_id, now = journal["winner_id"], now_ms()
    items: dict[str, list[tuple[str, str | None]]] = {"fact": [], "alias": [], "contact": [], "session": []}
    for kind, item, detail in conn.execute(
        "SELECT kind, item, detail FROM merge_journal_items WHERE journal_id = ?", (journal["id"],)
    ):
        items[kind].append((item, detail))
    with db.transaction(conn):
        conn.execute("UPDATE entities SET merged_into = NULL, updated_at = ? WHERE id = ?", (now, loser_id))
        facts = [f for f, _ in items["fact"]]
        conn.executemany(
            """INSERT OR IGNORE INTO fact_entities (fact_id, entity_id, as_of)
               SELECT id, ?, as_of FROM facts WHERE id = ?""",
            [(loser_id, f) for f in facts],
        )
        conn.executemany(
            "DELETE FROM fact_entities WHERE fact_id = ? AND entity_id = ?",
            [(f, winner_id) for f, detail in items["fact"] if detail != "shared"],
        )
        conn.executemany(
            "DELETE FROM aliases WHERE entity_id = ? AND normalized = ?", [(winner_id, a) for a, _ in items["alias"]]
        )
        conn.executemany(
            "UPDATE contacts SET entity_id = ? WHERE platform = ? AND handle = ? AND entity_id = ?",
            [(loser_id, *c.split("\t", 1), winner_id) for c, _ in items["contact"]],
        )
        conn.executemany(
            "DELETE FROM session_aliases WHERE session_id = ? AND entity_id = ?",
            [(s, winner_id) for s, _ in items["session"]],
        )
        conn.execute(
            "UPDATE entities SET mention_count = max(mention_count - ?, 0), updated_at = ? WHERE id = ?",
            (journal["mention_count"], now, winner_id),
        )
        conn.execute("UPDATE merge_journal SET undone_at = ? WHERE id = ?", (now, journal["id"]))
        conn.execute(
            "UPDATE merge_candidates SET status = 'rejected', resolved_at = ? WHERE id = ?", (now, candidate_id)
        )
        winner, loser = identity.get_entity(conn, winner_id), identity.get_entity(conn, loser_id)
        writer_notes.record_review(conn, winner, loser, "rejected", "a person undid the merge")
        stale = reconsolidate.mark_stale(conn, facts, entity_ids=[winner_id, loser_id])
    return {
        "candidate_id": candidate_id,
        "entity": loser_id,
        "separated_from": winner_id,
        "facts": len(facts),
        "aliases": len(items["alias"]),
        "contacts": len(items["contact"]),
        "session_aliases": len(items["session"]),
        **stale.as_dict(),
    }
