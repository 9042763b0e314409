"""Memory tools for agents: OpenAI function-tool schemas and a dispatcher that never raises.

Tools (recall, the memory tools of docs/recall.md, the lifecycle of docs/lifecycle.md):
  recall, search_memory, get_context, remember_fact, correct_fact, confirm_fact, forget, memory_stats, get_entity_info,
  list_observations, show_observation, list_mental_models, show_mental_model, create_mental_model,
  refresh_mental_model.

The tools are declared with `tooling` (name, one-line description, JSON schema, handler), strictly: no
coercion. `call_tool(stores, name, arguments)` runs one through the registry (the arguments validated
against the tool's JSON schema: required fields, types, enums, ranges, unknown keys) and returns a
JSON-serialisable dict: the result, or {"error": "..."} for bad input or a failure, so the agent loop
can show the model what went wrong.

Facts are immutable (docs/layers.md), which shapes the write tools. Both insert through facts.insert, with
the writer's checks (a fact of at most 2000 characters) and its messages:
  - remember_fact inserts a fact with platform 'memory_tool' and metadata {"source": "user"}; one a
    visible fact already says (nearly the same words, within a day) is not inserted: the answer is that
    fact's id, text and entities with "duplicate": true, and nothing is written or set off;
  - correct_fact inserts the replacement (always: it is near the fact it corrects by nature) with metadata
    {"supersedes": <old id>} and hides the old one beside it (fact_state, lifecycle/corrections.py):
    recall never returns it again, and what was built on it is marked stale;
  - confirm_fact protects a fact from decay (rate 0, confidence 1; lifecycle/corrections.py);
  - forget without confirm=true only says what would be removed; with it, removes it everywhere
    (lifecycle/forget). The CLI's `forget` goes through the same call.
A fact either tool writes gets, once committed, what the pipeline gives the facts it writes
(agent_writes.fact_side_effects): entity co-occurrences, merge candidates for new names that overlap
known ones, and its vector, so it is found by meaning right away. Those are reported in the result
(`side_effects`); one that fails is reported there in one line and the fact stands (a fact left
without a vector is embedded by the pipeline's next embeddings run).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nexus_memory import mental_models
from nexus_memory.agents import browse
from nexus_memory.agents.writes import fact_side_effects, last_entity_rowid
from nexus_memory.core import db
from nexus_memory.core.ids import day_or_none, now_ms
from nexus_memory.core.stores import Stores
from nexus_memory.core.textcheck import MAX_PLATFORM_CHARS, one_line, unicode_problem
from nexus_memory.core.tooling import Tool, ToolError, ToolRegistry, object_schema
from nexus_memory.facts.insert import MAX_FACT_CHARS, Dedup, insert_fact
from nexus_memory.facts.state import hidden_sql
from nexus_memory.identity import store as identity
from nexus_memory.identity.participant import Participant
from nexus_memory.lifecycle import corrections
from nexus_memory.lifecycle.forget import TARGET_KINDS, ForgetError, Target, forget_or_preview
from nexus_memory.mental_models.narrative import configured_narrator
from nexus_memory.recall.arguments import RecallArgumentError
from nexus_memory.recall.engine import (
    BUDGETS,
    SCOPES,
    TOOL_PLATFORM,
    recall,
    resolve_entity,
)
from nexus_memory.recall.participants import MAX_PARTICIPANTS
from nexus_memory.recall.query_entities import match_query_entities
from nexus_memory.recall.results import RecallResult

log = logging.getLogger(__name__)

MAX_TEXT = 4_000  # characters of a reason
MAX_QUERY = 10_000
MAX_NAME = 256  # an entity name, platform or id argument
MAX_TIME = 2**53  # time_after / time_before: unix ms (the engine's bound)


_QUERY = {"type": "string", "description": "What to look for, in natural language.", "maxLength": MAX_QUERY}
_FACT_ID = {
    "type": "string",
    "maxLength": MAX_NAME,
    "description": "The id of a fact, as returned by search_memory or recall.",
}
_ENTITY = {"type": "string", "maxLength": MAX_NAME, "description": "Only results about this person/thing (name or id)."}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many (default 20)."}
_ID = {"type": "string", "minLength": 1, "maxLength": MAX_NAME, "description": "Its id, as a list returned it."}


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
    writes with its session; `embedder` is the model recall embeds queries with and written facts are
    embedded with (None: the store index's model, loaded on first use); `reference_time` is passed to
    recall. Bad input of any kind (a name that is not a string, arguments that are not JSON or nest
    too deep, values of the wrong type, out of range or not valid Unicode) is an {"error": ...} result
    and writes nothing.
    """
    if session_id is not None and (not isinstance(session_id, str) or unicode_problem(session_id)):
        return {"error": "invalid arguments: session_id must be a string of valid Unicode"}
    try:
        result: dict[str, Any] = REGISTRY.call(name, arguments, _Call(stores, session_id, embedder, reference_time))
    except ToolError as exc:
        return {"error": one_line(exc)}
    except Exception as exc:  # the agent loop gets an error result, never an exception
        log.exception("tool %s failed", name)
        return {"error": f"internal error in {name}: {type(exc).__name__}: {exc}"}
    return result


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
        "date": day_or_none(result.as_of),
        "entities": [e["name"] for e in result.entities],
    }
    if result.is_stale:
        out["stale"] = True
    if result.platform:
        out["platform"] = result.platform
    if result.source_event_ids:
        out["source_event_ids"] = result.source_event_ids
    return out


