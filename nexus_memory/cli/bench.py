"""The `bench` command: one subcommand per benchmark, each with only its own flags."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nexus_memory.cli.common import Subcommands, add_command, print_json
from nexus_memory.core.config import load_settings
from nexus_memory.core.textcheck import one_line

# A benchmark: the subcommand's arguments -> its figures.
Benchmark = Callable[[argparse.Namespace], dict[str, Any]]


def register(subcommands: Subcommands) -> None:
    bench = add_command(subcommands, "bench", "benchmarks, one subcommand each; each prints its figures as JSON")
    benchmarks = bench.add_subparsers(dest="benchmark", required=True)

    p = _benchmark(
        benchmarks,
        "extract",
        "judge a writer on LoCoMo: the offline extractor against the annotated observations, "
        "or the LLM writer next to it on the same episodes",
        _extract,
    )
    _add_locomo_arguments(p)
    p.add_argument("--writer", choices=["offline", "llm"], default="offline", help="which writer to judge")
    _add_llm_writer_arguments(p, "episode")
    p.add_argument("--episodes", type=int, default=30, help="--writer llm: the first N episodes")
    p.add_argument("--episode-turns", type=int, default=0, help="--writer llm: split sessions every N turns")

    p = _benchmark(
        benchmarks,
        "facts",
        "which facts the offline writer keeps: precision and recall against labelled messages (the sample "
        "stream, and LoCoMo turns given the LoCoMo file), and the share of stored facts that are headers, "
        "signatures, pleasantries or unresolved pronouns",
        _facts,
    )
    p.add_argument("--data", type=locomo_file, help="LoCoMo JSON (its labelled turns and its junk share)")
    p.add_argument("--details", action="store_true", help="list the unlabelled facts and the missed labels")
    p.add_argument(
        "--writer",
        choices=["offline", "llm"],
        default="offline",
        help="llm: the configured LLM writer (NEXUS_LLM_*) beside the offline writer on the same labelled messages",
    )
    _add_llm_writer_arguments(p, "message")
    p.add_argument("--messages", type=int, default=20, help="--writer llm: labelled messages drawn at random (0: all)")

    p = _benchmark(
        benchmarks,
        "locomo",
        "LoCoMo retrieval: recall@k through provenance back to dialogue ids, against BM25, "
        "and how well injected context tells evidence from noise",
        _locomo,
    )
    _add_locomo_arguments(p)

    p = _benchmark(
        benchmarks, "recall", "latency and recall of semantic search and of `recall` on a synthetic store", _recall
    )
    p.add_argument("--facts", type=int, default=100_000, help="synthetic store size")
    p.add_argument("--queries", type=int, default=200, help="queries to time")
    p.add_argument(
        "--data-dir",
        help="keep the store here, whole (no forgetting step); a store already there is measured again, not refilled",
    )

    p = _benchmark(
        benchmarks,
        "analytics",
        "build a store of synthetic events once, then time each analytics section and its Dagster materialisation",
        _analytics,
    )
    p.add_argument("--events", type=int, default=100_000, help="synthetic history size")
    p.add_argument(
        "--data-dir", help="where the synthetic store is built and kept (default: bench-analytics in the data dir)"
    )

    p = _benchmark(
        benchmarks,
        "forget",
        "what forgetting each target kind, the one-time VACUUM and the nightly decay cost on a synthetic store",
        _forget,
    )
    p.add_argument("--facts", type=int, default=100_000, help="synthetic store size")

    p = _benchmark(
        benchmarks,
        "coldstart",
        "seconds and peak memory of fresh `recall` and `context` processes, ONNX against torch query path",
        _coldstart,
    )
    p.add_argument("--runs", type=int, default=5, help="cold processes per command and query path")
    p.add_argument("--data-dir", help="an existing store to use (default: a sample store, built once)")

    p = _benchmark(
        benchmarks,
        "consolidate",
        "consolidation on LoCoMo: what observations and mental models hold and cost, whether a second run "
        "changes anything, how much evidence a context block covers",
        _consolidate,
    )
    _add_locomo_arguments(p)

    p = _benchmark(
        benchmarks,
        "backfill",
        "a first import: a synthetic history through Dagster, timed layer by layer against the model alone",
        _backfill,
    )
    p.add_argument("--events", type=int, default=100_000, help="synthetic history size")
    p.add_argument("--days", type=int, default=730, help="days the history spans")
    p.add_argument("--data-dir", help="where its temp dir goes")

    p = _benchmark(
        benchmarks,
        "embed",
        "bulk embedding: texts/s of float32 and bfloat16 on LoCoMo turns, their vectors' parity, and with --gate "
        "the LoCoMo quality gate for bfloat16 (bench locomo per recipe, side by side)",
        _embed,
    )
    p.add_argument("--data", type=locomo_file, required=True, help="LoCoMo JSON (its turns are the texts)")
    p.add_argument("--texts", type=int, default=1024, help="turns embedded per round")
    p.add_argument("--rounds", type=int, default=3, help="rounds, the recipes taking turns")
    p.add_argument("--gate", action="store_true", help="also run bench locomo per recipe and apply the gate")

    p = _benchmark(
        benchmarks,
        "tenants",
        "N small tenants backfilled at once on one host (a data directory, a Dagster home and a process each), "
        "against one tenant alone: events/s in all and each tenant's latency",
        _tenants,
    )
    p.add_argument("--tenants", type=int, default=4, help="tenants backfilled at once")
    p.add_argument("--events", type=int, default=2_000, help="synthetic history size of each tenant")
    p.add_argument("--days", type=int, default=60, help="days each history spans")
    p.add_argument("--data-dir", help="where its temp dir goes")

    p = _benchmark(
        benchmarks,
        "dates",
        "relative dates (on Friday, last week, in two weeks) read against the message day and the tense of their "
        "clause: accuracy on written cases overall, per phrase kind and per tense, and the misses",
        _dates,
    )
    p.add_argument("--data", type=readable_file, help="JSONL cases (default: tests/data/relative_dates.jsonl)")

    p = _benchmark(
        benchmarks,
        "freshness",
        "live memory: events recorded through the agent tools, seconds until recall finds them and until their facts "
        "exist (the pipeline running beside), what each costs; --load: many events a second from several clients",
        _freshness,
    )
    p.add_argument("--events", type=int, default=100, help="events to record, one call each (steady mode)")
    p.add_argument("--rate", type=float, help="events a second in all (default 2; with --load 50)")
    p.add_argument("--http", action="store_true", help="record and recall through `nexus-memory serve`")
    p.add_argument("--poll-s", type=float, default=1.0, help="how often the pipeline looks for new events")
    p.add_argument("--load", action="store_true", help="the load: --clients processes at --rate for --seconds")
    p.add_argument("--clients", type=int, default=2, help="--load: recording processes")
    p.add_argument("--seconds", type=float, default=60.0, help="--load: how long they record")
    p.add_argument("--data-dir", help="where the sample store is built once and copied (default: the data dir)")


def _benchmark(benchmarks: Subcommands, name: str, summary: str, run: Benchmark) -> argparse.ArgumentParser:
    """One benchmark's subcommand; the caller adds its own arguments."""
    p = add_command(benchmarks, name, summary)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench, run_benchmark=run)
    return p


