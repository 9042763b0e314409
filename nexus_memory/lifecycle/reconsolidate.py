"""Observations and mental models that rest on facts which changed: found, and marked stale.

A fact that is corrected, decays away, is contradicted or moves to another entity (unmerge) changes
what the observations built on it should say. `mark_stale` is the one call every lifecycle path makes;
the consolidation layer (nexus_memory/consolidation, when installed) rewrites stale observations, and
`facts_to_reconsolidate` tells it which facts each of them should now rest on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexus_memory import db
from nexus_memory.lifecycle.state import hidden_sql

if TYPE_CHECKING:
    from nexus_memory.stores import Stores

OBSERVATION_TYPE = "observation_v1"
_CURRENT_RUN = "NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = r.id)"
_CURRENT_MODEL = "NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)"


@dataclass
class StaleMarks:
    """What one mark_stale call changed."""

    observations: int = 0
    mental_models: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"observations_stale": self.observations, "mental_models_stale": self.mental_models}


def observations_of(conn: db.Connection, fact_ids: Sequence[str]) -> list[str]:
    """Current observation versions (no newer version) that rest on any of these facts."""
    return db.column_in(
        conn,
        f"""SELECT DISTINCT r.id FROM observation_facts o JOIN analysis_runs r ON r.id = o.analysis_run_id
            WHERE r.analysis_type_id = ? AND {_CURRENT_RUN} AND o.fact_id IN ({{marks}})""",
        fact_ids,
        OBSERVATION_TYPE,
    )


def facts_to_reconsolidate(conn: db.Connection, observation_ids: Sequence[str]) -> dict[str, list[str]]:
    """observation id -> the visible facts it should rest on now (its facts minus hidden or deleted ones)."""
    out: dict[str, list[str]] = {}
    for part in db.chunked(list(observation_ids)):
        rows = conn.execute(
            f"""SELECT o.analysis_run_id, f.id FROM observation_facts o JOIN facts f ON f.id = o.fact_id
                WHERE o.analysis_run_id IN ({db.placeholders(part)}) AND NOT {hidden_sql("f")}
                ORDER BY f.as_of, f.id""",
            part,
        ).fetchall()
        for run_id in part:
            out[run_id] = []
        for run_id, fact_id in rows:
            out[run_id].append(fact_id)
    return out


def mark_stale(conn: db.Connection, fact_ids: Sequence[str], entity_ids: Iterable[str] = ()) -> StaleMarks:
    """Observations resting on these facts, and mental models about their entities (or `entity_ids`), go stale."""
    marks = StaleMarks()
    marks.observations = db.execute_in(
        conn,
        "UPDATE analysis_runs SET is_stale = 1 WHERE is_stale = 0 AND id IN ({marks})",
        observations_of(conn, fact_ids),
    )
    entities = set(entity_ids) | set(
        db.column_in(conn, "SELECT DISTINCT entity_id FROM fact_entities WHERE fact_id IN ({marks})", fact_ids)
    )
    marks.mental_models = db.execute_in(
        conn,
        f"""UPDATE mental_models SET is_stale = 1 WHERE id IN (
                SELECT m.id FROM mental_models m
                WHERE m.is_stale = 0 AND {_CURRENT_MODEL} AND m.entity_id IN ({{marks}}))""",
        sorted(entities),
    )
    return marks


def run_consolidation(stores: Stores) -> dict[str, Any] | None:
    """Consolidate pending facts with the consolidation layer; None when this build has none."""
    try:
        from nexus_memory.consolidation import consolidate  # type: ignore[import-not-found]
    except ImportError:  # the observations layer is not part of this build
        return None
    report = consolidate(stores)
    return report.as_dict() if hasattr(report, "as_dict") else {"report": str(report)}


def dossier_dir(stores: Stores) -> Path:
    """Where mental models are written out as markdown: the observations layer's setting, else <data>/dossiers."""
    return Path(getattr(stores.settings, "dossiers", stores.data_dir / "dossiers"))


def refresh_dossiers(stores: Stores) -> int | None:
    """Write every current mental model's dossier again; None when this build has no mental model layer."""
    try:
        from nexus_memory.mental_models.dossiers import sync_dossiers  # type: ignore[import-not-found]
    except ImportError:  # the mental model layer is not part of this build
        return None
    return int(sync_dossiers(stores))
