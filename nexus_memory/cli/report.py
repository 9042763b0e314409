"""The operator's view: `report`, the analytics sections read-only from the stores."""

from __future__ import annotations

import argparse

from nexus_memory.cli.common import Subcommands, add_command, fail, print_json
from nexus_memory.core.config import load_settings


def register(subcommands: Subcommands) -> None:
    from nexus_memory.analytics.report import SECTIONS

    p = add_command(subcommands, "report", "the operator's figures: backlog, outcomes, entities, coverage (read-only)")
    p.add_argument("--section", action="append", choices=list(SECTIONS), help="only this section (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from nexus_memory.analytics.report import build_report, render_text
    from nexus_memory.analytics.source import StoresMissing

    try:
        report = build_report(load_settings(), args.section or None)
    except StoresMissing as exc:
        return fail(exc)
    print_json(report) if args.json else print(render_text(report))
    return 0
