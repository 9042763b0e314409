"""The agent tools that read memory: recall, search_memory, and get_context (the block before a turn)."""

from __future__ import annotations

from typing import Any

from nexus_memory.agents.tools.common import ENTITY, MAX_NAME, MAX_QUERY, QUERY, CallContext
from nexus_memory.core.ids import day_or_none
from nexus_memory.core.textcheck import MAX_PLATFORM_CHARS
from nexus_memory.core.tooling import Tool, ToolError, object_schema
from nexus_memory.identity.participant import Participant
from nexus_memory.recall.arguments import MAX_TIME_MS, SCOPES, RecallArgumentError, recall_tool_schema
from nexus_memory.recall.engine import recall
from nexus_memory.recall.participants import MAX_PARTICIPANTS
from nexus_memory.recall.results import RecallResult

_TIME = {"minimum": 0, "maximum": MAX_TIME_MS}


def _recall(call: CallContext, query: str, **kwargs: Any) -> dict[str, Any]:
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


RECALL = Tool(
    "recall",
    "Search long-term memory: facts, observations (consolidated knowledge, may be stale), "
    "mental models (reports), and messages recorded moments ago whose facts are not written yet (type "
    "'event'). Hybrid semantic + keyword + entity search. Dates in the query such as 'last week' or "
    "'in May 2023' filter by time.",
    recall_tool_schema(
        {
            "query": {"maxLength": MAX_QUERY},
            "scope": {"maxItems": len(SCOPES)},
            "entity": {"maxLength": MAX_NAME},
            "time_after": _TIME,
            "time_before": _TIME,
            "platform": {"maxLength": MAX_NAME},
            "max_results": {"minimum": 1, "maximum": 100},
            "budget": {},
            "tags": {},
        }
    ),
    _recall,
)


def _search_memory(call: CallContext, query: str, limit: int = 5, entity: str | None = None) -> dict[str, Any]:
    return _recall(call, query, scope=("facts", "events"), max_results=limit, entity=entity)


SEARCH_MEMORY = Tool(
    "search_memory",
    "Search remembered facts about the user and their world (and messages recorded moments ago, until their "
    "facts are written). The main retrieval tool.",
    object_schema(
        {
            "query": QUERY,
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many facts (default 5)."},
            "entity": {**ENTITY, "description": "Only facts about this person/thing (name or id)."},
        },
        ["query"],
    ),
    _search_memory,
)


def _get_context(
    call: CallContext, message: str, participants: list[dict[str, str]] | None = None, max_tokens: int = 800
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


GET_CONTEXT = Tool(
    "get_context",
    "The memory worth having in front of you before answering a message: a markdown block of what "
    "is relevant (mental models, observations, facts), or an empty string when memory holds nothing "
    "relevant. Name the people in the conversation so a name means the person who is there.",
    object_schema(
        {
            "message": {**QUERY, "description": "The message about to be answered."},
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
)

TOOLS = (RECALL, SEARCH_MEMORY, GET_CONTEXT)
REFUSALS: tuple[type[Exception], ...] = (RecallArgumentError,)  # a recall argument the engine cannot use
