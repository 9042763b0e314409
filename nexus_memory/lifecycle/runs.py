"""lifecycle_runs: one row per maintenance run (decay, conflicts, enrichment, reflection, sessions)."""

from __future__ import annotations

import json
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import ulid


def record_run(
    conn: db.Connection,
    job: str,
    started_at: int,
    finished_at: int,
    stats: dict[str, Any],
    watermark: int | None = None,
) -> str:
    """Write the run's row (counts only, never content); returns its id."""
    run_id = ulid(finished_at)
    conn.execute(
        "INSERT INTO lifecycle_runs (id, job, started_at, finished_at, watermark, stats) VALUES (?, ?, ?, ?, ?, ?)",
        (run_id, job, started_at, finished_at, watermark, json.dumps(stats, sort_keys=True)),
    )
    return run_id


def last_watermark(conn: db.Connection, job: str) -> int:
    """The watermark of the job's latest run (0 before its first)."""
    row = conn.execute(
        "SELECT watermark FROM lifecycle_runs WHERE job = ? AND watermark IS NOT NULL "
        "ORDER BY finished_at DESC, id DESC LIMIT 1",
        (job,),
    ).fetchone()
    return int(row[0]) if row else 0
