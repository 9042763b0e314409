"""The merge journal: what a merge moves from the merged-away entity to the survivor, written inside the
merge's transaction (identity.merge_entities calls `record` before it changes anything), so that
unmerge.py can put exactly that back. Tables: merge_journal, merge_journal_items (identity_lifecycle.sql).

Kept free of other imports from the project: identity.py imports it.
"""

from __future__ import annotations

from typing import Any

from nexus_memory.core.ids import now_ms, ulid


def record(conn: Any, winner_id: str, loser_id: str, loser_key: str) -> str:
    """Journal the merge of loser into winner as it is about to happen; returns the journal id.

    `loser_key` is the loser's normalized name, which the merge adds to the winner as an alias.
    """
    journal_id = ulid()
    mentions = conn.execute("SELECT mention_count FROM entities WHERE id = ?", (loser_id,)).fetchone()[0]
    conn.execute(
        "INSERT INTO merge_journal (id, winner_id, loser_id, mention_count, merged_at) VALUES (?, ?, ?, ?, ?)",
        (journal_id, winner_id, loser_id, mentions, now_ms()),
    )
    # The loser's fact links; 'shared' when the winner already had the link (an unmerge keeps it).
    conn.execute(
        """INSERT INTO merge_journal_items (journal_id, kind, item, detail)
           SELECT ?, 'fact', l.fact_id,
                  CASE WHEN EXISTS (SELECT 1 FROM fact_entities w WHERE w.fact_id = l.fact_id AND w.entity_id = ?)
                       THEN 'shared' END
           FROM fact_entities l WHERE l.entity_id = ?""",
        (journal_id, winner_id, loser_id),
    )
    # Aliases the winner gains: the loser's own name and aliases it does not have yet.
    conn.execute(
        """INSERT OR IGNORE INTO merge_journal_items (journal_id, kind, item)
           SELECT ?, 'alias', n FROM (SELECT ? AS n UNION SELECT normalized FROM aliases WHERE entity_id = ?)
           WHERE n NOT IN (SELECT normalized FROM aliases WHERE entity_id = ?)""",
        (journal_id, loser_key, loser_id, winner_id),
    )
    conn.execute(
        """INSERT INTO merge_journal_items (journal_id, kind, item)
           SELECT ?, 'contact', platform || char(9) || handle FROM contacts WHERE entity_id = ?""",
        (journal_id, loser_id),
    )
    # Session aliases the winner gains (propagate_merge_to_sessions): the loser's sessions and aliases.
    conn.execute(
        """INSERT OR IGNORE INTO merge_journal_items (journal_id, kind, item)
           SELECT ?, 'session', s FROM (SELECT id AS s FROM sessions WHERE entity_id = ?
                                        UNION SELECT session_id FROM session_aliases WHERE entity_id = ?)
           WHERE s NOT IN (SELECT session_id FROM session_aliases WHERE entity_id = ?)""",
        (journal_id, loser_id, loser_id, winner_id),
    )
    return journal_id
