"""`nexus-memory`: the command line, one subcommand per Python API call."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from nexus_memory.config import load_settings
from nexus_memory.stores import Stores


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from nexus_memory.ingest import detect_format, ingest_file

    path = Path(args.path)
    if not path.is_file():
        print(f"error: {path} is not a file", file=sys.stderr)
        return 2
    fmt = args.format or detect_format(path)
    with Stores(load_settings()) as stores, tqdm(desc=f"ingest {path.name}", unit="rec", file=sys.stderr) as bar:
        summary = ingest_file(stores, path, fmt, on_record=lambda _s: bar.update(1))
    data = summary.as_dict()
    if args.json:
        _print_json(data)
    else:
        print(
            f"read {data['read']}, ingested {data['ingested']}, duplicates {data['duplicates']}, "
            f"rejected {data['rejected']}, partitions touched {len(data['partitions'])}"
        )
        for line in data["rejects"][:20]:
            print(f"  rejected {line}")
    return 1 if summary.rejected else 0


def cmd_pipeline(args: argparse.Namespace) -> int:
    from nexus_memory_assets.pipeline import run_pipeline

    outcome = run_pipeline(
        load_settings(),
        platforms=args.platform or None,
        only_failed=args.only_failed,
        progress=lambda line: print(line, file=sys.stderr),
    )
    _print_json(outcome)
    return 1 if outcome["failed"] else 0


def cmd_stats(args: argparse.Namespace) -> int:
    with Stores(load_settings()) as stores:
        counts = stores.counts()
    if args.json:
        _print_json(counts)
    else:
        for name, value in counts.items():
            print(f"{name:>18}  {value}")
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    from nexus_memory.recall import recall

    with Stores(load_settings()) as stores:
        response = recall(
            stores,
            args.query,
            budget=args.budget,
            max_results=args.max_results,
            platform=args.platform,
            entity=args.entity,
            thread_id=args.thread,
            tags=args.tag,
        )
    if args.json:
        from dataclasses import asdict

        _print_json(asdict(response))
    else:
        for r in response.results:
            print(f"{r.score:.4f}  [{r.type}] {r.text}  {json.dumps(r.ranks)}")
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    from nexus_memory.context import get_context

    with Stores(load_settings()) as stores:
        print(get_context(stores, args.prompt, session_id=args.session))
    return 0


def cmd_candidates(args: argparse.Namespace) -> int:
    from nexus_memory import identity

    with Stores(load_settings()) as stores:
        if args.action == "list":
            rows = identity.list_candidates(stores.conn, args.status)
            if args.json:
                _print_json(rows)
            for r in [] if args.json else rows:
                print(
                    f"{r['id']}  {r['b_name']} ({r['b_type']}) -> {r['a_name']} ({r['a_type']})  "
                    f"conf={r['confidence']:.2f}  {r['reason']}"
                )
            return 0
        if not args.id:
            print("error: accept/reject need a candidate id", file=sys.stderr)
            return 2
        status = identity.resolve_candidate(stores.conn, args.id, accept=args.action == "accept")
        print(f"{args.id}: {status}")
    return 0


def cmd_failed(args: argparse.Namespace) -> int:
    with Stores(load_settings()) as stores:
        rows = [
            dict(r)
            for r in stores.conn.execute(
                """SELECT e.partition_key, p.episode_id, p.attempts, p.error FROM episode_processing p
               JOIN episodes e ON e.id = p.episode_id WHERE p.status = 'failed' ORDER BY e.start_time"""
            )
        ]
    _print_json(rows)
    return 0


def cmd_rebuild_index(args: argparse.Namespace) -> int:
    from nexus_memory.embeddings import get_embedder, rebuild_index, reembed

    embedder = get_embedder(args.model or None)
    with Stores(load_settings()) as stores:
        if args.reembed:
            stats = reembed(
                stores,
                embedder,
                args.reembed,
                on_progress=lambda done, total: print(f"\rembedded {done}/{total}", end="", flush=True),
            )
            print(f"\nre-embedded {stats.rows} rows ({stats.rows_per_s:.0f}/s) with {embedder.model_name}")
            return 0
        rows = rebuild_index(stores, embedder.model_name, embedder.dimension)
    print(f"rebuilt the vector index for {embedder.model_name}: {rows} rows")
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    from nexus_memory.consolidation import consolidate, pick_consolidator
    from nexus_memory.mental_models import after_consolidation

    settings = load_settings()
    with Stores(settings) as stores:
        report = consolidate(
            stores,
            pick_consolidator(settings, offline=args.offline),
            limit=args.limit,
            on_progress=lambda n, r: print(f"\rconsolidated {n} facts", end="", file=sys.stderr),
        )
        print(file=sys.stderr)
        models = after_consolidation(
            stores,
            settings.emergent_models,
            embedder=_index_embedder(stores),
            narrator=_narrator(settings, offline=args.offline),
        )
        outcome = {**report.as_dict(), **models}
    _print_json(outcome)
    return 1 if report.failed else 0


def _index_embedder(stores: Stores) -> object | None:
    """The model of the store's vector index (None when there is none yet)."""
    from nexus_memory.recall.engine import default_embedder

    return default_embedder(stores)


def _narrator(settings: Any, *, offline: bool = False) -> Any:
    """The writer's LLM as the mental-model narrator, when one is configured."""
    from nexus_memory.mental_models.narrative import Narrator

    return Narrator.from_settings(settings) if settings.llm_enabled and not offline else None


