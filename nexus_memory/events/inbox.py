"""The inbox: a folder whose files are imported once each, then moved out of the way.

A file is picked up when its name ends in .jsonl or .json (write it under another name and rename
it, so a half-written file is never read). Once imported it moves to `done/`. A file that cannot be
imported moves to `rejected/`, with `<name>.reason.txt` beside it and an `event_rejects` row that
names it, so one bad file never stops the inbox. A file whose content was imported before (under
any name) is not read again.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus_memory.core.stores import Stores
from nexus_memory.events.ingest import already_ingested, detect_format, file_sha256, ingest_file
from nexus_memory.events.ledger import record_reject

INBOX_SUFFIXES = (".jsonl", ".json")
DONE_DIR = "done"
REJECTED_DIR = "rejected"
# What a file that cannot be imported raises (unreadable, not UTF-8, not JSON, a shape no importer
# knows); anything else, such as a locked database, is a fault of the run, not of the file.
BAD_FILE_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError)


@dataclass(frozen=True)
class InboxFile:
    """A file waiting in the inbox; `key` changes when the file does."""

    path: Path
    size: int
    mtime_ns: int

    @property
    def key(self) -> str:
        return f"{self.path.name}:{self.size}:{self.mtime_ns}"


def inbox_files(inbox: Path) -> list[InboxFile]:
    """Files waiting in the inbox, by name."""
    if not inbox.is_dir():
        return []
    found: list[InboxFile] = []
    for path in sorted(inbox.iterdir()):
        if path.suffix not in INBOX_SUFFIXES:
            continue
        try:
            stat = path.stat()
        except OSError:
            continue  # gone since the listing
        if path.is_file():
            found.append(InboxFile(path, stat.st_size, stat.st_mtime_ns))
    return found


@dataclass
class InboxOutcome:
    """What happened to one inbox file: 'ingested', 'duplicate' (content seen before), 'rejected' or 'missing'."""

    path: Path
    status: str
    reason: str | None = None
    moved_to: Path | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        where = f" -> {self.moved_to}" if self.moved_to else ""
        if self.status == "ingested":
            s = self.summary
            return (
                f"{self.path.name}: read {s['read']}, ingested {s['ingested']}, duplicates {s['duplicates']}, "
                f"rejected {s['rejected']}{where}"
            )
        return f"{self.path.name}: {self.status}{': ' + self.reason if self.reason else ''}{where}"


def import_inbox_file(stores: Stores, path: Path) -> InboxOutcome:
    """Import one inbox file and move it to done/, or record why it cannot be and move it to rejected/."""
    if not path.exists():
        return InboxOutcome(path, "missing", "no longer in the inbox")
    try:
        digest = file_sha256(path)
        if already_ingested(stores, digest):
            return InboxOutcome(path, "duplicate", "its content was imported before", _move(path, DONE_DIR))
        summary = ingest_file(stores, path, detect_format(path), sha256=digest)
    except BAD_FILE_ERRORS as exc:
        reason = f"{type(exc).__name__}: {exc}"
        record_reject(stores, str(path), None, f"whole file not imported: {reason}", "")
        return InboxOutcome(path, "rejected", reason, set_aside(path, reason))
    return InboxOutcome(path, "ingested", moved_to=_move(path, DONE_DIR), summary=summary.as_dict())


def set_aside(path: Path, reason: str) -> Path | None:
    """Move a file that cannot be imported to rejected/, with the reason in `<name>.reason.txt`."""
    moved = _move(path, REJECTED_DIR)
    if moved is not None:
        with contextlib.suppress(OSError):  # the event_rejects row keeps the reason regardless
            moved.with_name(moved.name + ".reason.txt").write_text(reason + "\n", encoding="utf-8")
    return moved


def _move(path: Path, folder: str) -> Path | None:
    """Move into a sibling folder, never over another file; None when the file cannot be moved."""
    target_dir = path.parent / folder
    try:
        target_dir.mkdir(exist_ok=True)
        target = target_dir / path.name
        n = 1
        while target.exists():
            target = target_dir / f"{path.stem}.{n}{path.suffix}"
            n += 1
        os.replace(path, target)
    except OSError:
        return None
    return target
