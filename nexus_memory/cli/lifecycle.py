"""Keeping memory healthy: the lifecycle jobs once (`decay` … `sessions`), `forget` and `consolidate`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, Protocol

from nexus_memory.cli.common import Subcommands, add_command, fail, positive, print_json, print_result
from nexus_memory.core.config import load_settings
from nexus_memory.core.progress import ProgressReporter
from nexus_memory.core.stores import Stores


class JobReport(Protocol):
    """What a lifecycle job returns: a report that reads as a dict."""

    def as_dict(self) -> dict[str, Any]: ...


# A lifecycle job: (stores, the command's arguments) -> its report.
Job = Callable[[Stores, argparse.Namespace], JobReport]
# A job's report (as a dict) -> the one line a person reads.
ReportLine = Callable[[dict[str, Any]], str]


def register(subcommands: Subcommands) -> None:
    p = _job_command(
        subcommands,
        "decay",
        "decay fact confidence; soft-delete facts below the threshold",
        _decay,
        lambda r: (
            f"checked {r['checked']} facts: {r['soft_deleted']} soft-deleted, {r['protected']} protected, "
            f"{r['below_half']} below 0.5, mean confidence {r['mean_confidence']}"
        ),
    )
    p.add_argument("--rate", type=float, help="per day (default NEXUS_DECAY_RATE, 0.01)")
    p.add_argument("--threshold", type=float, help="soft-delete below this (default 0.05)")

    p = _job_command(
        subcommands,
        "conflicts",
        "find facts that contradict earlier ones about the same entity",
        _conflicts,
        lambda r: f"checked {r['facts_checked']} new facts ({r['detector']}): {r['conflicts_found']} conflicts",
    )
    p.add_argument("--limit", type=positive, help="at most this many facts")

    p = _job_command(
        subcommands,
        "enrich",
        "re-read facts with few entity links with every known person in mind",
        _enrich,
        lambda r: f"read {r['facts_read']} facts: {r['links_added']} links added to {r['facts_enriched']}",
    )
    p.add_argument("--limit", type=positive, help="at most this many facts")

    _job_command(
        subcommands,
        "reflect",
        "write the weekly reflection (at most one per 6 days)",
        _reflect,
        lambda r: f"reflection {r['status']}: {r['reason'] or r['mental_model_id']}",
    )

    p = _job_command(
        subcommands,
        "sessions",
        "consolidate sessions that ended",
        _sessions,
        lambda r: (
            f"{r['registered']} new sessions, {r['ended']} ended, {r['consolidated']} consolidated, "
            f"{r['waiting']} waiting"
        ),
    )
    p.add_argument("--nightly", action="store_true", help="end every open session")

    p = add_command(
        subcommands, "forget", "forget an event, a fact, a sender or an entity everywhere, leaving no trace"
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--event", metavar="ID")
    which.add_argument("--fact", metavar="ID")
    which.add_argument("--sender", metavar="HANDLE")
    which.add_argument("--entity", metavar="NAME_OR_ID")
    which.add_argument("--scrub", action="store_true", help="finish the byte scrub of an earlier forget")
    p.add_argument(
        "--include-candidates",
        action="store_true",
        help="with --entity: also the other handles that may be the same person (the preview lists them)",
    )
    p.add_argument("--yes", action="store_true", help="really forget (without it: only say what would go)")
    p.add_argument(
        "--request",
        action="store_true",
        help="file it for forget_job in the Dagster UI instead: prints the request id its run config takes "
        "(Dagster keeps run configs; the id is all it sees)",
    )
    p.add_argument("--reason", help="why (kept in the deletion log)")
    p.add_argument("--requested-by", help="who asked, for the deletion log (default: the login name)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_forget)

    p = add_command(subcommands, "consolidate", "consolidate pending facts into observations, then mental models")
    p.add_argument("--offline", action="store_true", help="the offline rules even when an LLM is configured")
    p.add_argument("--limit", type=int, help="at most this many facts")
    p.set_defaults(func=cmd_consolidate)


def _job_command(
    subcommands: Subcommands, name: str, summary: str, job: Job, report_line: ReportLine
) -> argparse.ArgumentParser:
    """A command that runs one lifecycle job; the caller adds the job's own arguments."""
    p = add_command(subcommands, name, summary)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_job, job=job, report_line=report_line)
    return p