def cmd_models(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from nexus_memory import mental_models as mm

    settings = load_settings()
    with Stores(settings) as stores:
        try:
            if args.action == "list":
                models = mm.list_models(stores)
                if args.json:
                    _print_json([{k: v for k, v in asdict(m).items() if k != "description"} for m in models])
                for m in [] if args.json else models:
                    print(f"{m.root_id}  v{m.version}  {m.subtype:<10} {'STALE ' if m.is_stale else ''}{m.name}")
                return 0
            if not args.target:
                print(f"error: models {args.action} needs a name or an id", file=sys.stderr)
                return 2
            if args.action == "create":
                model = mm.create_model(
                    stores,
                    args.target,
                    args.question or "",
                    entity=args.entity,
                    tags=args.tag or (),
                    pinned=args.pin,
                    embedder=_index_embedder(stores),
                    narrator=_narrator(settings),
                )
            elif args.action == "refresh":
                model, _changed = mm.refresh_model(
                    stores, args.target, embedder=_index_embedder(stores), narrator=_narrator(settings)
                )
            elif args.action == "pin":
                model = mm.pin_model(stores, args.target)
            else:
                model = mm.get_model(stores, args.target)
        except mm.ModelError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.json:
        _print_json(asdict(model))
    else:
        print(f"{model.root_id}  v{model.version}  {model.subtype}{'  STALE' if model.is_stale else ''}\n")
        print(model.description)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.kind == "extract":
        from nexus_memory.writer.bench_extract import run as run_extract

        result = run_extract(Path(args.data))
    elif args.kind == "consolidate":
        from nexus_memory.bench_consolidate import run as run_consolidate

        result = run_consolidate(Path(args.data), conversations=args.conversations)
    elif args.kind == "locomo":
        from nexus_memory.bench_locomo import run as run_locomo

        result = run_locomo(Path(args.data), conversations=args.conversations)
    else:
        from nexus_memory.bench_recall import run as run_recall

        result = run_recall(args.facts, queries=args.queries)
    _print_json(result) if args.json else print(json.dumps(result, indent=1, default=str))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nexus-memory", description="Long-term memory for AI assistants.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="import events from a file into events.db")
    p.add_argument("path")
    p.add_argument("--format", choices=["jsonl", "locomo", "chatgpt", "claude"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("pipeline", help="materialise every asset for every partition with pending work")
    p.add_argument("--platform", action="append", help="only this platform (repeatable)")
    p.add_argument("--only-failed", action="store_true", help="rerun only episodes whose writer run failed")
    p.set_defaults(func=cmd_pipeline)

    p = sub.add_parser("stats", help="row counts of every layer")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("recall", help="search memory")
    p.add_argument("query")
    p.add_argument("--budget", choices=["low", "mid", "high"], default="mid")
    p.add_argument("--max-results", type=int, default=10)
    p.add_argument("--platform")
    p.add_argument("--entity")
    p.add_argument("--thread")
    p.add_argument("--tag", action="append", help="access tag held (repeatable): scopes mental models")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("context", help="the memory block to inject before an agent turn")
    p.add_argument("prompt")
    p.add_argument("--session", help="current session id (its own facts are excluded)")
    p.set_defaults(func=cmd_context)

    p = sub.add_parser("candidates", help="list, accept or reject entity merge candidates")
    p.add_argument("action", choices=["list", "accept", "reject"])
    p.add_argument("id", nargs="?")
    p.add_argument("--status", default="pending")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_candidates)

    p = sub.add_parser("failed", help="episodes whose writer run failed, with the reason")
    p.set_defaults(func=cmd_failed)

    p = sub.add_parser("rebuild-index", help="rebuild the vector index from the canonical embeddings table")
    p.add_argument("--model")
    p.add_argument(
        "--reembed",
        nargs="+",
        metavar="TYPE",
        choices=["fact", "observation", "mental_model", "entity"],
        help="also embed these target types again (after the embedded text changed), e.g. --reembed fact",
    )
    p.set_defaults(func=cmd_rebuild_index)

    p = sub.add_parser("consolidate", help="consolidate pending facts into observations, then mental models")
    p.add_argument("--offline", action="store_true", help="the offline rules even when an LLM is configured")
    p.add_argument("--limit", type=int, help="at most this many facts")
    p.set_defaults(func=cmd_consolidate)

    p = sub.add_parser("models", help="mental models: list | show | create | refresh | pin")
    p.add_argument("action", choices=["list", "show", "create", "refresh", "pin"])
    p.add_argument("target", nargs="?", help="create: the model's name; otherwise its id")
    p.add_argument("--question", help="create: the question the model answers")
    p.add_argument("--entity", help="create: who or what it is about (default: named in the name/question)")
    p.add_argument("--tag", action="append", help="create: an access tag (repeatable)")
    p.add_argument("--pin", action="store_true", help="create: refresh after every consolidation")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("bench", help="benchmarks: extract | locomo | recall | consolidate")
    p.add_argument("kind", choices=["extract", "locomo", "recall", "consolidate"])
    p.add_argument("--data", help="LoCoMo JSON (extract, locomo, consolidate)")
    p.add_argument("--conversations", type=int, default=0, help="locomo, consolidate: only the first N conversations")
    p.add_argument("--facts", type=int, default=100_000, help="recall: synthetic store size")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