def _get_context(
    call: _Call, message: str, participants: list[dict[str, str]] | None = None, max_tokens: int = 800
) -> dict[str, Any]:
    # Imported here: the packer pulls in consolidation, which a fresh `remember` process never needs.
    from nexus_memory.injection.context import get_context

    try:
        people = [Participant(p["platform"], p["handle"], p.get("name")) for p in participants or []]
    except ValueError as exc:
        raise ToolError(str(exc)) from exc
    block = get_context(
        call.stores,
        message,
        session_id=call.session_id,
        max_tokens=max_tokens,
        reference_time=call.reference_time,
        embedder=call.embedder,
        participants=people,
        strict=True,  # a failure is the caller's to see, as for every tool
    )
    return {"context": block}


def _remember_fact(call: _Call, text: str, entities: list[str] | None = None) -> dict[str, Any]:
    entities_before = last_entity_rowid(call.stores)
    with call.stores.transaction():
        written = _insert_fact(call, text, {"source": "user"}, entities or [], dedup="visible facts")
    result = {"fact_id": written.fact_id, "text": written.text, "entities": written.entities}
    if written.duplicate:  # nothing was written, so nothing is set off
        return {**result, "duplicate": True}
    return {**result, "side_effects": fact_side_effects(call.stores, written.fact_id, entities_before, call.embedder)}


@dataclass(frozen=True)
class _Written:
    """A fact a write tool stored, or the stored near-duplicate that kept it out (`duplicate`: nothing written)."""

    fact_id: str
    text: str  # as stored
    entities: list[str]  # names of the entities it is linked to
    duplicate: bool


def _insert_fact(
    call: _Call,
    text: str,
    metadata: dict[str, Any],
    names: Sequence[str],
    extra_entity_ids: Sequence[str] = (),
    *,
    dedup: Dedup,
) -> _Written:
    """Insert a tool-written fact (facts.insert: the writer's checks and duplicate rule) linked to named entities
    (created if new) and to entities the text names; or return the stored near-duplicate as it is."""
    conn, now = call.conn, now_ms()
    inserted = insert_fact(
        conn,
        text,
        now,
        metadata=metadata,
        ingested_at=now,
        platform=TOOL_PLATFORM,
        session_id=call.session_id,
        dedup=dedup,
    )
    fact_id, duplicate = inserted["fact_id"], inserted["status"] == "duplicate"
    stored = _fact_row(conn, fact_id)["text"]
    if duplicate:
        entity_ids = [r[0] for r in conn.execute("SELECT entity_id FROM fact_entities WHERE fact_id = ?", (fact_id,))]
    else:
        entity_ids = [*extra_entity_ids]
        entity_ids += [
            identity.resolve_or_create(conn, n.strip(), "unknown", source="user", seen_at=now)
            for n in names
            if n.strip()
        ]
        entity_ids += match_query_entities(conn, stored)  # entities the text names that we already know
        entity_ids = list(dict.fromkeys(entity_ids))
        conn.executemany(
            "INSERT OR IGNORE INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, ?)",
            [(fact_id, e, now) for e in entity_ids],
        )
    names_of = _entity_names(conn, entity_ids)
    return _Written(fact_id, stored, [names_of[e] for e in entity_ids if e in names_of], duplicate)


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


