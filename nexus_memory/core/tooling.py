"""Tools a model or agent calls: one way to declare them, one registry, one validation path, one error.

A `Tool` is a name, a one-line description, the JSON schema of its arguments and a handler called as
`handler(context, **arguments)`. A `ToolRegistry` lists its tools as OpenAI function schemas (the same
schemas the MCP server lists) and runs a call: the arguments are parsed (a JSON string is accepted),
optionally read leniently by the registry's coercion (for small models: numbers given as text, times
in several formats, null for "not given"), validated against the tool's schema with
`json_schema.validate`, and passed to the handler. Anything wrong with the call is a `ToolError`
whose message is one line the caller can act on.

Used by the agent tools (`agents/tools`, strict) and the LLM writer's tools (`writer/llm/model_tools`,
lenient).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from nexus_memory.core.json_schema import validate
from nexus_memory.core.textcheck import one_line, show


class ToolError(ValueError):
    """A tool call that cannot be done as asked; the message says, on one line, what to fix."""


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what it does in one line, the JSON schema of its arguments, and its handler."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[..., Any]  # handler(context, **arguments)

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool form (`tools=` of a chat completion)."""
        function = {"name": self.name, "description": self.description, "parameters": self.parameters}
        return {"type": "function", "function": function}


def object_schema(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    """The parameters schema of a tool: these properties, these required, nothing else."""
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


# Reads a call's arguments leniently before validation: (tool, arguments) -> (arguments, notes), where
# the notes say what was left out or changed, and go back to the caller with the result.
Coercion = Callable[[Tool, dict[str, Any]], tuple[dict[str, Any], list[str]]]


def parse_arguments(raw: object) -> dict[str, Any]:
    """A call's arguments as a dict, from a dict or the JSON text of one; ToolError otherwise."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except RecursionError:
            raise ToolError("arguments are not usable JSON: nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise ToolError(f"arguments are not valid JSON ({exc.msg} at character {exc.pos})") from None
        except ValueError as exc:  # e.g. an integer of too many digits
            raise ToolError(f"arguments are not valid JSON: {one_line(exc, 300)}") from None
    if not isinstance(raw, dict):
        raise ToolError(f"arguments must be an object, got {type(raw).__name__}")
    return raw


class ToolRegistry:
    """A set of tools and the one way to call them.

    `coerce` (optional) reads arguments leniently before validation. `refusals` are exception types
    a handler raises for a request that cannot be done (unknown id, ...): they become ToolError.
    """

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        coerce: Coercion | None = None,
        refusals: tuple[type[Exception], ...] = (),
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.coerce = coerce
        self.refusals = refusals

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.tools)

    def schemas(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The OpenAI `tools=` list: all tools in declaration order, or only the named ones."""
        wanted = None if names is None else set(names)
        return [tool.schema() for tool in self.tools.values() if wanted is None or tool.name in wanted]

    def tool(self, name: object) -> Tool:
        if not isinstance(name, str) or name not in self.tools:
            what = f"tool {show(name)}" if isinstance(name, str) else f"tool name of type {type(name).__name__}"
            raise ToolError(f"unknown {what}; available: {sorted(self.tools)}")
        return self.tools[name]

    def arguments(self, tool: Tool, raw: object) -> tuple[dict[str, Any], list[str]]:
        """Parsed, coerced and validated arguments of a call to `tool`, with the coercion's notes."""
        arguments, notes = parse_arguments(raw), []
        if self.coerce is not None:
            arguments, notes = self.coerce(tool, arguments)
        errors = validate(tool.parameters, arguments)
        if errors:
            raise ToolError(one_line("invalid arguments: " + "; ".join(errors)))
        return arguments, notes

    def call(self, name: object, arguments: object, context: Any) -> Any:
        """Run one call; ToolError when the name, the arguments or the request itself is wrong."""
        tool = self.tool(name)
        args, notes = self.arguments(tool, arguments)
        try:
            result = tool.handler(context, **args)
        except self.refusals as exc:
            raise ToolError(one_line(exc)) from exc
        if not notes:
            return result
        note = "; ".join(notes)
        return {**result, "note": note} if isinstance(result, dict) else {"results": result, "note": note}