def _add_llm_writer_arguments(p: argparse.ArgumentParser, unit: str) -> None:
    """--mode and --max-seconds: how a benchmark of the LLM writer runs it, and when it stops starting `unit`s."""
    p.add_argument("--mode", choices=["auto", "structured", "tools", "quote"], help="--writer llm: NEXUS_LLM_MODE")
    p.add_argument(
        "--max-seconds", type=float, default=0, help=f"--writer llm: start no {unit} after this long (0: no limit)"
    )


def _add_locomo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=locomo_file, required=True, help="LoCoMo JSON")
    p.add_argument("--conversations", type=int, default=0, help="only the first N conversations")


def readable_file(text: str) -> str:
    """An argument type: a file that exists (argparse says which and why in one line when not)."""
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"{text} is not a file" if Path(text).exists() else f"{text} does not exist")
    return text


def locomo_file(text: str) -> str:
    """An argument type: a LoCoMo JSON file (a list of conversations, each with its 'conversation')."""
    try:
        data = json.loads(Path(readable_file(text)).read_bytes())
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON
        raise argparse.ArgumentTypeError(f"{text} is not a LoCoMo JSON file ({one_line(exc, 200)})") from None
    if not (isinstance(data, list) and data and all(isinstance(c, dict) and "conversation" in c for c in data)):
        raise argparse.ArgumentTypeError(f"{text} is not a LoCoMo JSON file (a list of conversations)")
    return text


