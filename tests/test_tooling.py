"""The one tool framework (tooling.py): declaration, registry, validation, the writer's lenient reading."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nexus_memory.agents import tools as agent_tools
from nexus_memory.agents.tools import REGISTRY as AGENT_TOOLS
from nexus_memory.core.json_schema import validate
from nexus_memory.core.stores import Stores
from nexus_memory.core.tooling import Tool, ToolError, ToolRegistry, object_schema, parse_arguments
from nexus_memory.writer import tools as writer_tools
from nexus_memory.writer.llm.model_tools import OPENAI_TOOLS, WRITER_TOOLS, lenient

JUNE_1 = int(datetime(2024, 6, 1, tzinfo=UTC).timestamp() * 1000)


class Refused(Exception):
    """A request the handler cannot do (stands for 'no such fact' and the like)."""


def _echo(context: list[dict[str, Any]], amount: float, as_of: int | None = None, label: str = "") -> dict[str, Any]:
    if amount < 0:
        raise Refused("amount must not be negative here")
    context.append({"amount": amount, "as_of": as_of, "label": label})
    return {"amount": amount, "as_of": as_of, "label": label}


ECHO = Tool(
    "echo",
    "Give back what it was given.",
    object_schema(
        {
            "amount": {"type": "number", "maximum": 10},
            "as_of": {"type": "integer"},
            "label": {"type": "string", "maxLength": 20},
        },
        ["amount"],
    ),
    _echo,
)
STRICT = ToolRegistry([ECHO], refusals=(Refused,))
LENIENT = ToolRegistry([ECHO], coerce=lenient, refusals=(Refused,))


def _error(registry: ToolRegistry, name: object, arguments: object) -> str:
    with pytest.raises(ToolError) as caught:
        registry.call(name, arguments, [])
    assert type(caught.value) is ToolError
    message = str(caught.value)
    assert "\n" not in message and len(message) < 2_000
    return message


def test_a_tool_is_listed_as_an_openai_function() -> None:
    [schema] = STRICT.schemas()
    assert schema == {
        "type": "function",
        "function": {"name": "echo", "description": "Give back what it was given.", "parameters": ECHO.parameters},
    }
    assert ECHO.parameters["additionalProperties"] is False and ECHO.parameters["required"] == ["amount"]
    assert STRICT.schemas(["nothing"]) == [] and STRICT.names == frozenset({"echo"})
    assert [t["function"]["name"] for t in AGENT_TOOLS.schemas(["forget", "recall"])] == ["recall", "forget"]


def test_a_call_runs_the_handler_with_the_context() -> None:
    seen: list[dict[str, Any]] = []
    assert STRICT.call("echo", {"amount": 2.5, "label": "x"}, seen) == {"amount": 2.5, "as_of": None, "label": "x"}
    assert STRICT.call("echo", '{"amount": 1}', seen)["amount"] == 1  # the JSON text of an OpenAI call
    assert len(seen) == 2


@pytest.mark.parametrize(
    "registry", [STRICT, LENIENT, AGENT_TOOLS, WRITER_TOOLS], ids=["strict", "lenient", "agent", "writer"]
)
def test_unknown_tool(registry: ToolRegistry) -> None:
    assert _error(registry, "drop_tables", {}).startswith("unknown tool 'drop_tables'; available: [")
    assert "unknown tool name of type int" in _error(registry, 7, {})
    assert "\\n" in _error(registry, "a\nb", {})  # shown escaped, on one line


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "missing required argument 'amount'"),
        ({"amount": None}, "amount must be a number, got NoneType"),
        ({"amount": True}, "amount must be a number, got bool"),
        ({"amount": [1]}, "amount must be a number, got list"),
        ({"amount": 11}, "amount must be <= 10"),
        ({"amount": 1, "colour": "red"}, "unknown argument 'colour' (allowed: ['amount', 'as_of', 'label'])"),
        ({"amount": 1, "label": "x" * 21}, "label is longer than 20 characters"),
        ({"amount": 1, "label": "\ud800"}, "label is not valid Unicode"),
        ('{"amount": ', "arguments are not valid JSON"),
        ("[1, 2]", "arguments must be an object, got list"),
        (42, "arguments must be an object, got int"),
        ("[" * 100_000 + "]" * 100_000, "arguments are not usable JSON: nested too deeply"),
    ],
)
def test_bad_arguments_are_one_clear_tool_error(arguments: object, message: str) -> None:
    seen: list[dict[str, Any]] = []
    with pytest.raises(ToolError) as caught:
        STRICT.call("echo", arguments, seen)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert seen == []  # the handler never ran


def test_a_refusal_from_the_handler_is_a_tool_error() -> None:
    assert _error(STRICT, "echo", {"amount": -1}) == "amount must not be negative here"


def test_the_writer_reads_leniently_where_the_agent_path_is_strict() -> None:
    assert "amount must be a number, got str" in _error(STRICT, "echo", {"amount": "0.8"})
    seen: list[dict[str, Any]] = []
    assert LENIENT.call("echo", {"amount": " 0.8 ", "label": 42, "as_of": "2024-06-01"}, seen) == {
        "amount": 0.8,
        "as_of": JUNE_1,
        "label": "42",
    }
    # The real tools: a number as text is read by the writer's tools, refused by the agent's.
    tool = WRITER_TOOLS.tool("insert_causal_link")
    args, notes = WRITER_TOOLS.arguments(tool, {"from_fact_id": "a", "to_fact_id": "b", "strength": "0.8"})
    assert args == {"from_fact_id": "a", "to_fact_id": "b", "strength": 0.8} and notes == []
    with pytest.raises(ToolError, match="limit must be an integer, got str"):
        AGENT_TOOLS.arguments(AGENT_TOOLS.tool("search_memory"), {"query": "x", "limit": "5"})
    assert (
        "limit must be an integer"
        in agent_tools.call_tool(None, "search_memory", {"query": "x", "limit": "5"})["error"]
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (JUNE_1, JUNE_1),  # unix ms
        (JUNE_1 // 1000, JUNE_1),  # unix seconds
        (str(JUNE_1), JUNE_1),
        ("2024-06-01T00:00:00Z", JUNE_1),
        ("2024-06-01", JUNE_1),
    ],
)
def test_lenient_times_in_several_formats(when: object, expected: int) -> None:
    assert LENIENT.call("echo", {"amount": 1, "as_of": when}, [])["as_of"] == expected


@pytest.mark.parametrize("when", ["yesterday", "2024", 2024, True, [1], {"t": 1}])
def test_a_time_that_cannot_be_read_is_left_out_with_a_note(when: object) -> None:
    result = LENIENT.call("echo", {"amount": 1, "as_of": when}, [])
    assert result["as_of"] is None
    assert result["note"].startswith("as_of ") and "is not a time" in result["note"]


def test_lenient_reading_leaves_what_it_cannot_read_to_validation() -> None:
    assert "amount must be a number, got str" in _error(LENIENT, "echo", {"amount": "lots"})
    assert "amount must be a number, got str" in _error(LENIENT, "echo", {"amount": "nan"})
    assert "missing required argument 'amount'" in _error(LENIENT, "echo", {"amount": None})  # null: not given
    assert "unknown argument 'colour'" in _error(LENIENT, "echo", {"amount": 1, "colour": "red"})
    assert LENIENT.call("echo", {"amount": 1, "label": None}, [])["label"] == ""  # null optional: the default


def test_the_writer_defaults_what_it_can_do_without() -> None:
    args, _ = WRITER_TOOLS.arguments(WRITER_TOOLS.tool("finish"), {})
    assert args == {"summary": ""}
    args, _ = WRITER_TOOLS.arguments(WRITER_TOOLS.tool("insert_fact"), {"text": "Alice likes tea", "as_of": None})
    assert args == {"text": "Alice likes tea", "source_event_id": ""}
    args, _ = WRITER_TOOLS.arguments(WRITER_TOOLS.tool("recall"), {"query": "Alice", "scope": "entities"})
    assert args["scope"] == ["entities"]
    with pytest.raises(ToolError, match="missing required argument 'text'"):
        WRITER_TOOLS.arguments(WRITER_TOOLS.tool("insert_fact"), {"source_event_id": "e1"})


def test_writer_tools_reject_unknown_keys_in_their_schema_too() -> None:
    assert all(t["function"]["parameters"]["additionalProperties"] is False for t in OPENAI_TOOLS)
    assert all(t["function"]["parameters"]["additionalProperties"] is False for t in agent_tools.TOOLS)


def test_one_tool_error_everywhere(stores: Stores) -> None:
    assert agent_tools.ToolError is ToolError and writer_tools.ToolError is ToolError
    with pytest.raises(ToolError):
        writer_tools.WriterTools(stores, "run-1").link_fact_entity("nope", "nope")
    # The agent surface turns it into an {"error": ...} result of the same one line.
    result = agent_tools.call_tool(stores, "confirm_fact", {"fact_id": "nope"})
    assert result == {"error": "no fact with id 'nope'"}


def test_parse_arguments() -> None:
    assert parse_arguments(None) == {} and parse_arguments("  ") == {} and parse_arguments('{"a": 1}') == {"a": 1}
    with pytest.raises(ToolError, match="not valid JSON"):
        parse_arguments("1" * 5_000)  # an integer too long for Python's int parsing


def test_validate_accepts_a_list_of_types() -> None:
    schema = {"type": ["integer", "string"]}
    assert validate(schema, 5) == [] and validate(schema, "x") == []
    assert validate(schema, 1.5) == ["arguments must be an integer or string, got float"]
