"""Importing files into the ledger: format detection, one summary per file, a record of what was read;
and JSONL from a stream (`nexus-memory ingest -`: standard input, for shell hooks)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import IO

from nexus_memory.core.ids import now_ms
from nexus_memory.core.stores import Stores
from nexus_memory.core.textcheck import safe_text
from nexus_memory.events.importers import jsonl, read_records
from nexus_memory.events.ledger import MAX_SOURCE_CHARS, IngestSummary, ingest


def detect_format(path: Path) -> str:
    """Guess an import format from a file: .jsonl/.ndjson is generic; .json is LoCoMo, ChatGPT or Claude.

    Raises ValueError naming the file when it cannot be read, is empty, or its format cannot be told.
    """
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl"
    try:
        with path.open("rb") as handle:
            head = handle.read(200_000).decode("utf-8", errors="replace")
    except OSError as exc:
        raise ValueError(f"cannot open {path}: {exc.strerror or exc}") from exc
    if not head.strip("\ufeff \t\r\n"):
        raise ValueError(f"{path} is empty")
    if '"chat_messages"' in head:
        return "claude"
    if '"mapping"' in head:
        return "chatgpt"
    if '"conversation"' in head and '"speaker_a"' in head:
        return "locomo"
    if head.lstrip("\ufeff \t\r\n").startswith("[") and '"sender_id"' in head and '"content"' in head:
        raise ValueError(
            f"{path} holds a JSON array of events: write one event a line (JSONL), "
            f"e.g. jq -c '.[]' {path.name} > {path.stem}.jsonl, and ingest that"
        )
    raise ValueError(f"{path}: cannot tell the format; pass --format jsonl|locomo|chatgpt|claude")


def file_sha256(path: Path) -> str:
    """Content hash of a file, read in chunks: how an imported file is recognised whatever its name."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def already_ingested(stores: Stores, sha256: str) -> bool:
    """Whether a file with this content hash was imported before."""
    return stores.conn.execute("SELECT 1 FROM ingested_files WHERE sha256 = ?", (sha256,)).fetchone() is not None


def ingest_file(
    stores: Stores,
    path: Path,
    fmt: str,
    *,
    sha256: str | None = None,
    on_record: Callable[[IngestSummary], None] | None = None,
) -> IngestSummary:
    """Import one file; remember it (by content hash) so the inbox sensor never reads it twice.

    A file that cannot be read as a whole (missing, empty, not JSON, wrong shape) raises ValueError
    naming it before anything is stored; past that, bad records become rejects (see `events.ingest`).
    """
    try:
        digest = sha256 or file_sha256(path)
    except OSError as exc:
        raise ValueError(f"cannot open {path}: {exc.strerror or exc}") from exc
    summary = ingest(stores, read_records(path, fmt), on_record=on_record)
    stores.conn.execute(
        """INSERT OR REPLACE INTO ingested_files (sha256, path, format, summary, ingested_at)
           VALUES (?, ?, ?, ?, ?)""",
        (digest, safe_text(path, MAX_SOURCE_CHARS), fmt, json.dumps(summary.as_dict()), now_ms()),
    )
    return summary


def ingest_stream(
    stores: Stores,
    stream: IO[bytes],
    *,
    source: str = "<stdin>",
    on_record: Callable[[IngestSummary], None] | None = None,
) -> IngestSummary:
    """Import JSONL read once from `stream`, exactly as a .jsonl file (the same checks, rejects and
    summary; `source` names it in them). ValueError when the stream as a whole cannot be read (empty, not
    UTF-8). Nothing goes to `ingested_files`: a stream has no content hash to be recognised by again."""
    return ingest(stores, jsonl.read_stream(stream, source), on_record=on_record)
