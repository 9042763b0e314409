"""When consolidation should run, and which mental models need a refresh: plain queries for the sensors.

- new facts: the facts' high-water mark (a sensor's run key: one consolidation per batch of new facts);
- a session ended: a session id appears that the ledger has not seen before, while older sessions
  exist (seed 001's session switch: the previous session is complete).
Which mental models need a refresh is mental_models.api.models_to_materialize.
"""

from __future__ import annotations

from nexus_memory import db


def facts_high_water(conn: db.Connection) -> int:
    """The newest fact's rowid (0 when there is none)."""
    return conn.execute("SELECT COALESCE(max(rowid), 0) FROM facts").fetchone()[0]


def events_high_water(conn: db.Connection) -> int:
    return conn.execute("SELECT COALESCE(max(rowid), 0) FROM events").fetchone()[0]


def new_sessions(conn: db.Connection, after_rowid: int) -> tuple[list[str], bool]:
    """Sessions whose first event came after `after_rowid`, and whether any session came before them."""
    rows = conn.execute(
        """SELECT session_id, min(rowid) AS first FROM events
           WHERE rowid > ? AND session_id IS NOT NULL AND session_id != ''
           GROUP BY session_id
           HAVING NOT EXISTS (SELECT 1 FROM events e WHERE e.session_id = events.session_id AND e.rowid <= ?)
           ORDER BY first""",
        (after_rowid, after_rowid),
    ).fetchall()
    new = [r[0] for r in rows]
    if not new:
        return [], False
    earlier = conn.execute(
        """SELECT 1 FROM events WHERE rowid < ? AND session_id IS NOT NULL AND session_id != ''
           AND session_id != ? LIMIT 1""",
        (rows[0][1], new[0]),
    ).fetchone()
    return new, earlier is not None or len(new) > 1
