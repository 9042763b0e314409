"""recall()'s parameters, declared once, and the checks on them, so a bad argument is one clear RecallArgumentError.

`RECALL_PARAMETERS` is the one table of what recall() takes: each parameter's name, JSON type, recall()'s
default, the values it takes and one line of help. The agent tools' and the LLM writer's JSON schemas
(`recall_tool_schema`), the CLI's and the skills script's flags (cli/common.py `add_recall_flags`) and the
checks below derive from it; tests/test_recall_arguments.py holds recall()'s signature to it.

The checks: filter strings (platform, thread, session) must be valid Unicode (SQLite cannot bind a lone
surrogate) and bounded; times and counts must be integers SQLite can bind; budget and scope must be strings
(the engine says which names exist). The query and the entity filter are free text: the engine cleans them.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nexus_memory.core.textcheck import json_type, show, unicode_problem
from nexus_memory.core.tooling import object_schema

MAX_FILTER_CHARS = 1_000  # platform, thread and session filters (stored ids are at most 256)
MAX_TIME_MS = 2**53  # time filters and reference_time: unix ms of magnitude below this (≈285,000 years)
MAX_RESULTS = 10_000
MAX_TOKENS = 100_000_000

# The engine's names (engine.SCOPES, engine.DEFAULT_SCOPE, engine.BUDGETS); the table test holds them equal.
SCOPES = ("facts", "observations", "mental_models", "entities", "events")
DEFAULT_SCOPE = ("facts", "observations", "mental_models", "events")
BUDGET_NAMES = ("low", "mid", "high")

REQUIRED = inspect.Parameter.empty  # the default of a parameter that has none (recall()'s own mark for it)


class RecallArgumentError(ValueError):
    """An argument of recall() that cannot be used; the message names it and says why."""


# (name, value) -> the value as the engine uses it; RecallArgumentError when it cannot be used.
Check = Callable[[str, Any], Any]


@dataclass(frozen=True)
class RecallParameter:
    """One parameter of recall(): its name, JSON type, recall()'s default, the values it takes, and its help."""

    name: str
    json_type: str  # "string", "integer" or "array" (of strings)
    default: Any  # recall()'s default; None: not given, so None is accepted
    help: str  # one line, for a model reading a tool schema
    choices: tuple[str, ...] = ()  # the values it takes (an array: each item); () for any
    check: Check | None = None

    def checked(self, value: Any) -> Any:
        """The value as the engine uses it; RecallArgumentError when it cannot be used."""
        if (value is None and self.default is None) or self.check is None:
            return value
        return self.check(self.name, value)

    def json_schema(self, *, choices: Sequence[str] | None = None, **changes: Any) -> dict[str, Any]:
        """Its JSON schema: type, values and help from the table; `choices` narrows the values a caller
        offers; `changes` are the caller's own keywords (bounds, a description of its own)."""
        if choices is None:
            choices = self.choices
        elif not set(choices) <= set(self.choices):
            raise ValueError(f"{self.name} takes only {list(self.choices)}, not {list(choices)}")
        schema: dict[str, Any] = {"type": self.json_type}
        values = {"enum": list(choices)} if choices else {}
        if self.json_type == "array":
            schema["items"] = {"type": "string", **values}
        else:
            schema.update(values)
        return {**schema, "description": self.help, **changes}


def _check_string(name: str, value: Any) -> Any:
    if not isinstance(value, str):
        raise RecallArgumentError(f"{name} must be a string, got {json_type(value)}")
    return value


def _check_names(name: str, value: Any) -> Any:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, Sequence) or not all(isinstance(s, str) for s in names):
        raise RecallArgumentError(f"{name} must be a list of names, got {show(value)}")
    return value


def _check_filter(name: str, value: Any) -> str:
    _check_string(name, value)
    if len(value) > MAX_FILTER_CHARS:
        raise RecallArgumentError(f"{name} is {len(value)} characters, over the limit of {MAX_FILTER_CHARS}")
    problem = unicode_problem(value)
    if problem:
        raise RecallArgumentError(f"{name} {problem}")
    return value


def _check_platform(name: str, value: Any) -> str:
    return _check_filter(name, value).strip().lower()  # as the ledger stores it


