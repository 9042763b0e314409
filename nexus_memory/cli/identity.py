"""Who is who: `candidates` (review entity merges, undo one) and `writer-notes` (the writer's disambiguation notes)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nexus_memory.cli.common import Subcommands, add_command, fail, print_json, print_result
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores


def register(subcommands: Subcommands) -> None:
    p = add_command(subcommands, "candidates", "list, accept or reject entity merge candidates, or undo a merge")
    p.add_argument("action", choices=["list", "accept", "reject", "unmerge"])
    p.add_argument("id", nargs="?")
    p.add_argument("--status", default="pending")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_candidates)

    p = add_command(
        subcommands, "writer-notes", "show or edit the writer's notes (disambiguation rules, false positives)"
    )
    p.add_argument("action", choices=["show", "edit"])
    p.add_argument("--file", help="edit: take the new notes from this file ('-': stdin) instead of $EDITOR")
    p.set_defaults(func=cmd_writer_notes)


def cmd_candidates(args: argparse.Namespace) -> int:
    from nexus_memory.identity import store as identity

    with Stores(load_settings()) as stores:
        if args.action == "list":
            rows = identity.list_candidates(stores.conn, args.status)
            if args.json:
                print_json(rows)
            for r in [] if args.json else rows:
                print(
                    f"{r['id']}  {r['b_name']} ({r['b_type']}) -> {r['a_name']} ({r['a_type']})  "
                    f"conf={r['confidence']:.2f}  {r['reason']}"
                )
            return 0
        if not args.id:
            return fail("accept/reject/unmerge need a candidate id")
        if args.action == "unmerge":
            return _unmerge(stores, args)
        try:
            status = identity.resolve_candidate(stores.conn, args.id, accept=args.action == "accept")
        except identity.MergeError as exc:
            return fail(exc)
        print(f"{args.id}: {status}" + (" (it will not be proposed again)" if status == "rejected" else ""))
    return 0


def _unmerge(stores: Stores, args: argparse.Namespace) -> int:
    from nexus_memory.lifecycle.unmerge import UnmergeError, unmerge

    try:
        result = unmerge(stores.conn, args.id)
    except UnmergeError as exc:
        return fail(exc)
    summary = (
        f"{args.id}: unmerged; {result['facts']} facts, {result['contacts']} contacts went back to {result['entity']}"
    )
    print_result(result, args.json, summary)
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
        except UnicodeDecodeError as exc:
            return fail(f"{args.file or 'the edited notes'} is not UTF-8 text (byte {exc.start}); nothing was changed")
        except (OSError, notes.NotesError, RuntimeError) as exc:
            return fail(exc)
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
