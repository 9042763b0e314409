"""Serving agents: `mcp` (the agent tools over MCP), `serve` (the same tools as a JSON API over HTTP) and `skills`
(the folder for agents in code mode)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from nexus_memory.cli.common import (
    Subcommands,
    add_command,
    add_recall_flags,
    fail,
    port,
    print_json,
    recall_flag_values,
)
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores

# The recall parameters `skills search` takes as flags (add_recall_flags); one not given is the tool's default.
SEARCH_FLAGS: dict[str, dict[str, Any]] = {
    "entity": {"help": "search: only about this entity (name or id)"},
    "max_results": {},
    "platform": {},
    "budget": {},
    "scope": {"nargs": "+"},
}


def register(subcommands: Subcommands) -> None:
    p = add_command(subcommands, "mcp", "serve the agent tools over MCP (stdio, or streamable HTTP on loopback)")
    p.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1 instead of stdio")
    p.add_argument("--port", type=port, default=8765, help="HTTP port (default 8765); the path is /mcp")
    p.add_argument("--session", help="session id that facts written through the tools are tagged with")
    p.set_defaults(func=cmd_mcp)

    p = add_command(subcommands, "serve", "serve the agent tools as a JSON API over HTTP, described by /openapi.json")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; beyond it: a token)")
    p.add_argument("--port", type=port, default=8766, help="port (default 8766)")
    p.add_argument("--token", help="bearer token every request must send (default: NEXUS_API_TOKEN)")
    p.add_argument("--session", help="session id that facts written through the tools are tagged with")
    p.set_defaults(func=cmd_serve)

    p = add_command(subcommands, "skills", "skills folder for agents in code mode: export DIR | search QUERY")
    p.add_argument("action", choices=["export", "search"])
    p.add_argument("value", metavar="DIR|QUERY", help="export: the folder to write; search: what to look for")
    add_recall_flags(p, SEARCH_FLAGS)
    p.add_argument("--after", help="search: only from this day on (YYYY-MM-DD)")
    p.add_argument("--before", help="search: only up to this day (YYYY-MM-DD)")
    p.set_defaults(func=cmd_skills)


def cmd_mcp(args: argparse.Namespace) -> int:
    from nexus_memory.agents.listening import CannotListen
    from nexus_memory.agents.mcp_server import serve

    try:
        serve(load_settings(), http=args.http, port=args.port, session_id=args.session)
    except CannotListen as exc:
        return fail(exc)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from nexus_memory.agents.http_api import RefusedToStart, serve
    from nexus_memory.agents.listening import CannotListen

    settings = load_settings()
    try:
        serve(settings, host=args.host, port=args.port, token=args.token or settings.api_token, session_id=args.session)
    except (RefusedToStart, CannotListen) as exc:
        return fail(exc)
    return 0


def cmd_skills(args: argparse.Namespace) -> int:
    from nexus_memory.agents import skills
    from nexus_memory.agents.tools import call_tool

    if args.action == "export":
        with Stores(load_settings()) as stores:
            try:
                written = skills.export(stores, Path(args.value))
            except OSError as exc:  # the folder cannot be made or written (a file there, no permission)
                return fail(f"cannot write the skills folder {args.value}: {exc.strerror or exc}")
        for path in written:
            print(path)
        return 0
    try:
        arguments = skills.search_arguments(
            args.value, after=args.after, before=args.before, **recall_flag_values(args, SEARCH_FLAGS)
        )
    except ValueError as exc:  # a malformed day
        return fail(exc)
    with Stores(load_settings()) as stores:
        result = call_tool(stores, "recall", arguments)
    print_json(result)
    return 1 if "error" in result else 0