def cmd_bench(args: argparse.Namespace) -> int:
    result = args.run_benchmark(args)
    print_json(result) if args.json else print(json.dumps(result, indent=1, default=str))
    return 0


def _extract(args: argparse.Namespace) -> dict[str, Any]:
    if args.writer == "llm":
        from nexus_memory.bench.extract_llm import run_llm

        return run_llm(
            Path(args.data),
            conversations=args.conversations,
            max_episodes=args.episodes,
            episode_turns=args.episode_turns,
            mode=args.mode,
            max_seconds=args.max_seconds,
        )
    from nexus_memory.bench.extract import run

    return run(Path(args.data), conversations=args.conversations)


def _facts(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.facts import run, run_llm

    if args.writer == "llm":
        from nexus_memory.writer.llm import LLMWriter

        writer = LLMWriter.from_settings(load_settings(), **({"mode": args.mode} if args.mode else {}))
        data = Path(args.data) if args.data else None
        return run_llm(writer, data, messages=args.messages, max_seconds=args.max_seconds)
    return run(Path(args.data) if args.data else None, details=args.details)


def _locomo(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.locomo import run

    return run(Path(args.data), conversations=args.conversations)


def _recall(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.recall import run

    return run(args.facts, queries=args.queries, data_dir=Path(args.data_dir) if args.data_dir else None)


def _analytics(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.analytics import run
    from nexus_memory_assets.analytics import time_materialisation

    data_dir = Path(args.data_dir or load_settings().data_dir / "bench-analytics")
    result = run(data_dir, args.events, progress=lambda line: print(line, file=sys.stderr))
    result["dagster"] = time_materialisation(str(data_dir))
    return result


def _tenants(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.tenants import run
    from nexus_memory_assets.bench import timed_pipeline

    return run(
        args.tenants,
        args.events,
        timed_pipeline,
        days=args.days,
        directory=Path(args.data_dir) if args.data_dir else None,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )


def _forget(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.forget import run

    return run(args.facts)


def _coldstart(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.coldstart import run

    return run(args.runs, data_dir=Path(args.data_dir) if args.data_dir else None)


def _consolidate(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.consolidate import run

    return run(Path(args.data), conversations=args.conversations)


def _embed(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.embed import run

    return run(Path(args.data), texts=args.texts, rounds=args.rounds, with_gate=args.gate)


def _backfill(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.backfill import run
    from nexus_memory_assets.bench import timed_pipeline

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return run(
        args.events,
        lambda settings, home: timed_pipeline(settings, home, progress=say),
        days=args.days,
        directory=Path(args.data_dir) if args.data_dir else None,
        progress=say,
    )


def _dates(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.dates import DEFAULT_DATA, run

    return run(Path(args.data) if args.data else DEFAULT_DATA)


def _freshness(args: argparse.Namespace) -> dict[str, Any]:
    from nexus_memory.bench.freshness import run, run_load

    common = {
        "http": args.http,
        "poll_s": args.poll_s,
        "directory": Path(args.data_dir) if args.data_dir else None,
        "progress": lambda line: print(line, file=sys.stderr, flush=True),
    }
    if args.load:
        return run_load(args.rate or 50.0, args.seconds, clients=args.clients, **common)
    return run(args.events, args.rate or 2.0, **common)
