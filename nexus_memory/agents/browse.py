"""Listing and showing observations and mental models: one implementation for the agent tools and the CLI.

Only current versions are listed (no newer version points at them); `show` takes any version's id and
says which version is current, whether it is stale, and (for an observation) the facts it rests on.
"""

from __future__ import annotations

import json
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import day_or_none
from nexus_memory.facts.state import hidden_sql
from nexus_memory.recall.filters import OBSERVATION_TYPE

PREVIEW_CHARS = 300


class NotFound(ValueError):
    """No observation or mental model with that id."""


def _preview(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def list_observations(
    conn: db.Connection, *, entity_ids: list[str] | None = None, stale_only: bool = False, limit: int = 20
) -> list[dict[str, Any]]:
    """Current observations, newest first; only those resting on facts about `entity_ids` when given."""
    clauses = [
        "r.analysis_type_id = ?",
        "NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = r.id)",
        "coalesce(r.output_text, '') != ''",
    ]
    args: list[Any] = [OBSERVATION_TYPE]
    if stale_only:
        clauses.append("r.is_stale")
    if entity_ids is not None:
        clauses.append(
            f"""r.id IN (SELECT o.analysis_run_id FROM observation_facts o JOIN fact_entities fe
                ON fe.fact_id = o.fact_id WHERE fe.entity_id IN ({db.placeholders(entity_ids) or "NULL"}))"""
        )
        args += entity_ids
    rows = conn.execute(
        f"""SELECT r.id, r.output_text, r.is_stale, r.created_at,
                   (SELECT count(*) FROM observation_facts o WHERE o.analysis_run_id = r.id) AS facts
            FROM analysis_runs r WHERE {" AND ".join(clauses)} ORDER BY r.created_at DESC, r.id LIMIT ?""",
        [*args, limit],
    ).fetchall()
    return [
        {"id": r[0], "text": _preview(r[1]), "stale": bool(r[2]), "date": day_or_none(r[3]), "facts": r[4]}
        for r in rows
    ]


def show_observation(conn: db.Connection, observation_id: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT * FROM analysis_runs WHERE id = ? AND analysis_type_id = ?", (observation_id, OBSERVATION_TYPE)
    ).fetchone()
    if row is None:
        raise NotFound(f"no observation with id {observation_id!r}")
    facts = conn.execute(
        f"""SELECT f.id, f.text, f.as_of, {hidden_sql("f")} AS hidden FROM observation_facts o
            JOIN facts f ON f.id = o.fact_id WHERE o.analysis_run_id = ? ORDER BY f.as_of, f.id""",
        (observation_id,),
    ).fetchall()
    return {
        "id": row["id"],
        "text": row["output_text"],
        "stale": bool(row["is_stale"]),
        "status": row["status"],
        "date": day_or_none(row["created_at"]),
        "current_version": _current(conn, "analysis_runs", observation_id),
        "previous_version": row["parent_id"],
        "facts": [{"id": f[0], "text": f[1], "date": day_or_none(f[2]), "hidden": bool(f[3])} for f in facts],
    }


def list_mental_models(
    conn: db.Connection, *, subtype: str | None = None, entity_ids: list[str] | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """Current mental models, most recently updated first."""
    clauses, args = ["NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)"], []
    if subtype is not None:
        clauses.append("m.subtype = ?")
        args.append(subtype)
    if entity_ids is not None:
        clauses.append(f"m.entity_id IN ({db.placeholders(entity_ids) or 'NULL'})")
        args += entity_ids
    rows = conn.execute(
        f"""SELECT m.id, m.name, m.subtype, m.description, m.is_stale, m.updated_at FROM mental_models m
            WHERE {" AND ".join(clauses)} ORDER BY m.updated_at DESC, m.id LIMIT ?""",
        [*args, limit],
    ).fetchall()
    return [
        {
            "id": r[0],
            "name": r[1],
            "subtype": r[2],
            "text": _preview(r[3]),
            "stale": bool(r[4]),
            "date": day_or_none(r[5]),
        }
        for r in rows
    ]


def show_mental_model(conn: db.Connection, model_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM mental_models WHERE id = ?", (model_id,)).fetchone()
    if row is None:
        raise NotFound(f"no mental model with id {model_id!r}")
    try:
        tags = json.loads(row["tags"]) if row["tags"] else []
    except ValueError:
        tags = [row["tags"]]
    return {
        "id": row["id"],
        "name": row["name"],
        "subtype": row["subtype"],
        "entity_id": row["entity_id"],
        "text": row["description"],
        "tags": tags,
        "stale": bool(row["is_stale"]),
        "last_refreshed": day_or_none(row["last_refreshed"]),
        "updated": day_or_none(row["updated_at"]),
        "current_version": _current(conn, "mental_models", model_id),
        "previous_version": row["parent_id"],
    }


def _current(conn: db.Connection, table: str, version_id: str) -> str:
    """The newest version of the chain `version_id` belongs to (following parent_id forward)."""
    seen = {version_id}
    while True:
        child = conn.execute(
            f"SELECT id FROM {table} WHERE parent_id = ? ORDER BY created_at DESC, id DESC LIMIT 1", (version_id,)
        ).fetchone()
        if child is None or child[0] in seen:
            return version_id
        version_id = child[0]
        seen.add(version_id)
