"""Getting events in and built: `ingest`, `pipeline`, `failed` (episodes whose writer run failed), `stats`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from nexus_memory.cli.common import Subcommands, add_command, fail, print_json
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores

if TYPE_CHECKING:
    from nexus_memory_assets.pipeline import PipelineOutcome


def register(subcommands: Subcommands) -> None:
    p = add_command(subcommands, "ingest", "import events from a file, or JSONL on standard input (-), into events.db")
    p.add_argument("path", help="the file, or - for JSONL on standard input (a hook's turn)")
    p.add_argument("--format", choices=["jsonl", "locomo", "chatgpt", "claude"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ingest)

    p = add_command(
        subcommands, "pipeline", "build every layer for every event with work left, one Dagster run per platform"
    )
    p.add_argument("--platform", action="append", help="only this platform (repeatable)")
    p.add_argument("--only-failed", action="store_true", help="rerun only episodes whose writer run failed")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON (no progress lines)")
    p.set_defaults(func=cmd_pipeline)

    p = add_command(subcommands, "failed", "episodes whose writer run failed, with the reason")
    p.set_defaults(func=cmd_failed)

    p = add_command(
        subcommands, "stats", "row counts of every layer, and the writer's episodes, seconds and tokens per mode"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stats)


def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from nexus_memory.events.ingest import detect_format, ingest_file, ingest_stream
    from nexus_memory.events.ledger import IngestSummary

    stdin = args.path == "-"
    path = Path(args.path)
    if stdin and args.format not in (None, "jsonl"):
        return fail(f"standard input is read as JSONL; --format {args.format} needs a file")
    if not stdin and not path.is_file():
        return fail(f"{path} {'is not a file' if path.exists() else 'does not exist'}")
    bar: list[tqdm] = []  # made at the first record, so a file refused as a whole prints only its error

    def progress(_summary: IngestSummary) -> None:
        if not bar:
            bar.append(tqdm(desc=f"ingest {'<stdin>' if stdin else path.name}", unit="rec", file=sys.stderr))
        bar[0].update(1)

    try:
        fmt = "jsonl" if stdin else args.format or detect_format(path)
        with Stores(load_settings()) as stores:
            if stdin:
                summary = ingest_stream(stores, sys.stdin.buffer, on_record=progress)
            else:
                summary = ingest_file(stores, path, fmt, on_record=progress)
    except ValueError as exc:  # the file as a whole: missing, empty, not JSON, wrong shape, unknown format
        return fail(exc)
    finally:
        for b in bar:
            b.close()
    data = summary.as_dict()
    if args.json:
        print_json(data)
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
    try:
        # The Dagster glue, imported only here: every other command starts without Dagster.
        from nexus_memory_assets.pipeline import run_pipeline

        outcome = run_pipeline(
            load_settings(),
            platforms=args.platform or None,
            only_failed=args.only_failed,
            progress=None if args.json else (lambda line: print(line, file=sys.stderr, flush=True)),
        )
    except ValueError as exc:  # a setting the partitions cannot be built from, such as a future start
        return fail(exc)
    if args.json:
        print_json(outcome.as_dict())
    else:
        _print_pipeline(outcome, only_failed=args.only_failed)
    return 0 if outcome.ok else 1


def _print_pipeline(outcome: PipelineOutcome, *, only_failed: bool = False) -> None:
    """The pipeline's outcome for a person: a table of what each run built, then anything left undone."""
    if outcome.orphaned_runs:
        print(
            f"marked {len(outcome.orphaned_runs)} runs of killed processes failed: {', '.join(outcome.orphaned_runs)}"
        )
    if not outcome.runs:
        print(
            "nothing to rerun: no episode's writer run failed"
            if only_failed
            else "nothing to do: every event is processed"
        )
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
    if outcome.consolidation:
        done, rows = outcome.consolidation, outcome.consolidation.observation_rows
        print(
            f"consolidation {done.observations}: {rows.get('facts_consolidated', 0)} facts consolidated, "
            f"{rows.get('observations', 0)} observations; {len(done.mental_models)} mental models refreshed"
            + (f", {len(done.failed)} failed: {', '.join(done.failed)}" if done.failed else "")
        )
    if outcome.failed_episodes:
        print(
            f"{len(outcome.failed_episodes)} episodes failed (their events wait): `nexus-memory failed` lists them, "
            "`nexus-memory pipeline --only-failed` reruns only them"
        )
        for failed in outcome.failed_episodes[:5]:
            print(f"  {failed.partition_key} {failed.episode_id}: {failed.error}")
    if outcome.unprocessed_events:
        left = ", ".join(f"{platform} {n}" for platform, n in sorted(outcome.unprocessed_events.items()))
        why = (
            "never started: `nexus-memory pipeline` without --only-failed builds them"
            if only_failed
            else "failed episodes or runs above; rerun to finish"
        )
        print(f"events with work left after this pipeline: {left} ({why})")


def cmd_failed(args: argparse.Namespace) -> int:
    from nexus_memory.events.partitions import split_partition_key
    from nexus_memory.writer.run import failed_episodes

    with Stores(load_settings()) as stores:
        failed = failed_episodes(stores)
    print_json(
        [
            {"day": split_partition_key(f.partition_key)[0], "platform": split_partition_key(f.partition_key)[1]}
            | {"partition_key": f.partition_key, "episode_id": f.episode_id, "attempts": f.attempts}
            | {"mode": f.mode, "seconds": round(f.seconds, 1), "error": f.error}
            for f in failed
        ]
    )
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from nexus_memory.writer.run import episode_costs

    with Stores(load_settings()) as stores:
        counts = stores.counts()
        costs = episode_costs(stores)
    # What the writer's episodes cost, per mode (offline, or the LLM writer's tools / structured).
    by_mode = {
        c.mode or "not recorded": {"episodes": c.episodes, "ok": c.ok, "seconds": round(c.seconds, 1)}
        | {"prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens}
        for c in costs
    }
    if args.json:
        print_json({**counts, "episode_processing_by_mode": by_mode})
    else:
        for name, value in counts.items():
            print(f"{name:>18}  {value}")
        for mode, cost in by_mode.items():
            print(
                f"{'writer ' + mode:>18}  {cost['episodes']} episodes ({cost['ok']} ok), {cost['seconds']} s, "
                f"{cost['prompt_tokens']} + {cost['completion_tokens']} tokens"
            )
    return 0
