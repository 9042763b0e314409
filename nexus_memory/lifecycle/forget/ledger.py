"""events.db rows of a forget: the events themselves (the one deletion the ledger allows), the derived
events taken from them, and rejected records that held their text."""

from __future__ import annotations

import json
from collections import Counter

from nexus_memory.core import db
from nexus_memory.lifecycle.forget.plan import ForgetPlan, name_pattern

MIN_KEY_CHARS = 8  # shorter forgotten strings are not searched for inside rejected records


def delete_ledger_rows(conn: db.Connection, plan: ForgetPlan, request_id: str, now: int) -> dict[str, int]:
    counts: Counter[str] = Counter()
    counts["derived_events"] = db.execute_in(
        conn, "DELETE FROM derived_events WHERE source_event_id IN ({marks})", plan.event_ids
    ) + db.execute_in(conn, "DELETE FROM derived_events WHERE entity_id IN ({marks})", plan.entity_ids)
    counts["event_rejects"] = delete_rejects(conn, plan)
    # The events' immutability trigger lets a row go only while its id is authorised (events_lifecycle.sql).
    conn.executemany(
        "INSERT INTO forget_authorizations (event_id, request_id, created_at) VALUES (?, ?, ?)",
        [(event_id, request_id, now) for event_id in plan.event_ids],
    )
    counts["events"] = db.execute_in(conn, "DELETE FROM events WHERE id IN ({marks})", plan.event_ids)
    conn.execute("DELETE FROM forget_authorizations WHERE request_id = ?", (request_id,))
    return dict(counts)


def delete_rejects(conn: db.Connection, plan: ForgetPlan) -> int:
    """Rejected records holding forgotten text (as read, or JSON-escaped), a forgotten id, or the entity's name."""
    keys = {k.lower() for t in plan.texts for k in (t, json.dumps(t)[1:-1]) if len(k) >= MIN_KEY_CHARS}
    keys |= {json.dumps(e).lower() for e in plan.event_ids}
    names = name_pattern(plan.names)
    doomed = [
        r[0]
        for r in conn.execute("SELECT id, raw FROM event_rejects WHERE raw IS NOT NULL")
        if any(k in r[1].lower() for k in keys) or (names is not None and names.search(r[1]))
    ]
    conn.executemany("DELETE FROM event_rejects WHERE id = ?", [(d,) for d in doomed])
    return len(doomed)
