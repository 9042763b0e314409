"""The agent tools over layers 5 and 6: list and show observations; list, show, create and refresh mental models."""

from __future__ import annotations

from typing import Any

from nexus_memory import mental_models
from nexus_memory.agents import browse
from nexus_memory.agents.tools.common import ENTITY, ID, LIMIT, MAX_NAME, CallContext, entity_matches
from nexus_memory.core.tooling import Tool, object_schema
from nexus_memory.mental_models.narrative import configured_narrator


def _entity_filter(call: CallContext, entity: str | None) -> list[str] | None:
    return None if entity is None else entity_matches(call.conn, entity)


def _list_observations(
    call: CallContext, entity: str | None = None, stale_only: bool = False, limit: int = 20
) -> dict[str, Any]:
    found = browse.list_observations(
        call.conn, entity_ids=_entity_filter(call, entity), stale_only=stale_only, limit=limit
    )
    return {"observations": found}


LIST_OBSERVATIONS = Tool(
    "list_observations",
    "Consolidated knowledge (observations), newest first; 'stale' ones predate newer facts.",
    object_schema({"entity": ENTITY, "stale_only": {"type": "boolean"}, "limit": LIMIT}),
    _list_observations,
)


def _show_observation(call: CallContext, id: str) -> dict[str, Any]:
    return browse.show_observation(call.conn, id)


SHOW_OBSERVATION = Tool(
    "show_observation",
    "One observation in full, with the facts it rests on.",
    object_schema({"id": ID}, ["id"]),
    _show_observation,
)


def _list_mental_models(
    call: CallContext, entity: str | None = None, subtype: str | None = None, limit: int = 20
) -> dict[str, Any]:
    found = browse.list_mental_models(call.conn, subtype=subtype, entity_ids=_entity_filter(call, entity), limit=limit)
    return {"mental_models": found}


LIST_MENTAL_MODELS = Tool(
    "list_mental_models",
    "Reports about people and topics (mental models), including the weekly reflection.",
    object_schema(
        {
            "entity": ENTITY,
            "subtype": {"type": "string", "maxLength": MAX_NAME, "description": "e.g. 'reflection'."},
            "limit": LIMIT,
        }
    ),
    _list_mental_models,
)


def _show_mental_model(call: CallContext, id: str) -> dict[str, Any]:
    return browse.show_mental_model(call.conn, id)


SHOW_MENTAL_MODEL = Tool(
    "show_mental_model",
    "One mental model's report in full.",
    object_schema({"id": ID}, ["id"]),
    _show_mental_model,
)


def _create_mental_model(
    call: CallContext,
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


CREATE_MENTAL_MODEL = Tool(
    "create_mental_model",
    "Keep a report that answers a standing question about someone or something (e.g. name "
    '"Caroline\'s career", question "What does Caroline want to do for work?"). It is built from '
    "consolidated memory, versioned, and can be refreshed. Creating the same one twice returns it.",
    object_schema(
        {
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Short title."},
            "question": {"type": "string", "maxLength": 1000, "description": "What the report answers."},
            "entity": {**ENTITY, "description": "Who or what it is about (name or id); default: from the name."},
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
)


def _refresh_mental_model(call: CallContext, id: str) -> dict[str, Any]:
    model, changed = mental_models.refresh_model(
        call.stores, id, embedder=call.embedder, narrator=configured_narrator(call.stores.settings)
    )
    return {**browse.show_mental_model(call.conn, model.id), "changed": changed}


REFRESH_MENTAL_MODEL = Tool(
    "refresh_mental_model",
    "Rebuild a mental model's report from current memory (a new version when it changed).",
    object_schema({"id": ID}, ["id"]),
    _refresh_mental_model,
)

TOOLS = (
    LIST_OBSERVATIONS,
    SHOW_OBSERVATION,
    LIST_MENTAL_MODELS,
    SHOW_MENTAL_MODEL,
    CREATE_MENTAL_MODEL,
    REFRESH_MENTAL_MODEL,
)
# An id that names nothing; a model that cannot be made or refreshed as asked.
REFUSALS: tuple[type[Exception], ...] = (browse.NotFound, mental_models.ModelError)