def _correct_fact(call: _Call, fact_id: str, new_text: str, reason: str | None = None) -> dict[str, Any]:
    conn, rate = call.conn, call.stores.settings.decay_rate
    entities_before = last_entity_rowid(call.stores)
    with call.stores.transaction():
        old = _fact_row(conn, fact_id)
        corrections.check_correctable(conn, fact_id, rate)
        old_entities = [r[0] for r in conn.execute("SELECT entity_id FROM fact_entities WHERE fact_id = ?", (fact_id,))]
        metadata = {"source": "user", "supersedes": fact_id, "original_platform": old["platform"]}
        if reason:
            metadata["reason"] = reason
        # A correction is always written: it is near the fact it corrects by nature (facts.insert).
        written = _insert_fact(call, new_text, metadata, [], old_entities, dedup="off")
        stale = corrections.supersede(conn, fact_id, written.fact_id, now_ms())
    return {
        "fact_id": written.fact_id,
        "supersedes": fact_id,
        "old_text": old["text"],
        "text": written.text,
        "entities": written.entities,
        **stale,
        "side_effects": fact_side_effects(call.stores, written.fact_id, entities_before, call.embedder),
    }


def _confirm_fact(call: _Call, fact_id: str) -> dict[str, Any]:
    result = corrections.confirm(call.conn, fact_id, now_ms(), call.stores.settings.decay_rate)
    return {"text": _fact_row(call.conn, fact_id)["text"], **result}


