"""Reading and writing memory: `recall`, `context`, and the agent tools as commands (`remember` … `models`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from nexus_memory.cli.common import (
    Subcommands,
    add_command,
    add_recall_flags,
    fail,
    positive,
    print_json,
    recall_flag_values,
)
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.recall.arguments import RECALL_PARAMETERS

# An agent tool command's arguments -> the tool's name and its arguments (None: left out).
ToolCall = Callable[[argparse.Namespace], tuple[str, dict[str, Any]]]

# The recall parameters `recall` takes as flags (add_recall_flags), with the command's own settings.
RECALL_FLAGS: dict[str, dict[str, Any]] = {
    "budget": {"default": RECALL_PARAMETERS["budget"].default},
    "max_results": {"default": 10},
    "platform": {},
    "entity": {},
    "thread_id": {"flag": "--thread"},
    "tags": {"flag": "--tag", "action": "append", "help": "access tag held (repeatable): scopes mental models"},
}


def register(subcommands: Subcommands) -> None:
    p = add_command(subcommands, "recall", "search memory")
    p.add_argument("query")
    add_recall_flags(p, RECALL_FLAGS)
    p.add_argument("--sources", action="store_true", help="show each result's source events (provenance)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_recall)

    p = add_command(subcommands, "context", "the memory block to inject before an agent turn")
    p.add_argument("prompt")
    p.add_argument("--session", help="current session id (its own facts are excluded)")
    p.add_argument(
        "--participant",
        action="append",
        metavar="PLATFORM:HANDLE[=NAME]",
        help="someone in the conversation, as their platform delivers them (repeatable): a name they go by "
        "means them, not another person of that name",
    )
    p.set_defaults(func=cmd_context)

    p = _tool_command(
        subcommands,
        "remember",
        "remember a fact",
        lambda a: ("remember_fact", {"text": a.text, "entities": a.entity, **_about_arguments(a)}),
    )
    p.add_argument("text")
    p.add_argument("--entity", action="append", help="who or what it is about (repeatable)")
    _add_about_arguments(p)

    p = _tool_command(
        subcommands,
        "correct",
        "replace a wrong fact with the corrected one",
        lambda a: (
            "correct_fact",
            {"fact_id": a.fact_id, "new_text": a.text, "reason": a.reason, **_about_arguments(a)},
        ),
    )
    p.add_argument("fact_id")
    p.add_argument("text")
    p.add_argument("--reason")
    _add_about_arguments(p)

    p = _tool_command(
        subcommands, "confirm", "protect a fact from decay", lambda a: ("confirm_fact", {"fact_id": a.fact_id})
    )
    p.add_argument("fact_id")

    p = _tool_command(
        subcommands,
        "entity",
        "everything about an entity",
        lambda a: ("get_entity_info", {"entity": a.name, "limit": a.limit}),
    )
    p.add_argument("name")
    p.add_argument("--limit", type=positive)

    p = _tool_command(
        subcommands,
        "observations",
        "list observations, or show one by id",
        lambda a: ("show_observation", {"id": a.id}) if a.id else ("list_observations", {"entity": a.entity}),
    )
    p.add_argument("id", nargs="?", help="show this one")
    p.add_argument("--entity", help="only about this entity")

    p = _tool_command(subcommands, "models", "mental models: list, show ID, create NAME, refresh ID", _models_call)
    p.add_argument("words", nargs="*", metavar="ID | create NAME | refresh ID", help="nothing: list them")
    p.add_argument("--entity", help="list: only about this entity; create: who or what it is about")
    p.add_argument("--question", help="create: the question the model answers")
    p.add_argument("--tag", action="append", help="create: an access tag (repeatable)")
    p.add_argument("--pin", action="store_true", help="create: refresh after every consolidation")


def cmd_recall(args: argparse.Namespace) -> int:
    from nexus_memory.recall import RecallArgumentError, recall

    with Stores(load_settings()) as stores:
        try:
            response = recall(stores, args.query, **recall_flag_values(args, RECALL_FLAGS))
        except RecallArgumentError as exc:
            return fail(exc)
    if args.json:
        from dataclasses import asdict

        print_json(asdict(response))
    else:
        for r in response.results:
            print(f"{r.score:.4f}  [{r.type}] {headline(r.text)}  {json.dumps(r.ranks)}")
            for line in _source_lines(args.sources, r.source_event_ids):
                print(f"        {line}")
    return 0


def headline(text: str) -> str:
    """A result on one line: a report (a mental model's dossier) by its first line and how much more
    there is; `--json` and `nexus-memory observations` show it whole."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) <= 1:
        return text.strip()
    return f"{lines[0].strip()} … (+{len(lines) - 1} lines; --json for all)"


def _source_lines(wanted: bool, event_ids: list[str]) -> list[str]:
    """Where a result came from: each source event's platform, sender, time and words."""
    if not wanted or not event_ids:
        return []
    from datetime import UTC, datetime

    from nexus_memory.core import db
    from nexus_memory.events.ledger import row_to_event

    with Stores(load_settings()) as stores:
        rows = stores.conn.execute(f"SELECT * FROM events WHERE id IN ({db.placeholders(event_ids)})", event_ids)
        events = [row_to_event(r) for r in rows]
    lines = []
    for e in events:
        when = datetime.fromtimestamp(e.as_of / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        words = " ".join(e.content.split())
        lines.append(f'from {e.platform}, {e.sender_name or e.sender_id}, {when}: "{words[:140]}"')
    return lines


def cmd_context(args: argparse.Namespace) -> int:
    from nexus_memory.identity.participant import parse_participant
    from nexus_memory.injection.context import get_context

    try:
        people = [parse_participant(text) for text in args.participant or []]
    except ValueError as exc:
        return fail(exc)
    with Stores(load_settings()) as stores:
        print(get_context(stores, args.prompt, session_id=args.session, participants=people))
    return 0


def _add_about_arguments(p: argparse.ArgumentParser) -> None:
    """--about / --about-end: the time a written fact is about (the tools' about_start / about_end)."""
    p.add_argument(
        "--about",
        metavar="WHEN",
        help="when what the fact says happens, if it names a time: 2025-03-14, 2025-03, 2025, or a span "
        "2025-03-18/2025-03-25 (when it was said is now)",
    )
    p.add_argument("--about-end", metavar="WHEN", help="the end of that span, in the same forms")


def _about_arguments(a: argparse.Namespace) -> dict[str, str]:
    """The about-time flags given, as the write tools' arguments."""
    given = {"about_start": a.about, "about_end": a.about_end}
    return {key: value for key, value in given.items() if value is not None}


def _tool_command(subcommands: Subcommands, name: str, summary: str, tool_call: ToolCall) -> argparse.ArgumentParser:
    """A command that calls one agent tool; the caller adds the command's own arguments."""
    p = add_command(subcommands, name, summary)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_tool, tool_call=tool_call)
    return p


def cmd_tool(args: argparse.Namespace) -> int:
    """remember / correct / confirm / entity / observations / models: the agent tool of the same name
    (a fact write with its side effects, agents/writes.py)."""
    from nexus_memory.agents.tools import call_tool

    name, arguments = args.tool_call(args)
    with Stores(load_settings()) as stores:
        result = call_tool(stores, name, {k: v for k, v in arguments.items() if v is not None})
    if "error" in result:
        return fail(result["error"])
    print_json(result) if args.json else print(json.dumps(result, indent=1, ensure_ascii=False, default=str))
    return 0


def _models_call(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """`models` words -> the mental-model tool and its arguments (bad words are the tool's to report)."""
    match args.words:
        case []:
            return "list_mental_models", {"entity": args.entity}
        case ["create", *name]:
            pin = args.pin or None
            return "create_mental_model", {
                "name": " ".join(name),
                "question": args.question,
                "entity": args.entity,
                "tags": args.tag,
                "pin": pin,
            }
        case ["refresh", model_id]:
            return "refresh_mental_model", {"id": model_id}
        case [model_id]:
            return "show_mental_model", {"id": model_id}
    raise SystemExit("error: models takes nothing (list), an id (show), create NAME or refresh ID")
