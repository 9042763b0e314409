"""Confirm and correct: a person's word on one fact.

- confirm: the fact is protected (decay rate 0, confidence 1) and its clock restarts;
- correct: the replacement fact is written by the caller (the agent tools' insert path), then
  `supersede` hides the old one with a link to its replacement. Recall never returns a hidden fact, and
  the observations and mental models built on the old one are marked stale for re-consolidation.
"""

from __future__ import annotations

from typing import Any

from nexus_memory.core import db
from nexus_memory.facts import state
from nexus_memory.lifecycle import decay, reconsolidate


class LifecycleError(ValueError):
    """A lifecycle operation that cannot be done as asked (unknown fact, already corrected)."""


def require_fact(conn: db.Connection, fact_id: str, default_rate: float) -> state.FactState:
    found = state.get_state(conn, fact_id, default_rate)
    if found is None:
        raise LifecycleError(f"no fact with id {fact_id!r}")
    return found


def check_correctable(conn: db.Connection, fact_id: str, default_rate: float) -> None:
    """Raise unless the fact exists and has not been corrected already (correct the newer one instead)."""
    current = require_fact(conn, fact_id, default_rate)
    if current.hidden_reason == "corrected":
        raise LifecycleError(
            f"fact {fact_id} was already corrected by {current.superseded_by}; correct that one instead"
        )


def confirm(conn: db.Connection, fact_id: str, now: int, default_rate: float) -> dict[str, Any]:
    """Protect a fact (a decayed one comes back); returns its state before and after."""
    with db.transaction(conn):
        check_correctable(conn, fact_id, default_rate)  # a corrected fact is wrong: it cannot be confirmed
        before = require_fact(conn, fact_id, default_rate)
        state.protect(conn, fact_id, now)
        after = require_fact(conn, fact_id, default_rate)
    return {
        "fact_id": fact_id,
        "confirmed": True,
        "confidence_before": round(decay.current_confidence(before, now), 4),
        "confidence": after.confidence,
        "decay_rate": after.decay_rate,
        "was_hidden": before.hidden_at is not None,
    }


def supersede(conn: db.Connection, old_fact_id: str, new_fact_id: str, now: int) -> dict[str, int]:
    """Hide the old fact as corrected by the new one; mark what rests on it stale. Call inside a transaction."""
    state.hide(conn, [old_fact_id], "corrected", now, superseded_by=new_fact_id)
    return reconsolidate.mark_stale(conn, [old_fact_id]).as_dict()
