"""Decay: a fact's confidence falls as confidence x exp(-decay_rate x days since its last access).

Below the threshold (default 0.05) the nightly run soft-deletes it: hidden from recall and get_context,
kept for audit (fact_state.hidden_at, reason 'decayed'). Recall returning a fact, or a person confirming
it, restarts its clock; a confirmed fact has rate 0 and never decays. The value is computed from the
stored base confidence and the clock each time, never compounded, so running decay twice on one day
changes nothing.

Default rate 0.01 per day (NEXUS_DECAY_RATE): a fact nobody asks about falls below 0.05 after ~300 days;
at 0.1 (the rate the design card's source used) it would be gone after 30 days, and an imported history
would vanish a month after its import.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms
from nexus_memory.core.stores import Stores
from nexus_memory.facts import state
from nexus_memory.lifecycle import reconsolidate, runs

DAY_MS = 86_400_000
_CHUNK = 50_000  # facts read per query (bounds memory at 1M facts)


def decayed(confidence: float, decay_rate: float, days: float) -> float:
    """confidence x exp(-decay_rate x days); a clock in the future counts as no time."""
    return confidence * math.exp(-decay_rate * max(days, 0.0))


def days_between(start_ms: int, end_ms: int) -> float:
    return (end_ms - start_ms) / DAY_MS


def current_confidence(fact: state.FactState, now: int) -> float:
    return decayed(fact.confidence, fact.decay_rate, days_between(fact.clock_start, now))


@dataclass
class DecayReport:
    """What one decay run saw and changed (counts, never content)."""

    checked: int = 0  # visible facts looked at
    decaying: int = 0  # visible facts that are not protected (their confidence is falling)
    below_half: int = 0  # visible facts whose confidence is now under 0.5
    soft_deleted: int = 0  # hidden by this run
    protected: int = 0  # confirmed facts (rate 0)
    hidden_total: int = 0  # all hidden facts after this run (decayed or corrected)
    mean_confidence: float = 0.0  # over the facts still visible
    observations_stale: int = 0
    mental_models_stale: int = 0
    rate: float = 0.0
    threshold: float = 0.0
    now: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def run_decay(
    stores: Stores, *, now: int | None = None, rate: float | None = None, threshold: float | None = None
) -> DecayReport:
    """Apply decay to every visible fact; soft-delete those below the threshold. One transaction."""
    started = time.perf_counter()
    now = now_ms() if now is None else now
    rate = stores.settings.decay_rate if rate is None else rate
    threshold = stores.settings.decay_threshold if threshold is None else threshold
    if rate < 0 or not 0.0 <= threshold <= 1.0:
        raise ValueError("decay rate must be >= 0 and the threshold between 0 and 1")
    report = DecayReport(rate=rate, threshold=threshold, now=now)
    conn = stores.conn
    total = 0.0
    with db.transaction(conn):
        to_hide: list[str] = []
        for ids, confidence, protected in _visible_facts(conn, now, rate):
            report.checked += len(ids)
            report.protected += int(protected.sum())
            report.decaying += int((~protected).sum())
            report.below_half += int((confidence < 0.5).sum())
            below = confidence < threshold
            to_hide += [ids[i] for i in np.flatnonzero(below)]
            total += float(confidence[~below].sum())
        state.hide(conn, to_hide, "decayed", now)
        report.soft_deleted = len(to_hide)
        marks = reconsolidate.mark_stale(conn, to_hide)
        report.observations_stale, report.mental_models_stale = marks.observations, marks.mental_models
        report.hidden_total = conn.execute("SELECT count(*) FROM fact_state WHERE hidden_at IS NOT NULL").fetchone()[0]
        visible = report.checked - report.soft_deleted
        report.mean_confidence = round(total / visible, 4) if visible else 0.0
        report.seconds = round(time.perf_counter() - started, 3)
        runs.record_run(conn, "decay", now, now_ms(), report.as_dict())
    return report


def _visible_facts(conn: db.Connection, now: int, rate: float):
    """(ids, current confidence, protected) per chunk of visible facts, in rowid order."""
    after = 0
    while True:
        rows = conn.execute(
            """SELECT f.rowid, f.id, f.created_at, s.confidence, s.decay_rate, s.last_access_at
               FROM facts f LEFT JOIN fact_state s ON s.fact_id = f.id
               WHERE f.rowid > ? AND s.hidden_at IS NULL ORDER BY f.rowid LIMIT ?""",
            (after, _CHUNK),
        ).fetchall()
        if not rows:
            return
        after = rows[-1][0]
        base = np.array([1.0 if r[3] is None else r[3] for r in rows], dtype=np.float64)
        rates = np.array([rate if r[4] is None else r[4] for r in rows], dtype=np.float64)
        clock = np.array([r[5] if r[5] is not None else r[2] for r in rows], dtype=np.float64)
        days = np.maximum((now - clock) / DAY_MS, 0.0)
        yield [r[1] for r in rows], base * np.exp(-rates * days), rates == 0.0
