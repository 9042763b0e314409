"""Memory tools for agents: OpenAI function-tool schemas and a dispatcher that never raises.

Tools (seed 000's recall, seed 001's orchestrator tools):
  recall, search_memory, remember_fact, correct_fact, confirm_fact, memory_stats, get_entity_info.

`call_tool(stores, name, arguments)` validates the arguments against the tool's JSON schema (required
fields, types, enums, ranges, unknown keys) and returns a JSON-serialisable dict: the result, or
{"error": "..."} for bad input or a failure, so the agent loop can show the model what went wrong.

Facts are immutable (seed 000), which shapes the write tools:
  - remember_fact inserts a fact with platform 'memory_tool' and metadata {"source": "user"};
  - correct_fact inserts the replacement with metadata {"supersedes": <old id>}; recall drops any
    fact a tool fact supersedes (engine.Filters.fact_sql), so the old one stops being returned;
  - confirm_fact records the confirmation as an access (access_count + 1). Decay is not built yet,
    so there is nothing to protect a fact from; the count is the signal a future decay job can use.
New facts are keyword- and entity-searchable at once, and semantically after the next embedding run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from nexus_memory import db, identity
from nexus_memory.ids import day_of, now_ms, ulid
from nexus_memory.recall.arguments import RecallArgumentError
from nexus_memory.recall.engine import (
    BUDGETS,
    SCOPES,
    TOOL_PLATFORM,
    recall,
    resolve_entity,
)
from nexus_memory.recall.query_entities import match_query_entities
from nexus_memory.recall.results import RecallResult
from nexus_memory.stores import Stores
from nexus_memory.textcheck import one_line, show, unicode_problem

log = logging.getLogger(__name__)

MAX_TEXT = 4_000  # characters of a remembered fact
MAX_QUERY = 10_000
MAX_NAME = 256  # an entity name, platform or id argument
MAX_TIME = 2**53  # time_after / time_before: unix ms (the engine's bound)


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_QUERY = {"type": "string", "description": "What to look for, in natural language.", "maxLength": MAX_QUERY}
_FACT_ID = {
    "type": "string",
    "maxLength": MAX_NAME,
    "description": "The id of a fact, as returned by search_memory or recall.",
}
_ENTITY = {"type": "string", "maxLength": MAX_NAME, "description": "Only results about this person/thing (name or id)."}

TOOLS: list[dict[str, Any]] = [
    _tool(
        "recall",
        "Search long-term memory: facts, observations (consolidated knowledge, may be stale) and "
        "mental models (reports). Hybrid semantic + keyword + entity search. Dates in the query such as "
        "'last week' or 'in May 2023' filter by time.",
        {
            "query": _QUERY,
            "scope": {
                "type": "array",
                "items": {"type": "string", "enum": list(SCOPES)},
                "maxItems": len(SCOPES),
                "description": "What to search (default facts, observations, mental_models).",
            },
            "entity": _ENTITY,
            "time_after": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_TIME,
                "description": "Only results at or after this unix time (ms).",
            },
            "time_before": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_TIME,
                "description": "Only results at or before this unix time (ms).",
            },
            "platform": {
                "type": "string",
                "maxLength": MAX_NAME,
                "description": "Only results from this platform, e.g. 'imessage'.",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "description": "How many results (default 20).",
            },
            "budget": {
                "type": "string",
                "enum": list(BUDGETS),
                "description": "Search depth: low (fast, semantic only), mid (default), high (deepest).",
            },
        },
        ["query"],
    ),
    _tool(
        "search_memory",
        "Search remembered facts about the user and their world. The main retrieval tool.",
        {
            "query": _QUERY,
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many facts (default 5)."},
            "entity": {**_ENTITY, "description": "Only facts about this person/thing (name or id)."},
        },
        ["query"],
    ),
    _tool(
        "remember_fact",
        "Save one fact the user wants remembered, as a short standalone sentence.",
        {
            "text": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_TEXT,
                "description": "The fact, e.g. 'Sarah's birthday is on 4 July'.",
            },
            "entities": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
                "maxItems": 50,
                "description": "Names of the people/places/things the fact is about.",
            },
        },
        ["text"],
    ),
    _tool(
        "correct_fact",
        "Replace a wrong fact with the corrected one. The old fact stops being recalled.",
        {
            "fact_id": _FACT_ID,
            "new_text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT, "description": "The corrected fact."},
            "reason": {"type": "string", "maxLength": MAX_TEXT, "description": "Why it was wrong (optional)."},
        },
        ["fact_id", "new_text"],
    ),
    _tool("confirm_fact", "Record that the user confirmed a fact is correct.", {"fact_id": _FACT_ID}, ["fact_id"]),
    _tool("memory_stats", "How much is remembered: counts per layer and the latest fact's time.", {}, []),
    _tool(
        "get_entity_info",
        "Everything known about one person/place/thing: aliases, merged duplicates and the "
        "latest facts. For 'tell me everything about X'.",
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
]
_SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}


def tool_schemas(names: list[str] | None = None) -> list[dict[str, Any]]:
    """The OpenAI `tools=` list, all tools or the named ones."""
    return [t for t in TOOLS if names is None or t["function"]["name"] in names]


# --- validation ----------------------------------------------------------------------------------

_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def validate(schema: dict[str, Any], value: Any, path: str = "arguments") -> list[str]:
    """Errors of `value` against the JSON-schema subset our tools use (empty when valid)."""
    expected = schema.get("type")
    if expected and not _TYPES[expected](value):
        return [f"{path} must be {'an' if expected[0] in 'aeiou' else 'a'} {expected}, got {type(value).__name__}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path} must be one of {schema['enum']}, got {show(value)}")
    if isinstance(value, str):
        if len(value.strip()) < schema.get("minLength", 0):
            errors.append(f"{path} must not be empty")
        if len(value) > schema.get("maxLength", len(value)):
            errors.append(f"{path} is longer than {schema['maxLength']} characters")
        elif problem := unicode_problem(value):  # SQLite cannot store or match a lone surrogate
            errors.append(f"{path} {problem}")
    if isinstance(value, list) and len(value) > schema.get("maxItems", len(value)):
        errors.append(f"{path} has more than {schema['maxItems']} items")
        return errors
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path} must be >= {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path} must be <= {schema['maximum']}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += validate(schema["items"], item, f"{path}[{i}]")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        errors += [f"missing required argument {key!r}" for key in schema.get("required", []) if key not in value]
        if schema.get("additionalProperties") is False:
            errors += [
                f"unknown argument {show(key)} (allowed: {sorted(properties)})"
                for key in value
                if key not in properties
            ]
        for key, item in value.items():
            if key in properties:
                errors += validate(properties[key], item, key)
    return errors


# --- dispatch ------------------------------------------------------------------------------------


def call_tool(
    stores: Stores,
    name: str,
    arguments: dict[str, Any] | str | None,
    *,
    session_id: str | None = None,
    embedder: object | None = None,
    reference_time: int | None = None,
) -> dict[str, Any]:
    """Validate and run one tool call; always returns a dict (an {"error": ...} one on failure).

    `arguments` may be the JSON string of an OpenAI tool call. `session_id` tags facts the agent
    writes with its session; `embedder` / `reference_time` are passed to recall. Bad input of any
    kind (a name that is not a string, arguments that are not JSON or nest too deep, values of the
    wrong type, out of range or not valid Unicode) is an {"error": ...} result and writes nothing.
    """
    if not isinstance(name, str) or name not in _HANDLERS:
        what = f"tool {show(name)}" if isinstance(name, str) else f"tool name of type {type(name).__name__}"
        return {"error": f"unknown {what}; available: {sorted(_HANDLERS)}"}
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except RecursionError:
            return {"error": "arguments are not usable JSON: nested too deeply"}
        except ValueError as exc:
            return {"error": f"arguments are not valid JSON: {one_line(exc, 300)}"}
    errors = validate(_SCHEMAS[name], arguments)
    if session_id is not None and (not isinstance(session_id, str) or unicode_problem(session_id)):
        errors.append("session_id must be a string of valid Unicode")
    if errors:
        return {"error": "invalid arguments: " + "; ".join(errors)}
    try:
        return _HANDLERS[name](_Call(stores, session_id, embedder, reference_time), **arguments)
    except (ToolError, RecallArgumentError) as exc:
        return {"error": one_line(exc)}
    except Exception as exc:  # the agent loop gets an error result, never an exception
        log.exception("tool %s failed", name)
        return {"error": f"internal error in {name}: {type(exc).__name__}: {exc}"}


class ToolError(ValueError):
    """A tool call that cannot be done as asked (unknown fact, unknown entity)."""


class _Call:
    """What a handler needs besides its arguments."""

    def __init__(
        self, stores: Stores, session_id: str | None, embedder: object | None, reference_time: int | None
    ) -> None:
        self.stores, self.session_id, self.embedder, self.reference_time = stores, session_id, embedder, reference_time

    @property
    def conn(self) -> db.Connection:
        return self.stores.conn


def _recall(call: _Call, query: str, **kwargs: Any) -> dict[str, Any]:
    response = recall(
        call.stores,
        query,
        embedder=call.embedder,
        reference_time=call.reference_time,  # type: ignore[arg-type]
        **kwargs,
    )
    return {
        "results": [result_dict(r) for r in response.results],
        "time_after": response.time_after,
        "time_before": response.time_before,
    }


def _search_memory(call: _Call, query: str, limit: int = 5, entity: str | None = None) -> dict[str, Any]:
    return _recall(call, query, scope=("facts",), max_results=limit, entity=entity)


def result_dict(result: RecallResult) -> dict[str, Any]:
    """A compact, JSON-ready view of a result for the model."""
    out: dict[str, Any] = {
        "id": result.id,
        "type": result.type,
        "text": result.text,
        "score": round(result.score, 5),
        "date": iso_date(result.as_of),
        "entities": [e["name"] for e in result.entities],
    }
    if result.is_stale:
        out["stale"] = True
    if result.platform:
        out["platform"] = result.platform
    if result.source_event_ids:
        out["source_event_ids"] = result.source_event_ids
    return out


def iso_date(ms: int | None) -> str | None:
    return None if ms is None else day_of(ms)


def _remember_fact(call: _Call, text: str, entities: list[str] | None = None) -> dict[str, Any]:
    with call.stores.transaction():
        fact_id, linked = _insert_fact(call, text.strip(), {"source": "user"}, entities or [])
    return {"fact_id": fact_id, "text": text.strip(), "entities": linked}


def _insert_fact(
    call: _Call, text: str, metadata: dict[str, Any], names: Sequence[str], extra_entity_ids: Sequence[str] = ()
) -> tuple[str, list[str]]:
    """Insert a tool-written fact linked to named entities (created if new) and to entities the text names."""
    conn, now = call.conn, now_ms()
    fact_id = ulid(now)
    conn.execute(
        """INSERT INTO facts (id, text, as_of, ingested_at, source_event_id, metadata, created_at,
               platform, thread_id, session_id) VALUES (?, ?, ?, ?, NULL, ?, ?, ?, NULL, ?)""",
        (fact_id, text, now, now, json.dumps(metadata), now, TOOL_PLATFORM, call.session_id),
    )
    entity_ids = [*extra_entity_ids]
    entity_ids += [
        identity.resolve_or_create(conn, n.strip(), "unknown", source="user", seen_at=now) for n in names if n.strip()
    ]
    entity_ids += match_query_entities(conn, text)  # entities the text names that we already know
    entity_ids = list(dict.fromkeys(entity_ids))
    conn.executemany(
        "INSERT OR IGNORE INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, ?)",
        [(fact_id, e, now) for e in entity_ids],
    )
    names_of = _entity_names(conn, entity_ids)
    return fact_id, [names_of[e] for e in entity_ids if e in names_of]


def _entity_names(conn: db.Connection, entity_ids: list[str]) -> dict[str, str]:
    if not entity_ids:
        return {}
    rows = conn.execute(
        f"SELECT id, name FROM entities WHERE id IN ({db.placeholders(entity_ids)})", entity_ids
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def _fact_row(conn: db.Connection, fact_id: str) -> Any:
    row = conn.execute("SELECT id, text, as_of, platform, access_count FROM facts WHERE id = ?", (fact_id,)).fetchone()
    if row is None:
        raise ToolError(f"no fact with id {fact_id!r}")
    return row


def _superseded_by(conn: db.Connection, fact_id: str) -> str | None:
    row = conn.execute(
        """SELECT id FROM facts WHERE platform = ? AND json_valid(metadata)
           AND json_extract(metadata, '$.supersedes') = ? LIMIT 1""",
        (TOOL_PLATFORM, fact_id),
    ).fetchone()
    return row[0] if row else None


def _correct_fact(call: _Call, fact_id: str, new_text: str, reason: str | None = None) -> dict[str, Any]:
    conn = call.conn
    with call.stores.transaction():
        old = _fact_row(conn, fact_id)
        newer = _superseded_by(conn, fact_id)
        if newer:
            raise ToolError(f"fact {fact_id} was already corrected by {newer}; correct that one instead")
        old_entities = [r[0] for r in conn.execute("SELECT entity_id FROM fact_entities WHERE fact_id = ?", (fact_id,))]
        metadata = {"source": "user", "supersedes": fact_id, "original_platform": old["platform"]}
        if reason:
            metadata["reason"] = reason
        new_id, linked = _insert_fact(call, new_text.strip(), metadata, [], old_entities)
    return {
        "fact_id": new_id,
        "supersedes": fact_id,
        "old_text": old["text"],
        "text": new_text.strip(),
        "entities": linked,
    }


def _confirm_fact(call: _Call, fact_id: str) -> dict[str, Any]:
    with call.stores.transaction():
        _fact_row(call.conn, fact_id)
        call.conn.execute("UPDATE facts SET access_count = access_count + 1 WHERE id = ?", (fact_id,))
        row = _fact_row(call.conn, fact_id)
    return {
        "fact_id": fact_id,
        "text": row["text"],
        "confirmed": True,
        "access_count": row["access_count"],
        "note": "recorded as an access; decay is not implemented yet, so facts do not fade meanwhile",
    }


def _memory_stats(call: _Call) -> dict[str, Any]:
    latest, ingested = call.conn.execute("SELECT max(as_of), max(ingested_at) FROM facts").fetchone()
    return {
        "counts": call.stores.counts(),
        "latest_fact_as_of": latest,
        "latest_fact_date": iso_date(latest),
        "latest_fact_ingested_at": ingested,
    }


def _get_entity_info(call: _Call, entity: str, limit: int = 20) -> dict[str, Any]:
    conn = call.conn
    matches = resolve_entity(conn, entity)
    if not matches:
        raise ToolError(f"no entity named {entity!r}")
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
    # Latest facts through the (entity_id, as_of DESC) index, corrections applied.
    facts = conn.execute(
        """SELECT f.id, f.text, f.as_of, f.platform FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
           WHERE fe.entity_id = ? AND f.id NOT IN (
               SELECT json_extract(metadata, '$.supersedes') FROM facts
               WHERE platform = ? AND json_valid(metadata) AND json_extract(metadata, '$.supersedes') IS NOT NULL)
           ORDER BY fe.as_of DESC LIMIT ?""",
        (entity_id, TOOL_PLATFORM, limit),
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
        "facts": [{"id": f[0], "text": f[1], "date": iso_date(f[2]), "platform": f[3]} for f in facts],
        "other_matches": others,
    }


_HANDLERS: dict[str, Callable[..., dict[str, Any]]] = {
    "recall": _recall,
    "search_memory": _search_memory,
    "remember_fact": _remember_fact,
    "correct_fact": _correct_fact,
    "confirm_fact": _confirm_fact,
    "memory_stats": _memory_stats,
    "get_entity_info": _get_entity_info,
}
