"""recall()'s parameter table (recall/arguments.py): held to recall()'s signature; what the interfaces derive from."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

import pytest

from nexus_memory.agents.tools import REGISTRY as AGENT_TOOLS
from nexus_memory.cli import build_parser
from nexus_memory.recall import engine
from nexus_memory.recall.arguments import (
    BUDGET_NAMES,
    DEFAULT_SCOPE,
    RECALL_PARAMETERS,
    REQUIRED,
    SCOPES,
    RecallArgumentError,
    check_recall_arguments,
)
from nexus_memory.writer.llm.model_tools import WRITER_TOOLS

# recall()'s parameters that only Python callers give: objects and switches, not arguments of a tool or a flag.
PYTHON_ONLY = {"stores", "embedder", "parse_dates", "touch"}


def test_the_table_is_recall_signature() -> None:
    """Every parameter of recall() is in the table with recall()'s default, and the table has nothing else."""
    signature = inspect.signature(engine.recall).parameters
    assert set(signature) - PYTHON_ONLY == set(RECALL_PARAMETERS)
    assert {name: signature[name].default for name in RECALL_PARAMETERS} == {
        name: parameter.default for name, parameter in RECALL_PARAMETERS.items()
    }
    assert RECALL_PARAMETERS["query"].default is REQUIRED


def test_the_table_names_the_engine_scopes_and_budgets() -> None:
    assert (engine.SCOPES, engine.DEFAULT_SCOPE, tuple(engine.BUDGETS)) == (SCOPES, DEFAULT_SCOPE, BUDGET_NAMES)
    assert RECALL_PARAMETERS["scope"].choices == SCOPES and RECALL_PARAMETERS["budget"].choices == BUDGET_NAMES


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema["type"]
    return set(kind) if isinstance(kind, list) else {kind}


@pytest.mark.parametrize(("registry", "tool"), [(AGENT_TOOLS, "recall"), (WRITER_TOOLS, "recall")])
def test_recall_tool_schemas_come_from_the_table(registry: Any, tool: str) -> None:
    """Each property is a parameter of the table, of its type (the writer also reads times as text) and its values."""
    schema = registry.tool(tool).parameters
    assert schema["required"] == ["query"]
    for name, prop in schema["properties"].items():
        parameter = RECALL_PARAMETERS[name]
        assert parameter.json_type in _types(prop) and _types(prop) <= {parameter.json_type, "string"}
        values = prop.get("items", prop).get("enum")
        assert (values is None) == (not parameter.choices), name
        assert values is None or set(values) <= set(parameter.choices), name


def _flags(command: str) -> dict[str, argparse.Action]:
    subcommands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {action.dest: action for action in subcommands.choices[command]._actions}


@pytest.mark.parametrize("command", ["recall", "skills"])
def test_recall_flags_come_from_the_table(command: str) -> None:
    """A flag named for a recall parameter has its type and values (skills' --after/--before are days)."""
    flags = {dest: action for dest, action in _flags(command).items() if dest in RECALL_PARAMETERS}
    assert flags
    for name, action in flags.items():
        parameter = RECALL_PARAMETERS[name]
        assert tuple(action.choices or ()) == parameter.choices
        assert (action.type is int) == (parameter.json_type == "integer")


def test_the_check_reports_the_first_bad_argument_in_table_order() -> None:
    good: dict[str, Any] = {name: p.default for name, p in RECALL_PARAMETERS.items() if name != "query"}
    with pytest.raises(RecallArgumentError, match=r"^budget must be a string"):
        check_recall_arguments(**{**good, "budget": 1, "platform": 2})
    with pytest.raises(TypeError, match="no parameters"):
        check_recall_arguments(**good, colour="red")
    assert check_recall_arguments(**{**good, "platform": " IMessage ", "time_after": 5}) == (5, None, None, "imessage")
