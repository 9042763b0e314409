"""`nexus-memory`: the command line, one subcommand per Python API call."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nexus_memory.config import load_settings
from nexus_memory.stores import Stores


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _fail(message: object) -> int:
    """One line on stderr saying what is wrong; exit status 2 (nothing was done)."""
    from nexus_memory.textcheck import one_line

    print(f"error: {one_line(message)}", file=sys.stderr)
    return 2


def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from nexus_memory.events import IngestSummary
    from nexus_memory.ingest import detect_format, ingest_file

    path = Path(args.path)
    if not path.is_file():
        return _fail(f"{path} {'is not a file' if path.exists() else 'does not exist'}")
    bar: list[tqdm] = []  # made at the first record, so a file refused as a whole prints only its error

    def progress(_summary: IngestSummary) -> None:
        if not bar:
            bar.append(tqdm(desc=f"ingest {path.name}", unit="rec", file=sys.stderr))
        bar[0].update(1)

    try:
        fmt = args.format or detect_format(path)
        with Stores(load_settings()) as stores:
            summary = ingest_file(stores, path, fmt, on_record=progress)
    except ValueError as exc:  # the file as a whole: missing, empty, not JSON, wrong shape, unknown format
        return _fail(exc)
    finally:
        for b in bar:
            b.close()
    data = summary.as_dict()
    if args.json:
        _print_json(data)
    else:
        print(
            f"read {data['read']}, ingested {data['ingested']}, duplicates {data['duplicates']}, "
            f"conflicts {data['conflicts']}, rejected {data['rejected']}, "
            f"partitions touched {len(data['partitions'])}"
        )
        if summary.conflicts:
            print(f"  {summary.conflicts} record(s) reuse an event id with other content; the stored events are kept")
        for line in data["rejects"][:20]:
            print(f"  rejected {line}")
    return 1 if summary.rejected or summary.conflicts else 0


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


def cmd_report(args: argparse.Namespace) -> int:
    from nexus_memory.analytics.report import build_report, render_text
    from nexus_memory.analytics.source import StoresMissing

    try:
        report = build_report(load_settings(), args.section or None)
    except StoresMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _print_json(report) if args.json else print(render_text(report))
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    from nexus_memory.recall import RecallArgumentError, recall

    with Stores(load_settings()) as stores:
        try:
            response = recall(
                stores,
                args.query,
                budget=args.budget,
                max_results=args.max_results,
                platform=args.platform,
                entity=args.entity,
                thread_id=args.thread,
            )
        except RecallArgumentError as exc:
            return _fail(exc)
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
        rows = rebuild_index(stores, embedder.model_name, embedder.dimension)
    print(f"rebuilt the vector index for {embedder.model_name}: {rows} rows")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.kind == "extract" and args.writer == "llm":
        from nexus_memory.bench.extract_llm import run_llm

        result = run_llm(
            Path(args.data),
            conversations=args.conversations,
            max_episodes=args.episodes,
            episode_turns=args.episode_turns,
            mode=args.mode,
        )
    elif args.kind == "extract":
        from nexus_memory.bench.extract import run as run_extract

        result = run_extract(Path(args.data))
    elif args.kind == "analytics":
        from nexus_memory.analytics.bench import run as run_analytics
        from nexus_memory_assets.analytics import time_materialisation

        data_dir = Path(args.data_dir or load_settings().data_dir / "bench-analytics")
        result = run_analytics(data_dir, args.events, progress=lambda line: print(line, file=sys.stderr))
        result["dagster"] = time_materialisation(str(data_dir))
    elif args.kind == "locomo":
        from nexus_memory.bench.locomo import run as run_locomo

        result = run_locomo(Path(args.data), conversations=args.conversations)
    else:
        from nexus_memory.bench.recall import run as run_recall

        result = run_recall(args.facts, queries=args.queries)
    _print_json(result) if args.json else print(json.dumps(result, indent=1, default=str))
    return 0


def _report_sections() -> list[str]:
    from nexus_memory.analytics.report import SECTIONS

    return list(SECTIONS)


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

    p = sub.add_parser("report", help="the operator's figures: backlog, outcomes, entities, coverage (read-only)")
    p.add_argument("--section", action="append", choices=_report_sections(), help="only this section (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("recall", help="search memory")
    p.add_argument("query")
    p.add_argument("--budget", choices=["low", "mid", "high"], default="mid")
    p.add_argument("--max-results", type=int, default=10)
    p.add_argument("--platform")
    p.add_argument("--entity")
    p.add_argument("--thread")
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

    p = sub.add_parser("bench", help="benchmarks: extract | locomo | recall | analytics")
    p.add_argument("kind", choices=["extract", "locomo", "recall", "analytics"])
    p.add_argument("--data", help="LoCoMo JSON (extract, locomo)")
    p.add_argument("--conversations", type=int, default=0, help="locomo, extract: only the first N conversations")
    p.add_argument("--writer", choices=["offline", "llm"], default="offline", help="extract: which writer to judge")
    p.add_argument("--mode", choices=["auto", "structured", "tools"], help="extract --writer llm: NEXUS_LLM_MODE")
    p.add_argument("--episodes", type=int, default=30, help="extract --writer llm: the first N episodes")
    p.add_argument("--episode-turns", type=int, default=0, help="extract --writer llm: split sessions every N turns")
    p.add_argument("--facts", type=int, default=100_000, help="recall: synthetic store size")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--events", type=int, default=100_000, help="analytics: synthetic store size")
    p.add_argument("--data-dir", help="analytics: where the synthetic store is built and kept")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
