"""fact_state: what changes about an immutable fact, kept beside it (schema/memory_lifecycle.sql).

A fact without a row has the defaults: confidence 1.0, the configured decay rate, its decay clock
starting at facts.created_at, visible. Every write here is an upsert of the columns it names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nexus_memory.core import db

CONFLICT_CONFIDENCE = 0.3  # what an earlier fact keeps once a later one contradicts it


def hidden_sql(alias: str = "f") -> str:
    """SQL true for a hidden (decayed or corrected) fact aliased `alias`: the one condition recall applies."""
    return f"EXISTS (SELECT 1 FROM fact_state hs WHERE hs.fact_id = {alias}.id AND hs.hidden_at IS NOT NULL)"


@dataclass(frozen=True)
class FactState:
    """One fact's state, with the defaults filled in."""

    fact_id: str
    confidence: float
    decay_rate: float
    clock_start: int  # last access, or creation when never accessed (unix ms)
    hidden_at: int | None
    hidden_reason: str | None
    superseded_by: str | None
    protected_at: int | None
    enriched_at: int | None

    @property
    def protected(self) -> bool:
        return self.decay_rate == 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def get_state(conn: db.Connection, fact_id: str, default_rate: float) -> FactState | None:
    """The fact's state, or None when there is no such fact."""
    row = conn.execute(
        """SELECT f.id, f.created_at, s.confidence, s.decay_rate, s.last_access_at, s.hidden_at, s.hidden_reason,
                  s.superseded_by, s.protected_at, s.enriched_at
           FROM facts f LEFT JOIN fact_state s ON s.fact_id = f.id WHERE f.id = ?""",
        (fact_id,),
    ).fetchone()
    if row is None:
        return None
    return FactState(
        fact_id=row[0],
        confidence=1.0 if row[2] is None else float(row[2]),
        decay_rate=default_rate if row[3] is None else float(row[3]),
        clock_start=row[4] if row[4] is not None else row[1],
        hidden_at=row[5],
        hidden_reason=row[6],
        superseded_by=row[7],
        protected_at=row[8],
        enriched_at=row[9],
    )


def upsert(conn: db.Connection, fact_ids: Sequence[str], now: int, **columns: Any) -> int:
    """Set these columns on each fact's state row (created when missing); returns rows written."""
    names = sorted(columns)
    assignments = ", ".join(f"{n} = excluded.{n}" for n in [*names, "updated_at"])
    sql = (
        f"INSERT INTO fact_state (fact_id, {', '.join(names)}, updated_at) "
        f"VALUES (?, {', '.join('?' * len(names))}, ?) "
        f"ON CONFLICT (fact_id) DO UPDATE SET {assignments}"
    )
    values = [columns[n] for n in names]
    conn.executemany(sql, [(fact_id, *values, now) for fact_id in fact_ids])
    return len(fact_ids)


def hide(conn: db.Connection, fact_ids: Sequence[str], reason: str, now: int, superseded_by: str | None = None) -> int:
    """Soft-delete facts: never recalled or injected again, kept for audit."""
    columns: dict[str, Any] = {"hidden_at": now, "hidden_reason": reason}
    if superseded_by is not None:
        columns["superseded_by"] = superseded_by
    return upsert(conn, fact_ids, now, **columns)


def protect(conn: db.Connection, fact_id: str, now: int) -> None:
    """A person confirmed the fact: confidence 1, decay rate 0, clock restarted, visible again if it had decayed."""
    upsert(
        conn,
        [fact_id],
        now,
        confidence=1.0,
        decay_rate=0.0,
        protected_at=now,
        last_access_at=now,
        hidden_at=None,
        hidden_reason=None,
    )


def lower_confidence(conn: db.Connection, fact_id: str, superseded_by: str, now: int) -> None:
    """A later fact contradicts this one: it keeps CONFLICT_CONFIDENCE unless a person protected it."""
    conn.execute(
        """INSERT INTO fact_state (fact_id, confidence, superseded_by, updated_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (fact_id) DO UPDATE SET
               confidence = CASE WHEN fact_state.protected_at IS NULL
                                 THEN min(fact_state.confidence, excluded.confidence) ELSE fact_state.confidence END,
               superseded_by = excluded.superseded_by, updated_at = excluded.updated_at""",
        (fact_id, CONFLICT_CONFIDENCE, superseded_by, now),
    )


def stamp_enriched(conn: db.Connection, fact_ids: Sequence[str], now: int) -> None:
    upsert(conn, fact_ids, now, enriched_at=now)
