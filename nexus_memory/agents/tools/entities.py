"""The agent tool about one entity: get_entity_info (its aliases, merged duplicates and latest facts)."""

from __future__ import annotations

from typing import Any

from nexus_memory.agents.tools.common import MAX_NAME, CallContext, entity_matches
from nexus_memory.core import db
from nexus_memory.core.ids import day_or_none
from nexus_memory.core.tooling import Tool, object_schema
from nexus_memory.facts.state import hidden_sql


def _get_entity_info(call: CallContext, entity: str, limit: int = 20) -> dict[str, Any]:
    conn = call.conn
    matches = entity_matches(conn, entity)
    entity_id = matches[0]
    row = conn.execute(
        """SELECT id, name, type, source, is_user, mention_count, first_seen, last_seen
                          FROM entities WHERE id = ?""",
        (entity_id,),
    ).fetchone()
    aliases = conn.execute(
        "SELECT alias, alias_type, platform FROM aliases WHERE entity_id = ? ORDER BY alias", (entity_id,)
    ).fetchall()
    merged = conn.execute(
        "SELECT id, name, type FROM entities WHERE merged_into = ? ORDER BY name", (entity_id,)
    ).fetchall()
    # Latest facts through the (entity_id, as_of DESC) index, without hidden (corrected, decayed) ones.
    facts = conn.execute(
        f"""SELECT f.id, f.text, f.as_of, f.platform FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
           WHERE fe.entity_id = ? AND NOT {hidden_sql("f")} ORDER BY fe.as_of DESC LIMIT ?""",
        (entity_id, limit),
    ).fetchall()
    others = [
        dict(zip(("id", "name", "type"), r, strict=True))
        for r in conn.execute(
            f"SELECT id, name, type FROM entities WHERE id IN ({db.placeholders(matches)})", matches
        ).fetchall()
        if r[0] != entity_id
    ]
    return {
        "entity": dict(row),
        "aliases": [dict(zip(("alias", "alias_type", "platform"), a, strict=True)) for a in aliases],
        "merged": [dict(zip(("id", "name", "type"), m, strict=True)) for m in merged],
        "facts": [{"id": f[0], "text": f[1], "date": day_or_none(f[2]), "platform": f[3]} for f in facts],
        "other_matches": others,
    }


GET_ENTITY_INFO = Tool(
    "get_entity_info",
    "Everything known about one person/place/thing: aliases, merged duplicates and the "
    "latest facts. For 'tell me everything about X'.",
    object_schema(
        {
            "entity": {"type": "string", "minLength": 1, "maxLength": MAX_NAME, "description": "Name, alias or id."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "description": "How many latest facts (default 20).",
            },
        },
        ["entity"],
    ),
    _get_entity_info,
)

TOOLS = (GET_ENTITY_INFO,)
REFUSALS: tuple[type[Exception], ...] = ()