def _check_time(name: str, value: Any) -> int:
    number = _integer(name, value)
    if abs(number) >= MAX_TIME_MS:
        raise RecallArgumentError(f"{name} must be unix milliseconds below {MAX_TIME_MS}, got {show(value)}")
    return number


def _check_count_up_to(limit: int) -> Check:
    def check(name: str, value: Any) -> int:
        number = _integer(name, value)
        if not 0 <= number <= limit:
            raise RecallArgumentError(f"{name} must be between 0 and {limit}, got {show(value)}")
        return number

    return check


def _integer(name: str, value: Any) -> int:
    """A plain int (numpy integers bind as nothing in SQLite)."""
    if isinstance(value, bool):
        raise RecallArgumentError(f"{name} must be an integer, got a boolean")
    try:
        return operator.index(value)  # int and numpy integers; not floats, strings or NaN
    except TypeError:
        raise RecallArgumentError(f"{name} must be an integer, got {show(value)}") from None


# Checked in this order: the first bad argument is the one reported.
RECALL_PARAMETERS: dict[str, RecallParameter] = {
    p.name: p
    for p in (
        RecallParameter("query", "string", REQUIRED, "What to look for, in natural language."),
        RecallParameter(
            "budget",
            "string",
            "mid",
            "Search depth: low (fast, semantic only), mid (default), high (deepest).",
            BUDGET_NAMES,
            _check_string,
        ),
        RecallParameter(
            "scope",
            "array",
            DEFAULT_SCOPE,
            "What to search (default facts, observations, mental_models, events: what was just said, "
            "before its facts are written).",
            SCOPES,
            _check_names,
        ),
        RecallParameter(
            "max_results", "integer", 20, "How many results (default 20).", check=_check_count_up_to(MAX_RESULTS)
        ),
        RecallParameter(
            "max_tokens",
            "integer",
            None,
            "Keep results in rank order while they fit in this many tokens (about 4 characters each).",
            check=_check_count_up_to(MAX_TOKENS),
        ),
        RecallParameter("entity", "string", None, "Only results about this person/thing (name or id)."),
        RecallParameter(
            "platform", "string", None, "Only results from this platform, e.g. 'imessage'.", check=_check_platform
        ),
        RecallParameter(
            "thread_id", "string", None, "Only results from this conversation thread.", check=_check_filter
        ),
        RecallParameter("session_id", "string", None, "Only results from this session.", check=_check_filter),
        RecallParameter(
            "exclude_session_id", "string", None, "No results from this session (its own facts).", check=_check_filter
        ),
        RecallParameter(
            "time_after", "integer", None, "Only results at or after this unix time (ms).", check=_check_time
        ),
        RecallParameter(
            "time_before", "integer", None, "Only results at or before this unix time (ms).", check=_check_time
        ),
        RecallParameter(
            "reference_time",
            "integer",
            None,
            "The unix time (ms) that dates in the query ('last week') are read against; default now.",
            check=_check_time,
        ),
        RecallParameter("tags", "array", None, "Access tags held: mental models tagged otherwise are not returned."),
    )
}


def recall_tool_schema(offered: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A recall tool's parameters schema: the parameters it offers, in its order, each from the table with the
    tool's own bounds or words (`offered[name]`: keywords of RecallParameter.json_schema); those recall()
    requires are required."""
    properties = {name: RECALL_PARAMETERS[name].json_schema(**changes) for name, changes in offered.items()}
    return object_schema(properties, [name for name in offered if RECALL_PARAMETERS[name].default is REQUIRED])


def check_recall_arguments(**arguments: Any) -> tuple[int | None, int | None, int | None, str | None]:
    """(time_after, time_before, reference_time, platform) as the engine uses them: times as plain ints,
    the platform trimmed and lower-cased. Checks every argument given, in the table's order; raises
    RecallArgumentError for the first bad one."""
    unknown = sorted(set(arguments) - set(RECALL_PARAMETERS))
    if unknown:
        raise TypeError(f"recall() has no parameters {unknown}")
    checked = {
        name: parameter.checked(arguments[name]) for name, parameter in RECALL_PARAMETERS.items() if name in arguments
    }
    return checked["time_after"], checked["time_before"], checked["reference_time"], checked["platform"]


def check_reference_time(value: Any) -> int | None:
    """reference_time as recall() takes it (unix ms as a plain int); RecallArgumentError for a bad one."""
    return RECALL_PARAMETERS["reference_time"].checked(value)
