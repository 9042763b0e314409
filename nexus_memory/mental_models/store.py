"""Mental models in SQLite: versions (parent_id chains), sources, staleness, refresh triggers.

A model's chain has a readable, stable `root_id` ("mm-carolines-career-3f2a9c": its first version's id,
and its Dagster partition key); version n is "<root>-v<n>". Only the newest version of a chain is
current. A refresh that produces the same report adds no version: it only clears the stale flag.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms, stable_id

SUBTYPES = ("structural", "emergent", "pinned")
CURRENT_SQL = "NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)"


@dataclass
class Model:
    """The current version of one mental model."""

    id: str
    root_id: str
    name: str
    question: str
    description: str
    subtype: str
    entity_id: str | None
    tags: list[str]
    refresh_trigger: dict[str, Any]
    is_stale: bool
    version: int
    last_refreshed: int | None
    updated_at: int
    sources: list[tuple[str, str]] = field(default_factory=list)

    @property
    def refresh_after_consolidation(self) -> bool:
        return bool(self.refresh_trigger.get("refresh_after_consolidation"))


def slug(text: str, limit: int = 40) -> str:
    """Lower-case ascii words joined by '-' (for ids and file names)."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))
    return "-".join(words)[:limit].strip("-") or "model"


def root_id_for(name: str, question: str, entity_id: str | None) -> str:
    """The same name, question and entity always give the same chain (creating twice creates once)."""
    return f"mm-{slug(name)}-{stable_id('mm', name, question, entity_id)[3:9]}"


def _version_id(root_id: str, version: int) -> str:
    return root_id if version == 1 else f"{root_id}-v{version}"


def _version_of(model_id: str) -> int:
    match = re.search(r"-v(\d+)$", model_id)
    return int(match.group(1)) if match else 1


def _row_model(row: Any) -> Model:
    return Model(
        id=row["id"],
        root_id=row["root_id"] or row["id"],
        name=row["name"],
        question=row["question"] or "",
        description=row["description"],
        subtype=row["subtype"] or "structural",
        entity_id=row["entity_id"],
        tags=_json_list(row["tags"]),
        refresh_trigger=_json_dict(row["refresh_trigger"]),
        is_stale=bool(row["is_stale"]),
        version=_version_of(row["id"]),
        last_refreshed=row["last_refreshed"],
        updated_at=row["updated_at"],
    )


def _json_list(text: str | None) -> list[str]:
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _json_dict(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def current(conn: db.Connection, root_or_id: str) -> Model | None:
    """The current version of the chain that `root_or_id` (a root id or any version id) belongs to."""
    row = conn.execute(
        "SELECT root_id FROM mental_models WHERE id = ? OR root_id = ? LIMIT 1", (root_or_id, root_or_id)
    ).fetchone()
    if row is None:
        return None
    root = row[0] or root_or_id
    found = conn.execute(
        f"SELECT m.* FROM mental_models m WHERE (m.root_id = ? OR m.id = ?) AND {CURRENT_SQL}", (root, root)
    ).fetchone()
    if found is None:
        return None
    model = _row_model(found)
    model.sources = [
        (r[0], r[1])
        for r in conn.execute(
            """SELECT source_type, source_id FROM mental_model_sources WHERE mental_model_id = ?
               ORDER BY source_type, source_id""",
            (model.id,),
        )
    ]
    return model


def list_current(conn: db.Connection, *, subtype: str | None = None) -> list[Model]:
    """Current versions of every model (or of one subtype), by name."""
    where, args = CURRENT_SQL, []
    if subtype:
        where += " AND m.subtype = ?"
        args.append(subtype)
    rows = conn.execute(f"SELECT m.* FROM mental_models m WHERE {where} ORDER BY m.name, m.id", args).fetchall()
    return [_row_model(r) for r in rows]


def insert_version(
    conn: db.Connection,
    *,
    root_id: str,
    parent: Model | None,
    name: str,
    question: str,
    description: str,
    subtype: str,
    entity_id: str | None,
    tags: Sequence[str],
    refresh_trigger: dict[str, Any],
    sources: Sequence[tuple[str, str]],
) -> str:
    """Add a version (the first when `parent` is None); returns its id."""
    now = now_ms()
    version = parent.version + 1 if parent else 1
    model_id = _version_id(root_id, version)
    conn.execute(
        """INSERT INTO mental_models (id, name, description, subtype, entity_id, tags, parent_id, is_stale,
               refresh_trigger, last_refreshed, access_count, created_at, updated_at, root_id, question)
           VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, 0, ?, ?, ?, ?)""",
        (
            model_id,
            name,
            description,
            subtype,
            entity_id,
            json.dumps(list(tags)),
            parent.id if parent else None,
            json.dumps(refresh_trigger, sort_keys=True),
            now,
            now,
            now,
            root_id,
            question,
        ),
    )
    conn.executemany(
        "INSERT OR IGNORE INTO mental_model_sources (mental_model_id, source_type, source_id) VALUES (?, ?, ?)",
        [(model_id, t, i) for t, i in sources],
    )
    return model_id


def mark_fresh(conn: db.Connection, model_id: str) -> None:
    """A refresh found nothing new: the version stays, it is just no longer stale."""
    conn.execute("UPDATE mental_models SET is_stale = 0, last_refreshed = ? WHERE id = ?", (now_ms(), model_id))


def set_pinned(conn: db.Connection, model_id: str) -> None:
    """Pinned: kept and refreshed after every consolidation (a property of the chain, not new content)."""
    trigger = json.dumps({"refresh_after_consolidation": True}, sort_keys=True)
    conn.execute(
        "UPDATE mental_models SET subtype = 'pinned', refresh_trigger = ?, updated_at = ? WHERE id = ?",
        (trigger, now_ms(), model_id),
    )


def due(conn: db.Connection) -> list[Model]:
    """Current models that are stale and ask to be refreshed after consolidation."""
    rows = conn.execute(
        f"SELECT m.* FROM mental_models m WHERE m.is_stale = 1 AND {CURRENT_SQL} ORDER BY m.id"
    ).fetchall()
    return [m for m in map(_row_model, rows) if m.refresh_after_consolidation]
