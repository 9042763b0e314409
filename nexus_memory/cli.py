"""`nexus-memory`: the command line, one subcommand per Python API call."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from nexus_memory.config import load_settings
from nexus_memory.stores import Stores

if TYPE_CHECKING:
    from nexus_memory_assets.pipeline import PipelineOutcome


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
    try:
        from nexus_memory_assets.pipeline import run_pipeline

        outcome = run_pipeline(
            load_settings(),
            platforms=args.platform or None,
            only_failed=args.only_failed,
            progress=None if args.json else (lambda line: print(line, file=sys.stderr, flush=True)),
        )
    except ValueError as exc:  # a setting the partitions cannot be built from, such as a future start
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        _print_json(outcome.as_dict())
    else:
        _print_pipeline(outcome)
    return 0 if outcome.ok else 1


def _print_pipeline(outcome: PipelineOutcome) -> None:
    """The pipeline's outcome for a person: a table of what each run built, then anything left undone."""
    if outcome.orphaned_runs:
        print(
            f"marked {len(outcome.orphaned_runs)} runs of killed processes failed: {', '.join(outcome.orphaned_runs)}"
        )
    if not outcome.runs:
        print("nothing to do: every event is processed")
    else:
        layers = ["events", "episodes", "facts", "embeddings"]
        header = ["platform", "partitions", *layers, "seconds", "run"]
        rows = [
            [r.platform, r.first if r.first == r.last else f"{r.first}..{r.last}"]
            + [str(r.rows.get(layer, "-")) for layer in layers]
            + [f"{r.seconds:.1f}", "ok" if r.success else "FAILED"]
            for r in outcome.runs
        ]
        rows.append(
            ["total", ""]
            + [str(sum(r.rows.get(layer, 0) for r in outcome.runs)) for layer in layers]
            + [f"{outcome.seconds:.1f}", f"{len(outcome.runs)} runs"]
        )
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        print("\nbuilt (rows added per layer; run logs in the Dagster UI):")
        for row in [header, *rows]:
            print(
                "  "
                + "  ".join(
                    c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
                )
            )
    for run in outcome.runs:
        for error in run.errors:
            print(f"run {run.run_id} ({run.platform}) failed at {error}")
    if outcome.failed_episodes:
        print(
            f"{len(outcome.failed_episodes)} episodes failed (their events wait): `nexus-memory failed` lists them, "
            "`nexus-memory pipeline --only-failed` reruns only them"
        )
        for failed in outcome.failed_episodes[:5]:
            print(f"  {failed.partition_key} {failed.episode_id}: {failed.error}")
    if outcome.unprocessed_events:
        left = ", ".join(f"{platform} {n}" for platform, n in sorted(outcome.unprocessed_events.items()))
        print(f"events with work left after this pipeline: {left} (failed episodes or runs above; rerun to finish)")


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
        )
    if args.json:
        from dataclasses import asdict

        _print_json(asdict(response))
    else:
        for r in response.results:
            print(f"{r.score:.4f}  [{r.type}] {r.text}  {json.dumps(r.ranks)}")
            for line in _source_lines(args.sources, r.source_event_ids):
                print(f"        {line}")
    return 0


def _source_lines(wanted: bool, event_ids: list[str]) -> list[str]:
    """Where a result came from: each source event's platform, sender, time and words."""
    if not wanted or not event_ids:
        return []
    from datetime import UTC, datetime

    from nexus_memory import db
    from nexus_memory.events import row_to_event

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
    from nexus_memory.partitions import split_partition_key
    from nexus_memory.writer.run import failed_episodes

    with Stores(load_settings()) as stores:
        failed = failed_episodes(stores)
    _print_json(
        [
            {"day": split_partition_key(f.partition_key)[0], "platform": split_partition_key(f.partition_key)[1]}
            | {"partition_key": f.partition_key, "episode_id": f.episode_id, "attempts": f.attempts, "error": f.error}
            for f in failed
        ]
    )
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


def cmd_bench(args: argparse.Namespace) -> int:
    if args.kind == "extract":
        from nexus_memory.writer.bench_extract import run as run_extract

        result = run_extract(Path(args.data))
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

    p = sub.add_parser(
        "pipeline", help="build every layer for every event with work left, one Dagster run per platform"
    )
    p.add_argument("--platform", action="append", help="only this platform (repeatable)")
    p.add_argument("--only-failed", action="store_true", help="rerun only episodes whose writer run failed")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON (no progress lines)")
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
    p.add_argument("--sources", action="store_true", help="show each result's source events (provenance)")
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

    p = sub.add_parser("bench", help="benchmarks: extract | locomo | recall")
    p.add_argument("kind", choices=["extract", "locomo", "recall"])
    p.add_argument("--data", help="LoCoMo JSON (extract, locomo)")
    p.add_argument("--conversations", type=int, default=0, help="locomo: only the first N conversations")
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
