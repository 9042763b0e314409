"""Memory tools for agents: one registry of OpenAI function tools, and a dispatcher that never raises.

The tools (recall, the memory tools of docs/recall.md, the lifecycle of docs/lifecycle.md), in the order the
MCP server and the OpenAI tool loop list them, one module per group, each tool declared with `tooling`
(name, one-line description, JSON schema, handler) next to its handler:
  search.py         recall, search_memory, get_context
  events.py         record_events (the conversation as it happens, into the ledger)
  fact_writes.py    remember_fact, correct_fact, confirm_fact, forget
  stats.py          memory_stats
  entities.py       get_entity_info
  higher_layers.py  list_observations, show_observation, list_mental_models, show_mental_model,
                    create_mental_model, refresh_mental_model
(common.py: the call a handler runs in and the argument schemas the groups share.)

They are strict: no coercion. `call_tool(stores, name, arguments)` runs one through the registry (the
arguments validated against the tool's JSON schema: required fields, types, enums, ranges, unknown keys)
and returns a JSON-serialisable dict: the result, or {"error": "..."} for bad input or a failure, so the
agent loop can show the model what went wrong.
"""

from __future__ import annotations

import logging
from typing import Any

from nexus_memory.agents.tools import entities, events, fact_writes, higher_layers, search, stats
from nexus_memory.agents.tools.common import CallContext
from nexus_memory.core.stores import Stores
from nexus_memory.core.textcheck import one_line, unicode_problem
from nexus_memory.core.tooling import ToolError, ToolRegistry

__all__ = ["INTERNAL_ERROR", "REGISTRY", "TOOLS", "ToolError", "call_tool", "tool_schemas"]

log = logging.getLogger(__name__)

_GROUPS = (search, events, fact_writes, stats, entities, higher_layers)

REGISTRY = ToolRegistry(
    [tool for group in _GROUPS for tool in group.TOOLS],
    # What a handler raises for a request that cannot be done as asked: the agent sees the reason.
    refusals=tuple(refusal for group in _GROUPS for refusal in group.REFUSALS),
)
TOOLS: list[dict[str, Any]] = REGISTRY.schemas()
INTERNAL_ERROR = "internal error in "  # how the error of a tool that failed (not a refused call) begins


def tool_schemas(names: list[str] | None = None) -> list[dict[str, Any]]:
    """The OpenAI `tools=` list, all tools or the named ones."""
    return REGISTRY.schemas(names)


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
        context = CallContext(stores, session_id, embedder, reference_time)
        result: dict[str, Any] = REGISTRY.call(name, arguments, context)
    except ToolError as exc:
        return {"error": one_line(exc)}
    except Exception as exc:  # the agent loop gets an error result, never an exception
        log.exception("tool %s failed", name)
        return {"error": f"{INTERNAL_ERROR}{name}: {type(exc).__name__}: {exc}"}
    return result
