"""Observations and mental models that rest on facts which changed: found, and marked stale.

A fact that is corrected, decays away, is contradicted or moves to another entity (unmerge) changes
what the observations built on it should say. `mark_stale` is the one call every lifecycle path makes;
`run_consolidation` then has the consolidation layer (nexus_memory/observations) write them again without
the hidden facts and refresh the mental models and dossiers built on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexus_memory.core import db
from nexus_memory.core.progress import Progress
from nexus_memory.mental_models import after_consolidation, sync_dossiers
from nexus_memory.mental_models.narrative import configured_narrator
from nexus_memory.observations import consolidate, pick_consolidator
from nexus_memory.recall.strategies import default_embedder

if TYPE_CHECKING:
    from nexus_memory.core.config import Settings
    from nexus_memory.core.stores import Stores

from nexus_memory.recall.filters import OBSERVATION_TYPE

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


def run_consolidation(
    stores: Stores,
    *,
    offline: bool = False,
    limit: int | None = None,
    progress: Progress | None = None,
    llm_settings: Settings | None = None,
    refresh_models: bool = True,
) -> dict[str, Any]:
    """Consolidate what is pending (new and requeued facts, observations resting on hidden facts) with the
    configured consolidator, then bring mental models and their dossiers up to date.

    `llm_settings` say which LLM consolidates and narrates (default: the store's settings). With
    `refresh_models=False` a scheduler refreshes the due models and embeds them (Dagster's mental_models
    partitions): new emergent models are created here but not embedded, and no due model is refreshed.
    Raises ConsolidationBusy when another run is consolidating this store.
    """
    settings = llm_settings or stores.settings
    report = consolidate(stores, pick_consolidator(settings, offline=offline), limit=limit, progress=progress)
    models = after_consolidation(
        stores,
        stores.settings.emergent_models,
        refresh=refresh_models,
        embedder=default_embedder(stores) if refresh_models else None,
        narrator=configured_narrator(settings, offline=offline),
    )
    return {**report.as_dict(), **models}


def dossier_dir(stores: Stores) -> Path:
    """Where mental models are written out as markdown (NEXUS_DOSSIER_DIR, else <data>/dossiers)."""
    return stores.settings.dossiers


def refresh_dossiers(stores: Stores) -> int:
    """Write every current mental model's dossier again (stale banners included); returns files written."""
    return sync_dossiers(stores)
