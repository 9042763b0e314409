"""The vector index: `rebuild-index`, from the canonical embeddings table, embedding rows again on request."""

from __future__ import annotations

import argparse

from nexus_memory.cli.common import Subcommands, add_command
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores


def register(subcommands: Subcommands) -> None:
    p = add_command(subcommands, "rebuild-index", "rebuild the vector index from the canonical embeddings table")
    p.add_argument("--model")
    p.add_argument(
        "--reembed",
        nargs="+",
        metavar="TYPE",
        choices=["fact", "observation", "mental_model", "entity"],
        help="also embed these target types again (after the embedded text changed), e.g. --reembed fact",
    )
    p.set_defaults(func=cmd_rebuild_index)


def cmd_rebuild_index(args: argparse.Namespace) -> int:
    from nexus_memory.embeddings.model import get_embedder
    from nexus_memory.embeddings.step import embedder_for_store, rebuild_index, reembed

    settings = load_settings()
    embedder = get_embedder(args.model or None, settings=settings)
    with Stores(settings) as stores:
        if args.reembed:
            stats = reembed(
                stores,
                embedder,
                args.reembed,
                on_progress=lambda done, total: print(f"\rembedded {done}/{total}", end="", flush=True),
            )
            print(f"\nre-embedded {stats.rows} rows ({stats.rows_per_s:.0f}/s) with {embedder.model_name}")
            return 0
        if not args.model:  # the configured recipe: under auto, the one the store already has
            embedder = embedder_for_store(stores, embedder)
        rows = rebuild_index(stores, embedder.model_name, embedder.dimension)
    print(f"rebuilt the vector index for {embedder.model_name}: {rows} rows")
    return 0
