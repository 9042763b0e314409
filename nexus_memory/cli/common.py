"""What every command group shares: adding a command, printing JSON or a summary, one-line errors."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any, TypeAlias

from nexus_memory.core.textcheck import one_line
from nexus_memory.recall.arguments import RECALL_PARAMETERS

# What `add_subparsers()` returns: each group's `register` adds its commands to it.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_command(subcommands: Subcommands, name: str, summary: str) -> argparse.ArgumentParser:
    """A subcommand whose one-line summary is both its line in the parent's help and its own description."""
    return subcommands.add_parser(name, help=summary, description=summary)


def add_recall_flags(parser: argparse.ArgumentParser, flags: Mapping[str, Mapping[str, Any]]) -> None:
    """A --flag for each of these recall parameters (recall/arguments.py), in this order: its type and
    choices from the table, its dest the parameter's name (`recall_flag_values` reads them back). `flags`
    maps each name to the command's own settings: `flag` (default --the-name), and argparse's default,
    help, nargs or action."""
    for name, settings in flags.items():
        parameter, options = RECALL_PARAMETERS[name], dict(settings)
        flag = options.pop("flag", "--" + name.replace("_", "-"))
        if parameter.choices:
            options["choices"] = parameter.choices
        else:  # as argparse would name it from the flag: --thread THREAD
            options["metavar"] = flag.lstrip("-").replace("-", "_").upper()
        if parameter.json_type == "integer":
            options["type"] = int
        parser.add_argument(flag, dest=name, **options)


def recall_flag_values(args: argparse.Namespace, flags: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The recall parameters `add_recall_flags` added, by name, as the command line gave them."""
    return {name: getattr(args, name) for name in flags}


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def print_result(result: dict[str, Any], as_json: bool, summary: str) -> None:
    """The whole result as JSON (`--json`), else the one-line summary a person reads."""
    if as_json:
        print_json(result)
    else:
        print(summary)


def fail(message: object) -> int:
    """One line on stderr saying what is wrong; exit status 2 (nothing was done)."""
    print(f"error: {one_line(message)}", file=sys.stderr)
    return 2


def positive(text: str) -> int:
    """An argument type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, not {text}")
    return value


def port(text: str) -> int:
    """An argument type: a TCP port, 1 to 65535 (a server told 99999 must not claim to listen there)."""
    value = int(text)
    if not 1 <= value <= 65_535:
        raise argparse.ArgumentTypeError(f"must be a port from 1 to 65535, not {text}")
    return value