def cmd_job(args: argparse.Namespace) -> int:
    """decay / conflicts / enrich / reflect / sessions: run the job once, print its report."""
    with Stores(load_settings()) as stores:
        try:
            report = args.job(stores, args).as_dict()
        except ValueError as exc:
            return fail(exc)
    failures = report.get("failures") or []
    print_result(report, args.json, args.report_line(report) + "".join(f"\n  failed {f}" for f in failures[:20]))
    return 1 if failures else 0


# The jobs import their module when they run: the CLI starts without them.


def _decay(stores: Stores, args: argparse.Namespace) -> JobReport:
    from nexus_memory.lifecycle.decay import run_decay

    return run_decay(stores, rate=args.rate, threshold=args.threshold)


def _conflicts(stores: Stores, args: argparse.Namespace) -> JobReport:
    from nexus_memory.lifecycle.conflicts import detect_conflicts

    return detect_conflicts(stores, limit=args.limit)


def _enrich(stores: Stores, args: argparse.Namespace) -> JobReport:
    from nexus_memory.lifecycle.enrichment import enrich

    return enrich(stores, limit=args.limit)


def _reflect(stores: Stores, args: argparse.Namespace) -> JobReport:
    from nexus_memory.lifecycle.reflection import reflect

    return reflect(stores)


def _sessions(stores: Stores, args: argparse.Namespace) -> JobReport:
    from nexus_memory.lifecycle.sessions import consolidate_ended

    return consolidate_ended(stores, nightly=args.nightly)


def cmd_forget(args: argparse.Namespace) -> int:
    from nexus_memory.lifecycle.forget import ForgetError, Target, file_request, finish_scrub, forget_or_preview

    with Stores(load_settings()) as stores:
        if args.scrub:
            result = finish_scrub(stores)
            print_result(result, args.json, f"scrub {'complete' if result['complete'] else 'incomplete'}")
            return 0 if result["complete"] else 1
        kind, value = next((k, v) for k in ("event", "fact", "sender", "entity") if (v := getattr(args, k)) is not None)
        who = args.requested_by or _login_name()
        try:
            target = Target(kind, value, include_candidates=args.include_candidates)
            if args.request:
                request = file_request(stores, target, requested_by=who, reason=args.reason)
                config = {"ops": {"forget_target": {"config": {"request": request}}}}
                print_result(
                    {"request": request, "run_config": config},
                    args.json,
                    f"filed forget request {request}: launch forget_job with the run config\n{json.dumps(config)}",
                )
                return 0
            result = forget_or_preview(
                stores,
                target,
                confirm=args.yes,
                requested_by=who,
                reason=args.reason,
                progress=_reporter(stores, "forget"),
            )
        except ForgetError as exc:
            return fail(exc)
    if not result["forgotten"]:
        counts = result["would_remove"]
        summary = (
            f"would forget {counts['events']} events, {counts['facts']} facts and {counts['entities']} entities; "
            "run again with --yes to forget them"
        )
        print_result(result, args.json, summary + _candidate_lines(result["candidates"]))
        return 0
    removed = {store: sum(rows.values()) for store, rows in result["removed"].items()}
    summary = f"forgotten ({result['status']}): rows removed per store {removed}, {result['seconds']['total']} s"
    print_result(result, args.json, summary)
    return 0 if result["status"] == "scrubbed" else 1


def _reporter(stores: Stores, label: str) -> ProgressReporter:
    """Progress on stderr: a bar on a terminal, else a line every NEXUS_PROGRESS_EVERY_S seconds."""
    return ProgressReporter(label, every_s=stores.settings.progress_every_s)


def _candidate_lines(candidates: list[dict[str, Any]]) -> str:
    """The other handles that may be the same person, a line each, and how to take them along."""
    if not candidates:
        return ""
    lines = "".join(f"\n  {c['name']} ({', '.join(c['handles']) or c['entity_id']}): {c['why']}" for c in candidates)
    if candidates[0]["included"]:
        return f"\n{len(candidates)} other entities that may be the same person are included:{lines}"
    return (
        f"\n{len(candidates)} other entities may be the same person, and stay unless you add "
        f"--include-candidates:{lines}"
    )


def _login_name() -> str:
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):
        return "cli"


def cmd_consolidate(args: argparse.Namespace) -> int:
    from nexus_memory.lifecycle.reconsolidate import run_consolidation

    with Stores(load_settings()) as stores:
        outcome = run_consolidation(
            stores, offline=args.offline, limit=args.limit, progress=_reporter(stores, "consolidate")
        )
    print_json(outcome)
    return 1 if outcome["failed"] else 0
