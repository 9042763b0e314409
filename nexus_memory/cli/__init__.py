"""`nexus-memory`: the command line, one command group per module, each a thin call into the Python API."""

from __future__ import annotations

import argparse

from nexus_memory.cli import bench, identity, index, ingest, lifecycle, memory, report, serve

# The command groups, in the order `nexus-memory --help` lists their commands.
GROUPS = (ingest, report, memory, identity, index, lifecycle, serve, bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nexus-memory", description="Long-term memory for AI assistants.")
    subcommands = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(subcommands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


__all__ = ["build_parser", "main"]
