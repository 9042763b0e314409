"""`nexus-memory`: the command line, one subcommand per Python API call."""

from nexus_memory.cli.app import main

__all__ = ["main"]
