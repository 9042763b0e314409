"""Importers: turn an export file into `RawRecord`s for `nexus_memory.events.ledger.ingest`.

Every importer is a module with `read(path) -> Iterator[RawRecord]`: one record per event, a record
with `data=None` and the reason for anything it cannot parse, and a ValueError (naming the file) only
when the file as a whole cannot be read; once reading has begun, no record makes it raise. Validation
and storage are the ledger's job, not the importers'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from nexus_memory.events.importers import chatgpt, claude, jsonl, locomo
from nexus_memory.events.ledger import RawRecord

Reader = Callable[[Path], Iterator[RawRecord]]

FORMATS: dict[str, Reader] = {
    "jsonl": jsonl.read,
    "locomo": locomo.read,
    "chatgpt": chatgpt.read,
    "claude": claude.read,
}


def read_records(path: Path, format: str) -> Iterator[RawRecord]:
    """The records of `path` read with the importer named `format`; ValueError for an unknown format."""
    reader = FORMATS.get(format)
    if reader is None:
        raise ValueError(f"unknown import format {format!r}; known formats: {', '.join(sorted(FORMATS))}")
    return reader(Path(path))
