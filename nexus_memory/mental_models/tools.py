"""Agent tools for mental models: create one from a name and a question, read one, refresh one.

Schemas in the OpenAI `tools=` shape and handlers with agent_tools' signature `(call, **arguments)`;
agent_tools registers them, validates arguments and turns ModelError into an {"error": ...} result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nexus_memory.mental_models.api import create_model, get_model, refresh_model
from nexus_memory.mental_models.store import Model


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


_MODEL = {"type": "string", "minLength": 1, "description": "The model's id, as create_mental_model returned it."}

MODEL_TOOLS: list[dict[str, Any]] = [
    _tool(
        "create_mental_model",
        "Keep a report that answers a standing question about someone or something (e.g. name "
        '"Caroline\'s career", question "What does Caroline want to do for work?"). It is built from '
        "consolidated memory, versioned, and can be refreshed. Creating the same one twice returns it.",
        {
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Short title."},
            "question": {"type": "string", "maxLength": 1000, "description": "What the report answers."},
            "entity": {
                "type": "string",
                "description": "Who or what it is about (name or id); default: from the name.",
            },
            "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "Access tags."},
            "pin": {"type": "boolean", "description": "Refresh it after every consolidation (default false)."},
        },
        ["name"],
    ),
    _tool(
        "get_mental_model",
        "Read a mental model's current report (and whether it is stale).",
        {"model": _MODEL},
        ["model"],
    ),
    _tool("refresh_mental_model", "Rebuild a mental model's report from current memory.", {"model": _MODEL}, ["model"]),
]


def model_dict(model: Model) -> dict[str, Any]:
    """A JSON-ready view of a model for the agent."""
    return {
        "id": model.root_id,
        "version": model.version,
        "name": model.name,
        "question": model.question,
        "subtype": model.subtype,
        "entity_id": model.entity_id,
        "tags": model.tags,
        "stale": model.is_stale,
        "report": model.description,
    }


def _create(
    call: Any,
    name: str,
    question: str = "",
    entity: str | None = None,
    tags: list[str] | None = None,
    pin: bool = False,
) -> dict[str, Any]:
    model = create_model(
        call.stores, name, question, entity=entity, tags=tags or (), pinned=pin, embedder=call.embedder
    )
    return model_dict(model)


def _get(call: Any, model: str) -> dict[str, Any]:
    return model_dict(get_model(call.stores, model))


def _refresh(call: Any, model: str) -> dict[str, Any]:
    fresh, changed = refresh_model(call.stores, model, embedder=call.embedder)
    return {**model_dict(fresh), "changed": changed}


MODEL_HANDLERS: dict[str, Callable[..., dict[str, Any]]] = {
    "create_mental_model": _create,
    "get_mental_model": _get,
    "refresh_mental_model": _refresh,
}
