"""`nexus-memory`: the command line, one command group per module, each a thin call into the Python API.

A command imports only its own group's module: a prompt hook that starts `nexus-memory context` once
per turn must not pay for the imports of `report` (Arrow, DuckDB) or of the benchmarks.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from nexus_memory.cli.common import fail
from nexus_memory.core.config import SetupError

# The command groups (modules of this package), in the order `nexus-memory --help` lists their commands.
GROUPS = ("ingest", "report", "memory", "identity", "index", "lifecycle", "serve", "bench")

# Which group registers each command, so that running one imports that group alone. A command missing
# here still runs (every group is loaded to find it); tests/test_speed_cli.py keeps this table whole.
COMMAND_GROUPS: dict[str, str] = {
    **dict.fromkeys(("ingest", "pipeline", "failed", "stats"), "ingest"),
    "report": "report",
    **dict.fromkeys(
        ("recall", "context", "remember", "correct", "confirm", "entity", "observations", "models"), "memory"
    ),
    **dict.fromkeys(("candidates", "writer-notes"), "identity"),
    "rebuild-index": "index",
    **dict.fromkeys(("decay", "conflicts", "enrich", "reflect", "sessions", "forget", "consolidate"), "lifecycle"),
    **dict.fromkeys(("mcp", "serve", "skills"), "serve"),
    "bench": "bench",
}


# The commands a prompt hook starts once per turn: a whole process that answers one query and ends.
ONE_QUERY_COMMANDS = frozenset({"recall", "context"})


def prepare_one_query() -> None:
    """Set a one-query process up for a cold start, before numpy is imported: OpenBLAS starts one thread
    per core when it loads (0.07 s of a cold start here) for matrices a single query does not have, and
    the query model opens without prepacking its weights (embeddings/query_encoder.py)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from nexus_memory.embeddings import query_encoder

    query_encoder.expect_few_queries()


def group_module(group: str) -> ModuleType:
    """A command group's module, imported on first use."""
    return importlib.import_module(f"{__name__}.{group}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of the group that registers `command` when it is known."""
    parser = argparse.ArgumentParser(prog="nexus-memory", description="Long-term memory for AI assistants.")
    subcommands = parser.add_subparsers(dest="command", required=True)
    group = COMMAND_GROUPS.get(command) if command else None
    for name in (group,) if group else GROUPS:
        group_module(name).register(subcommands)
    return parser


def command_name(argv: Sequence[str]) -> str | None:
    """The command the arguments name: the first, unless it is an option (then the top-level parser
    reads them all: `-h`, its only option, lists every command)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: list[str] | None = None) -> int:
    """Run one command: the process's own arguments (the `nexus-memory` script), or `argv`."""
    arguments = sys.argv[1:] if argv is None else argv
    command = command_name(arguments)
    if argv is None and command in ONE_QUERY_COMMANDS:  # the whole process is this one query
        prepare_one_query()
    args = build_parser(command).parse_args(arguments)
    try:
        return int(args.func(args))
    except SetupError as exc:  # a setting, the data directory, a store file, a model: the user's to fix
        return fail(exc)
    except BrokenPipeError:  # `nexus-memory … | head` stopped reading: not an error of ours to print
        # Python flushes stdout again at exit; point it at /dev/null so that flush cannot fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


__all__ = ["COMMAND_GROUPS", "GROUPS", "ONE_QUERY_COMMANDS", "build_parser", "command_name", "group_module", "main"]
