"""`nexus-memory`: the command line, one subcommand per Python API call."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores

if TYPE_CHECKING:
    from nexus_memory_assets.pipeline import PipelineOutcome


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _fail(message: object) -> int:
    """One line on stderr saying what is wrong; exit status 2 (nothing was done)."""
    from nexus_memory.core.textcheck import one_line

    print(f"error: {one_line(message)}", file=sys.stderr)
    return 2


def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from nexus_memory.events.ingest import detect_format, ingest_file
    from nexus_memory.events.ledger import IngestSummary

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
                tags=args.tag,
            )
        except RecallArgumentError as exc:
            return _fail(exc)
    if args.json:
        from dataclasses import asdict

        _print_json(asdict(response))
    else:
        for r in response.results:
            print(f"{r.score:.4f}  [{r.type}] {_headline(r.text)}  {json.dumps(r.ranks)}")
            for line in _source_lines(args.sources, r.source_event_ids):
                print(f"        {line}")
    return 0


def _headline(text: str) -> str:
    """A result on one line: a report (a mental model's dossier) by its first line and how much more
    there is; `--json` and `nexus-memory observations` show it whole."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) <= 1:
        return text.strip()
    return f"{lines[0].strip()} … (+{len(lines) - 1} lines; --json for all)"


def _source_lines(wanted: bool, event_ids: list[str]) -> list[str]:
    """Where a result came from: each source event's platform, sender, time and words."""
    if not wanted or not event_ids:
        return []
    from datetime import UTC, datetime

    from nexus_memory.core import db
    from nexus_memory.events.ledger import row_to_event

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
    from nexus_memory.identity.participant import parse_participant
    from nexus_memory.injection.context import get_context

    try:
        people = [parse_participant(text) for text in args.participant or []]
    except ValueError as exc:
        return _fail(exc)
    with Stores(load_settings()) as stores:
        print(get_context(stores, args.prompt, session_id=args.session, participants=people))
    return 0


def cmd_candidates(args: argparse.Namespace) -> int:
    from nexus_memory.identity import store as identity

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
            print("error: accept/reject/unmerge need a candidate id", file=sys.stderr)
            return 2
        if args.action == "unmerge":
            return _unmerge(stores, args)
        try:
            status = identity.resolve_candidate(stores.conn, args.id, accept=args.action == "accept")
        except identity.MergeError as exc:
            return _fail(exc)
        print(f"{args.id}: {status}" + (" (it will not be proposed again)" if status == "rejected" else ""))
    return 0


def cmd_writer_notes(args: argparse.Namespace) -> int:
    from nexus_memory.identity import writer_notes as notes

    with Stores(load_settings()) as stores:
        head = notes.current(stores.conn)
        if args.action == "show":
            print(head.text, end="" if head.text.endswith("\n") else "\n")
            return 0
        try:
            text = _edited_notes(head.text, args.file)
            saved = notes.save(stores.conn, text, based_on=head.id)
        except (OSError, UnicodeDecodeError, notes.NotesError, RuntimeError) as exc:
            return _fail(exc)
    print(f"writer notes saved (version {saved.id})" if saved.id != head.id else "writer notes unchanged")
    return 0


def _edited_notes(text: str, source: str | None) -> str:
    """New notes from a file, stdin ('-'), or $VISUAL / $EDITOR run on a copy of `text`."""
    import os
    import shlex
    import subprocess
    import tempfile

    if source == "-":
        return sys.stdin.read()
    if source:
        return Path(source).read_text(encoding="utf-8")
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory(prefix="nexus-notes-") as tmp:
        path = Path(tmp) / "writer_notes.md"
        path.write_text(text, encoding="utf-8")
        if subprocess.run([*shlex.split(editor), str(path)], check=False).returncode != 0:
            raise RuntimeError(f"{editor} exited with an error; the notes were not changed")
        return path.read_text(encoding="utf-8")


def cmd_failed(args: argparse.Namespace) -> int:
    from nexus_memory.events.partitions import split_partition_key
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
    from nexus_memory.embeddings.model import get_embedder
    from nexus_memory.embeddings.step import rebuild_index, reembed

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


def cmd_consolidate(args: argparse.Namespace) -> int:
    from nexus_memory.lifecycle.reconsolidate import run_consolidation

    with Stores(load_settings()) as stores:
        outcome = run_consolidation(
            stores,
            offline=args.offline,
            limit=args.limit,
            on_progress=lambda n, r: print(f"\rconsolidated {n} facts", end="", file=sys.stderr),
        )
        print(file=sys.stderr)
    _print_json(outcome)
    return 1 if outcome["failed"] else 0


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
    elif args.kind == "consolidate":
        from nexus_memory.bench.consolidate import run as run_consolidate

        result = run_consolidate(Path(args.data), conversations=args.conversations)
    elif args.kind == "forget":
        from nexus_memory.bench.forget import run as run_forget

        result = run_forget(args.facts)
    elif args.kind == "analytics":
        from nexus_memory.bench.analytics import run as run_analytics
        from nexus_memory_assets.analytics import time_materialisation

        data_dir = Path(args.data_dir or load_settings().data_dir / "bench-analytics")
        result = run_analytics(data_dir, args.events, progress=lambda line: print(line, file=sys.stderr))
        result["dagster"] = time_materialisation(str(data_dir))
    elif args.kind == "backfill":
        from nexus_memory.bench.backfill import run as run_backfill
        from nexus_memory_assets.bench import timed_pipeline

        result = run_backfill(
            args.events,
            timed_pipeline,
            days=args.days,
            directory=Path(args.data_dir) if args.data_dir else None,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    elif args.kind == "locomo":
        from nexus_memory.bench.locomo import run as run_locomo

        result = run_locomo(Path(args.data), conversations=args.conversations)
    elif args.kind == "coldstart":
        from nexus_memory.bench.coldstart import run as run_coldstart

        result = run_coldstart(args.runs, data_dir=Path(args.data_dir) if args.data_dir else None)
    else:
        from nexus_memory.bench.recall import run as run_recall

        result = run_recall(args.facts, queries=args.queries)
    _print_json(result) if args.json else print(json.dumps(result, indent=1, default=str))
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from nexus_memory.agents.mcp_server import serve

    serve(load_settings(), http=args.http, port=args.port, session_id=args.session)
    return 0


def cmd_skills(args: argparse.Namespace) -> int:
    from nexus_memory.agents import skills
    from nexus_memory.agents.tools import call_tool

    if args.action == "export":
        with Stores(load_settings()) as stores:
            for path in skills.export(stores, Path(args.value)):
                print(path)
        return 0
    try:
        arguments = skills.search_arguments(
            args.value,
            max_results=args.max_results,
            entity=args.entity,
            after=args.after,
            before=args.before,
            platform=args.platform,
            budget=args.budget,
            scope=args.scope,
        )
    except ValueError as exc:  # a malformed day
        return _fail(exc)
    with Stores(load_settings()) as stores:
        result = call_tool(stores, "recall", arguments)
    _print_json(result)
    return 1 if "error" in result else 0


# --- lifecycle: decay, conflicts, enrichment, reflection, sessions, forgetting, and the agent tools ---------


def _report(result: dict[str, Any], as_json: bool, summary: str) -> None:
    if as_json:
        _print_json(result)
    else:
        print(summary)


def _unmerge(stores: Stores, args: argparse.Namespace) -> int:
    from nexus_memory.lifecycle.unmerge import UnmergeError, unmerge

    try:
        result = unmerge(stores.conn, args.id)
    except UnmergeError as exc:
        return _fail(exc)
    summary = (
        f"{args.id}: unmerged; {result['facts']} facts, {result['contacts']} contacts went back to {result['entity']}"
    )
    _report(result, args.json, summary)
    return 0


def cmd_maintenance(args: argparse.Namespace) -> int:
    """decay / conflicts / enrich / reflect / sessions: run the job once, print its report."""
    with Stores(load_settings()) as stores:
        try:
            report = args.job(stores, args).as_dict()
        except ValueError as exc:
            return _fail(exc)
    failures = report.get("failures") or []
    _report(report, args.json, args.summary(report) + "".join(f"\n  failed {f}" for f in failures[:20]))
    return 1 if failures else 0


def _lifecycle(module: str) -> Any:
    """A nexus_memory.lifecycle module, imported when a command runs (the CLI starts without them)."""
    import importlib

    return importlib.import_module(f"nexus_memory.lifecycle.{module}")


def _maintenance_jobs() -> dict[str, tuple[str, Any, Any]]:
    """name -> (help, job(stores, args) -> report, summary(report dict) -> one line)."""
    return {
        "decay": (
            "decay fact confidence; soft-delete facts below the threshold",
            lambda s, a: _lifecycle("decay").run_decay(s, rate=a.rate, threshold=a.threshold),
            lambda r: (
                f"checked {r['checked']} facts: {r['soft_deleted']} soft-deleted, {r['protected']} protected, "
                f"{r['below_half']} below 0.5, mean confidence {r['mean_confidence']}"
            ),
        ),
        "conflicts": (
            "find facts that contradict earlier ones about the same entity",
            lambda s, a: _lifecycle("conflicts").detect_conflicts(s, limit=a.limit),
            lambda r: f"checked {r['facts_checked']} new facts ({r['detector']}): {r['conflicts_found']} conflicts",
        ),
        "enrich": (
            "re-read facts with few entity links with every known person in mind",
            lambda s, a: _lifecycle("enrichment").enrich(s, limit=a.limit),
            lambda r: f"read {r['facts_read']} facts: {r['links_added']} links added to {r['facts_enriched']}",
        ),
        "reflect": (
            "write the weekly reflection (at most one per 6 days)",
            lambda s, a: _lifecycle("reflection").reflect(s),
            lambda r: f"reflection {r['status']}: {r['reason'] or r['mental_model_id']}",
        ),
        "sessions": (
            "consolidate sessions that ended",
            lambda s, a: _lifecycle("sessions").consolidate_ended(s, nightly=a.nightly),
            lambda r: (
                f"{r['registered']} new sessions, {r['ended']} ended, {r['consolidated']} consolidated, "
                f"{r['waiting']} waiting"
            ),
        ),
    }


def cmd_forget(args: argparse.Namespace) -> int:
    from nexus_memory.lifecycle.forget import ForgetError, Target, finish_scrub, forget_or_preview

    with Stores(load_settings()) as stores:
        if args.scrub:
            result = finish_scrub(stores)
            _report(result, args.json, f"scrub {'complete' if result['complete'] else 'incomplete'}")
            return 0 if result["complete"] else 1
        kind, value = next((k, v) for k in ("event", "fact", "sender", "entity") if (v := getattr(args, k)) is not None)
        who = args.requested_by or _login_name()
        try:
            result = forget_or_preview(
                stores, Target(kind, value), confirm=args.yes, requested_by=who, reason=args.reason
            )
        except ForgetError as exc:
            return _fail(exc)
    if not result["forgotten"]:
        counts = result["would_remove"]
        summary = (
            f"would forget {counts['events']} events, {counts['facts']} facts and {counts['entities']} entities; "
            "run again with --yes to forget them"
        )
        _report(result, args.json, summary)
        return 0
    removed = {store: sum(rows.values()) for store, rows in result["removed"].items()}
    summary = f"forgotten ({result['status']}): rows removed per store {removed}, {result['seconds']['total']} s"
    _report(result, args.json, summary)
    return 0 if result["status"] == "scrubbed" else 1


def _login_name() -> str:
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):
        return "cli"


def cmd_tool(args: argparse.Namespace) -> int:
    """remember / correct / confirm / entity / observations / models: the agent tool of the same name
    (a fact write with its side effects, agent_writes)."""
    from nexus_memory.agents.tools import call_tool

    name, arguments = args.tool_call(args)
    with Stores(load_settings()) as stores:
        result = call_tool(stores, name, {k: v for k, v in arguments.items() if v is not None})
    if "error" in result:
        return _fail(result["error"])
    _print_json(result) if args.json else print(json.dumps(result, indent=1, ensure_ascii=False, default=str))
    return 0


def _models_call(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """`models` words -> the mental-model tool and its arguments (bad words are the tool's to report)."""
    match args.words:
        case []:
            return "list_mental_models", {"entity": args.entity}
        case ["create", *name]:
            pin = args.pin or None
            return "create_mental_model", {
                "name": " ".join(name),
                "question": args.question,
                "entity": args.entity,
                "tags": args.tag,
                "pin": pin,
            }
        case ["refresh", model_id]:
            return "refresh_mental_model", {"id": model_id}
        case [model_id]:
            return "show_mental_model", {"id": model_id}
    raise SystemExit("error: models takes nothing (list), an id (show), create NAME or refresh ID")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, not {text}")
    return value


def _add_lifecycle_commands(sub: Any) -> None:
    for name, (help_text, job, summary) in _maintenance_jobs().items():
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=cmd_maintenance, job=job, summary=summary)
        if name == "decay":
            p.add_argument("--rate", type=float, help="per day (default NEXUS_DECAY_RATE, 0.01)")
            p.add_argument("--threshold", type=float, help="soft-delete below this (default 0.05)")
        if name in ("conflicts", "enrich"):
            p.add_argument("--limit", type=_positive, help="at most this many facts")
        if name == "sessions":
            p.add_argument("--nightly", action="store_true", help="end every open session")

    p = sub.add_parser("forget", help="forget an event, a fact, a sender or an entity everywhere, leaving no trace")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--event", metavar="ID")
    which.add_argument("--fact", metavar="ID")
    which.add_argument("--sender", metavar="HANDLE")
    which.add_argument("--entity", metavar="NAME_OR_ID")
    which.add_argument("--scrub", action="store_true", help="finish the byte scrub of an earlier forget")
    p.add_argument("--yes", action="store_true", help="really forget (without it: only say what would go)")
    p.add_argument("--reason", help="why (kept in the deletion log)")
    p.add_argument("--requested-by", help="who asked, for the deletion log (default: the login name)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_forget)

    tools = {
        "remember": (lambda a: ("remember_fact", {"text": a.text, "entities": a.entity}), "remember a fact"),
        "correct": (
            lambda a: ("correct_fact", {"fact_id": a.fact_id, "new_text": a.text, "reason": a.reason}),
            "replace a wrong fact with the corrected one",
        ),
        "confirm": (lambda a: ("confirm_fact", {"fact_id": a.fact_id}), "protect a fact from decay"),
        "entity": (lambda a: ("get_entity_info", {"entity": a.name, "limit": a.limit}), "everything about an entity"),
        "observations": (
            lambda a: ("show_observation", {"id": a.id}) if a.id else ("list_observations", {"entity": a.entity}),
            "list observations, or show one by id",
        ),
        "models": (_models_call, "mental models: list, show ID, create NAME, refresh ID"),
    }
    for name, (make_call, help_text) in tools.items():
        p = sub.add_parser(name, help=help_text)
        if name == "remember":
            p.add_argument("text")
            p.add_argument("--entity", action="append", help="who or what it is about (repeatable)")
        elif name in ("correct", "confirm"):
            p.add_argument("fact_id")
            if name == "correct":
                p.add_argument("text")
                p.add_argument("--reason")
        elif name == "entity":
            p.add_argument("name")
            p.add_argument("--limit", type=_positive)
        elif name == "models":
            p.add_argument("words", nargs="*", metavar="ID | create NAME | refresh ID", help="nothing: list them")
            p.add_argument("--entity", help="list: only about this entity; create: who or what it is about")
            p.add_argument("--question", help="create: the question the model answers")
            p.add_argument("--tag", action="append", help="create: an access tag (repeatable)")
            p.add_argument("--pin", action="store_true", help="create: refresh after every consolidation")
        else:
            p.add_argument("id", nargs="?", help="show this one")
            p.add_argument("--entity", help="only about this entity")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=cmd_tool, tool_call=make_call)


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
    p.add_argument("--tag", action="append", help="access tag held (repeatable): scopes mental models")
    p.add_argument("--sources", action="store_true", help="show each result's source events (provenance)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("context", help="the memory block to inject before an agent turn")
    p.add_argument("prompt")
    p.add_argument("--session", help="current session id (its own facts are excluded)")
    p.add_argument(
        "--participant",
        action="append",
        metavar="PLATFORM:HANDLE[=NAME]",
        help="someone in the conversation, as their platform delivers them (repeatable): a name they go by "
        "means them, not another person of that name",
    )
    p.set_defaults(func=cmd_context)

    p = sub.add_parser("candidates", help="list, accept or reject entity merge candidates, or undo a merge")
    p.add_argument("action", choices=["list", "accept", "reject", "unmerge"])
    p.add_argument("id", nargs="?")
    p.add_argument("--status", default="pending")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_candidates)

    p = sub.add_parser("writer-notes", help="show or edit the writer's notes (disambiguation rules, false positives)")
    p.add_argument("action", choices=["show", "edit"])
    p.add_argument("--file", help="edit: take the new notes from this file ('-': stdin) instead of $EDITOR")
    p.set_defaults(func=cmd_writer_notes)

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

    p = sub.add_parser("mcp", help="serve the agent tools over MCP (stdio, or streamable HTTP on loopback)")
    p.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1 instead of stdio")
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765); the path is /mcp")
    p.add_argument("--session", help="session id that facts written through the tools are tagged with")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("skills", help="skills folder for agents in code mode: export DIR | search QUERY")
    p.add_argument("action", choices=["export", "search"])
    p.add_argument("value", metavar="DIR|QUERY", help="export: the folder to write; search: what to look for")
    p.add_argument("--entity", help="search: only about this entity (name or id)")
    p.add_argument("--max-results", type=int)
    p.add_argument("--after", help="search: only from this day on (YYYY-MM-DD)")
    p.add_argument("--before", help="search: only up to this day (YYYY-MM-DD)")
    p.add_argument("--platform")
    p.add_argument("--budget", choices=["low", "mid", "high"])
    p.add_argument("--scope", nargs="+", choices=["facts", "observations", "mental_models", "entities"])
    p.set_defaults(func=cmd_skills)

    p = sub.add_parser("consolidate", help="consolidate pending facts into observations, then mental models")
    p.add_argument("--offline", action="store_true", help="the offline rules even when an LLM is configured")
    p.add_argument("--limit", type=int, help="at most this many facts")
    p.set_defaults(func=cmd_consolidate)

    p = sub.add_parser(
        "bench", help="benchmarks: extract | locomo | recall | analytics | forget | coldstart | consolidate | backfill"
    )
    p.add_argument(
        "kind", choices=["extract", "locomo", "recall", "analytics", "forget", "coldstart", "consolidate", "backfill"]
    )
    p.add_argument("--data", help="LoCoMo JSON (extract, locomo, consolidate)")
    p.add_argument(
        "--conversations", type=int, default=0, help="locomo, consolidate, extract: only the first N conversations"
    )
    p.add_argument("--writer", choices=["offline", "llm"], default="offline", help="extract: which writer to judge")
    p.add_argument("--mode", choices=["auto", "structured", "tools"], help="extract --writer llm: NEXUS_LLM_MODE")
    p.add_argument("--episodes", type=int, default=30, help="extract --writer llm: the first N episodes")
    p.add_argument("--episode-turns", type=int, default=0, help="extract --writer llm: split sessions every N turns")
    p.add_argument("--facts", type=int, default=100_000, help="recall, forget: synthetic store size")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--events", type=int, default=100_000, help="analytics, backfill: synthetic history size")
    p.add_argument("--days", type=int, default=730, help="backfill: days the history spans")
    p.add_argument("--runs", type=int, default=5, help="coldstart: cold processes per command and query path")
    p.add_argument(
        "--data-dir",
        help="analytics: where the synthetic store is built and kept; "
        "coldstart: an existing store to use (default: a sample store, built once); "
        "backfill: where its temp dir goes",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)
    _add_lifecycle_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