def _memory_stats(call: _Call) -> dict[str, Any]:
    latest, ingested = call.conn.execute("SELECT max(as_of), max(ingested_at) FROM facts").fetchone()
    return {
        "counts": call.stores.counts(),
        "latest_fact_as_of": latest,
        "latest_fact_date": day_or_none(latest),
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


def _forget(call: _Call, target: str, value: str, reason: str | None = None, confirm: bool = False) -> dict[str, Any]:
    requested_by = f"agent:{call.session_id}" if call.session_id else "agent"
    return forget_or_preview(
        call.stores, Target(target, value), confirm=confirm, requested_by=requested_by, reason=reason
    )


def _entity_filter(call: _Call, entity: str | None) -> list[str] | None:
    if entity is None:
        return None
    matches = resolve_entity(call.conn, entity)
    if not matches:
        raise ToolError(f"no entity named {entity!r}")
    return matches


def _list_observations(
    call: _Call, entity: str | None = None, stale_only: bool = False, limit: int = 20
) -> dict[str, Any]:
    found = browse.list_observations(
        call.conn, entity_ids=_entity_filter(call, entity), stale_only=stale_only, limit=limit
    )
    return {"observations": found}


def _list_mental_models(
    call: _Call, entity: str | None = None, subtype: str | None = None, limit: int = 20
) -> dict[str, Any]:
    found = browse.list_mental_models(call.conn, subtype=subtype, entity_ids=_entity_filter(call, entity), limit=limit)
    return {"mental_models": found}


def _create_mental_model(
    call: _Call,
    name: str,
    question: str = "",
    entity: str | None = None,
    tags: list[str] | None = None,
    pin: bool = False,
) -> dict[str, Any]:
    model = mental_models.create_model(
        call.stores,
        name,
        question,
        entity=entity,
        tags=tags or (),
        pinned=pin,
        embedder=call.embedder,
        narrator=configured_narrator(call.stores.settings),
    )
    return browse.show_mental_model(call.conn, model.id)


def _refresh_mental_model(call: _Call, id: str) -> dict[str, Any]:
    model, changed = mental_models.refresh_model(
        call.stores, id, embedder=call.embedder, narrator=configured_narrator(call.stores.settings)
    )
    return {**browse.show_mental_model(call.conn, model.id), "changed": changed}


def _show_observation(call: _Call, id: str) -> dict[str, Any]:
    return browse.show_observation(call.conn, id)


def _show_mental_model(call: _Call, id: str) -> dict[str, Any]:
    return browse.show_mental_model(call.conn, id)


# --- the tools ------------------------------------------------------------------------------------

REGISTRY = ToolRegistry(
    [
        Tool(
            "recall",
            "Search long-term memory: facts, observations (consolidated knowledge, may be stale) and "
            "mental models (reports). Hybrid semantic + keyword + entity search. Dates in the query such as "
            "'last week' or 'in May 2023' filter by time.",
            object_schema(
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
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Access tags held: mental models tagged otherwise are not returned.",
                    },
                },
                ["query"],
            ),
            _recall,
        ),
        Tool(
            "search_memory",
            "Search remembered facts about the user and their world. The main retrieval tool.",
            object_schema(
                {
                    "query": _QUERY,
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 50,
                        "description": "How many facts (default 5).",
                    },
                    "entity": {**_ENTITY, "description": "Only facts about this person/thing (name or id)."},
                },
                ["query"],
            ),
            _search_memory,
        ),
        Tool(
            "get_context",
            "The memory worth having in front of you before answering a message: a markdown block of what "
            "is relevant (mental models, observations, facts), or an empty string when memory holds nothing "
            "relevant. Name the people in the conversation so a name means the person who is there.",
            object_schema(
                {
                    "message": {**_QUERY, "description": "The message about to be answered."},
                    "participants": {
                        "type": "array",
                        "maxItems": MAX_PARTICIPANTS,
                        "items": {
                            "type": "object",
                            "properties": {
                                "platform": {"type": "string", "minLength": 1, "maxLength": MAX_PLATFORM_CHARS},
                                "handle": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
                                "name": {"type": "string", "maxLength": MAX_NAME},
                            },
                            "required": ["platform", "handle"],
                            "additionalProperties": False,
                        },
                        "description": "The people in the conversation as their platform delivers them, e.g. "
                        "{'platform': 'imessage', 'handle': '+15550111', 'name': 'John'}.",
                    },
                    "max_tokens": {
                        "type": "integer",
                        "minimum": 100,
                        "maximum": 8000,
                        "description": "Size of the block (default 800).",
                    },
                },
                ["message"],
            ),
            _get_context,
        ),
        Tool(
            "remember_fact",
            "Save one fact the user wants remembered, as a short standalone sentence. A fact already stored (nearly "
            "the same words, within a day) is not saved again: the answer is that fact, with duplicate=true.",
            object_schema(
                {
                    "text": {
                        "type": "string",
                        "minLength": 1,
                        "description": f"The fact (at most {MAX_FACT_CHARS} characters), e.g. 'Sarah's birthday is on "
                        "4 July'.",
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
            _remember_fact,
        ),
        Tool(
            "correct_fact",
            "Replace a wrong fact with the corrected one. The old fact stops being recalled.",
            object_schema(
                {
                    "fact_id": _FACT_ID,
                    "new_text": {
                        "type": "string",
                        "minLength": 1,
                        "description": f"The corrected fact (at most {MAX_FACT_CHARS} characters).",
                    },
                    "reason": {"type": "string", "maxLength": MAX_TEXT, "description": "Why it was wrong (optional)."},
                },
                ["fact_id", "new_text"],
            ),
            _correct_fact,
        ),
        Tool(
            "confirm_fact",
            "The user confirmed a fact is correct: it is protected and never fades from memory.",
            object_schema({"fact_id": _FACT_ID}, ["fact_id"]),
            _confirm_fact,
        ),
        Tool(
            "forget",
            "Forget something everywhere, for good: one event (message), one fact, everything a sender said, or "
            "everything about an entity. First call without confirm to see what would go; call again with "
            "confirm=true only after the user agreed.",
            object_schema(
                {
                    "target": {
                        "type": "string",
                        "enum": list(TARGET_KINDS),
                        "description": "What kind of thing to forget.",
                    },
                    "value": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_NAME,
                        "description": "The event id, fact id, sender handle, or entity name or id.",
                    },
                    "reason": {
                        "type": "string",
                        "maxLength": MAX_TEXT,
                        "description": "Why (kept in the deletion log).",
                    },
                    "confirm": {"type": "boolean", "description": "true: really forget (default false: only preview)."},
                },
                ["target", "value"],
            ),
            _forget,
        ),
        Tool(
            "memory_stats",
            "How much is remembered: counts per layer and the latest fact's time.",
            object_schema({}),
            _memory_stats,
        ),
        Tool(
            "get_entity_info",
            "Everything known about one person/place/thing: aliases, merged duplicates and the "
            "latest facts. For 'tell me everything about X'.",
            object_schema(
                {
                    "entity": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_NAME,
                        "description": "Name, alias or id.",
                    },
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
        ),
        Tool(
            "list_observations",
            "Consolidated knowledge (observations), newest first; 'stale' ones predate newer facts.",
            object_schema({"entity": _ENTITY, "stale_only": {"type": "boolean"}, "limit": _LIMIT}),
            _list_observations,
        ),
        Tool(
            "show_observation",
            "One observation in full, with the facts it rests on.",
            object_schema({"id": _ID}, ["id"]),
            _show_observation,
        ),
        Tool(
            "list_mental_models",
            "Reports about people and topics (mental models), including the weekly reflection.",
            object_schema(
                {
                    "entity": _ENTITY,
                    "subtype": {"type": "string", "maxLength": MAX_NAME, "description": "e.g. 'reflection'."},
                    "limit": _LIMIT,
                }
            ),
            _list_mental_models,
        ),
        Tool(
            "show_mental_model",
            "One mental model's report in full.",
            object_schema({"id": _ID}, ["id"]),
            _show_mental_model,
        ),
        Tool(
            "create_mental_model",
            "Keep a report that answers a standing question about someone or something (e.g. name "
            '"Caroline\'s career", question "What does Caroline want to do for work?"). It is built from '
            "consolidated memory, versioned, and can be refreshed. Creating the same one twice returns it.",
            object_schema(
                {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Short title."},
                    "question": {"type": "string", "maxLength": 1000, "description": "What the report answers."},
                    "entity": {
                        **_ENTITY,
                        "description": "Who or what it is about (name or id); default: from the name.",
                    },
                    "tags": {
                        "type": "array",
                        "maxItems": 20,
                        "items": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
                        "description": "Access tags: only callers holding one of them see it.",
                    },
                    "pin": {"type": "boolean", "description": "Refresh it after every consolidation (default false)."},
                },
                ["name"],
            ),
            _create_mental_model,
        ),
        Tool(
            "refresh_mental_model",
            "Rebuild a mental model's report from current memory (a new version when it changed).",
            object_schema({"id": _ID}, ["id"]),
            _refresh_mental_model,
        ),
    ],
    # What a handler raises for a request that cannot be done as asked: the agent sees the reason.
    refusals=(
        RecallArgumentError,
        corrections.LifecycleError,
        ForgetError,
        browse.NotFound,
        mental_models.ModelError,
    ),
)
TOOLS: list[dict[str, Any]] = REGISTRY.schemas()


def tool_schemas(names: list[str] | None = None) -> list[dict[str, Any]]:
    """The OpenAI `tools=` list, all tools or the named ones."""
    return REGISTRY.schemas(names)
