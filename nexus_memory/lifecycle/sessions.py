"""Sessions and their consolidation (sessions_consolidations): a session that ends is consolidated promptly.

A session ends when a newer session starts on the same platform (its first event is later), or at the
nightly run, which ends every open session whose last event is older than the run. `track` registers
the sessions of newly ingested events and ends those that are over; `consolidate_ended` runs the
consolidation layer for them and stamps each session whose facts are all consolidated. A sensor
(sensors/sessions.py) asks for that run as soon as an event of a new session arrives.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms
from nexus_memory.core.stores import Stores
from nexus_memory.lifecycle import reconsolidate, runs


@dataclass
class SessionReport:
    registered: int = 0
    ended: int = 0
    consolidated: int = 0
    waiting: int = 0  # ended, with facts not consolidated yet
    consolidation: dict[str, Any] | None = None  # the consolidation layer's report, when it ran
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def track(conn: db.Connection, now: int, *, nightly: bool = False) -> tuple[int, int, int]:
    """Register sessions of events ingested since the last run and end the ones that are over.

    Returns (sessions registered, sessions ended, the ingested_at watermark read up to).
    """
    since = runs.last_watermark(conn, "sessions")
    with db.transaction(conn):
        watermark = conn.execute("SELECT max(ingested_at) FROM events WHERE ingested_at > ?", (since,)).fetchone()[0]
        before = conn.execute("SELECT count(*) FROM sessions_consolidations").fetchone()[0]
        if watermark is not None:
            conn.execute(
                """INSERT INTO sessions_consolidations
                       (session_id, platform, first_event_at, last_event_at, registered_at)
                   SELECT session_id, min(platform), min(as_of), max(as_of), ? FROM events
                   WHERE ingested_at > ? AND ingested_at <= ? AND session_id IS NOT NULL GROUP BY session_id
                   ON CONFLICT (session_id) DO UPDATE SET
                       first_event_at = min(first_event_at, excluded.first_event_at),
                       last_event_at = max(last_event_at, excluded.last_event_at)""",
                (now, since, watermark),
            )
        registered = conn.execute("SELECT count(*) FROM sessions_consolidations").fetchone()[0] - before
        ended = conn.execute(
            """UPDATE sessions_consolidations SET ended_at = ?, ended_by = 'new_session'
               WHERE ended_at IS NULL AND EXISTS (
                   SELECT 1 FROM sessions_consolidations newer WHERE newer.platform = sessions_consolidations.platform
                   AND newer.first_event_at > sessions_consolidations.first_event_at)""",
            (now,),
        ).rowcount
        if nightly:
            ended += conn.execute(
                "UPDATE sessions_consolidations SET ended_at = ?, ended_by = 'nightly' "
                "WHERE ended_at IS NULL AND last_event_at < ?",
                (now, now),
            ).rowcount
    return registered, ended, since if watermark is None else watermark


def ended_waiting(conn: db.Connection) -> list[str]:
    """Sessions that ended and are not consolidated yet."""
    rows = conn.execute(
        "SELECT session_id FROM sessions_consolidations WHERE ended_at IS NOT NULL AND consolidated_at IS NULL "
        "ORDER BY ended_at, session_id"
    )
    return [r[0] for r in rows]


def consolidate_ended(
    stores: Stores,
    *,
    now: int | None = None,
    nightly: bool = False,
    consolidate: Callable[[Stores], dict[str, Any] | None] = reconsolidate.run_consolidation,
) -> SessionReport:
    """Track sessions, consolidate when one has ended, stamp the sessions whose facts are all consolidated."""
    started = time.perf_counter()
    now = now_ms() if now is None else now
    conn = stores.conn
    report = SessionReport()
    report.registered, report.ended, watermark = track(conn, now, nightly=nightly)
    waiting = ended_waiting(conn)
    if waiting:
        report.consolidation = consolidate(stores)
    with db.transaction(conn):
        for session_id in waiting:
            pending = conn.execute(
                "SELECT count(*) FROM facts WHERE session_id = ? AND NOT is_consolidated", (session_id,)
            ).fetchone()[0]
            if pending:
                report.waiting += 1
                continue
            conn.execute(
                "UPDATE sessions_consolidations SET consolidated_at = ? WHERE session_id = ?", (now, session_id)
            )
            report.consolidated += 1
        report.seconds = round(time.perf_counter() - started, 3)
        runs.record_run(conn, "sessions", now, now_ms(), report.as_dict(), watermark=watermark)
    return report


def new_sessions_since(conn: db.Connection, ingested_after: int) -> tuple[list[str], int | None]:
    """Session ids of events ingested after `ingested_after` not registered yet, and the newest ingested_at."""
    high = conn.execute("SELECT max(ingested_at) FROM events WHERE ingested_at > ?", (ingested_after,)).fetchone()[0]
    if high is None:
        return [], None
    rows = conn.execute(
        """SELECT DISTINCT session_id FROM events WHERE ingested_at > ? AND session_id IS NOT NULL
           AND session_id NOT IN (SELECT session_id FROM sessions_consolidations) ORDER BY session_id""",
        (ingested_after,),
    ).fetchall()
    return [r[0] for r in rows], high
