"""When consolidation should run, and which mental models need a refresh: plain queries for the sensors.

- new facts: the facts' high-water mark (a sensor's run key: one consolidation per batch of new facts);
- a session ended: lifecycle/sessions.py (sensors/sessions.py watches for it).
Which mental models need a refresh is mental_models.api.models_to_materialize.
"""

from __future__ import annotations

from nexus_memory.core import db


def facts_high_water(conn: db.Connection) -> int:
    """The newest fact's rowid (0 when there is none)."""
    return conn.execute("SELECT COALESCE(max(rowid), 0) FROM facts").fetchone()[0]
