"""What every command group shares: adding a command, printing JSON or a summary, one-line errors."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TypeAlias

from nexus_memory.core.textcheck import one_line

# What `add_subparsers()` returns: each group's `register` adds its commands to it.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_command(subcommands: Subcommands, name: str, summary: str) -> argparse.ArgumentParser:
    """A subcommand whose one-line summary is both its line in the parent's help and its own description."""
    return subcommands.add_parser(name, help=summary, description=summary)


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
