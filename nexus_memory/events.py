"""The events ledger: validate records into events and append them idempotently.

Importers turn files into `RawRecord`s; `ingest` validates each one, stores the good ones, and
keeps the bad ones verbatim in `event_rejects` with the file, line and reason, so one broken line
never costs the rest of the file.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nexus_memory import identity
from nexus_memory.ids import now_ms
from nexus_memory.partitions import partition_key
from nexus_memory.stores import Stores

DIRECTIONS = ("inbound", "outbound", "internal")
PEER_KINDS = ("dm", "group", "channel")
MIN_MS = 0  # 1970-01-01
MAX_MS = 4_102_444_800_000  # 2100-01-01


class InvalidRecord(ValueError):
    """A record that cannot become an event; the message says why."""


@dataclass(frozen=True)
class Event:
    """One immutable ledger entry: deliveryContext of seed 002 plus session, direction, time."""

    id: str
    platform: str
    sender_id: str
    content: str
    as_of: int
    direction: str = "inbound"
    sender_name: str | None = None
    peer_id: str | None = None
    peer_kind: str | None = None
    thread_id: str | None = None
    session_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str | None = None

    @property
    def day(self) -> str:
        return day_of(self.as_of)

    @property
    def content_hash(self) -> str:
        return content_hash(self.platform, self.sender_id, self.thread_id, self.as_of, self.content)


@dataclass(frozen=True)
class RawRecord:
    """One record as an importer read it, before validation."""

    source: str  # file path or caller name
    line: int  # 1-based line or record number
    data: dict[str, Any] | None  # parsed record, None when it could not even be parsed
    raw: str  # the text as read, for the rejects table
    error: str | None = None  # parse error, when data is None


@dataclass
class IngestSummary:
    """What one ingest did: the counts a person wants, and the partitions it touched."""

    read: int = 0
    ingested: int = 0
    duplicates: int = 0
    rejected: int = 0
    rejects: list[str] = field(default_factory=list)  # "file:line: reason"
    partitions: set[tuple[str, str]] = field(default_factory=set)  # (day, platform)

    def as_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "ingested": self.ingested,
            "duplicates": self.duplicates,
            "rejected": self.rejected,
            "rejects": self.rejects[:100],
            "partitions": sorted(partition_key(d, p) for d, p in self.partitions),
        }


def day_of(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")


def content_hash(platform: str, sender_id: str, thread_id: str | None, as_of: int, content: str) -> str:
    key = "\x1f".join([platform, sender_id, thread_id or "", str(as_of), content])
    return hashlib.sha256(key.encode()).hexdigest()


def parse_timestamp(value: Any) -> int:
    """Unix ms from unix seconds, unix ms, or an ISO 8601 string; raise InvalidRecord otherwise."""
    if isinstance(value, bool) or value is None or value == "":
        raise InvalidRecord(f"missing or invalid timestamp {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidRecord(f"bad timestamp {value!r}")
    if isinstance(value, int | float):
        ms = int(value * 1000) if abs(value) < 100_000_000_000 else int(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            if text.lstrip("-").replace(".", "", 1).isdigit():
                return parse_timestamp(float(text))
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidRecord(f"bad timestamp {value!r}") from exc
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        ms = int(parsed.timestamp() * 1000)
    else:
        raise InvalidRecord(f"bad timestamp {value!r}")
    if not MIN_MS <= ms < MAX_MS:
        raise InvalidRecord(f"timestamp {value!r} is outside 1970-2100")
    return ms


def _text(data: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise InvalidRecord(f"missing required field '{key}'")
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise InvalidRecord(f"field '{key}' must be a string, got {type(value).__name__}")
    return value.strip()


def parse_event(data: dict[str, Any], *, source: str | None = None, max_chars: int = 100_000) -> Event:
    """Validate one record (the JSONL event format of the README) into an Event."""
    if not isinstance(data, dict):
        raise InvalidRecord(f"record must be a JSON object, got {type(data).__name__}")
    platform = _text(data, "platform", required=True)
    sender_id = _text(data, "sender_id", required=True)
    content = data.get("content")
    if not isinstance(content, str) or not content.strip():
        raise InvalidRecord("missing required field 'content'")
    if "\ufffd" in content:
        raise InvalidRecord("content is not valid UTF-8 (replacement characters found)")
    if len(content) > max_chars:
        raise InvalidRecord(f"content is {len(content)} characters, over the limit of {max_chars}")
    as_of = parse_timestamp(data.get("as_of", data.get("timestamp")))
    direction = _text(data, "direction") or "inbound"
    if direction not in DIRECTIONS:
        raise InvalidRecord(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    peer_kind = _text(data, "peer_kind")
    if peer_kind is not None and peer_kind not in PEER_KINDS:
        raise InvalidRecord(f"peer_kind must be one of {PEER_KINDS}, got {peer_kind!r}")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidRecord("metadata must be a JSON object")
    thread_id = _text(data, "thread_id")
    source_id = _text(data, "id")
    assert platform and sender_id
    platform = platform.lower()  # ids and rows use the same spelling
    if source_id:
        event_id = f"{platform}:{source_id}"
    else:
        event_id = "h:" + content_hash(platform, sender_id, thread_id, as_of, content)[:32]
    return Event(
        id=event_id,
        platform=platform,
        sender_id=sender_id,
        sender_name=_text(data, "sender_name"),
        peer_id=_text(data, "peer_id"),
        peer_kind=peer_kind,
        thread_id=thread_id,
        session_id=_text(data, "session_id"),
        direction=direction,
        content=content.strip(),
        as_of=as_of,
        metadata=metadata,
        source=source,
    )


def record_reject(stores: Stores, source: str, line: int | None, reason: str, raw: str) -> None:
    stores.conn.execute(
        "INSERT INTO event_rejects (source, line, reason, raw, rejected_at) VALUES (?, ?, ?, ?, ?)",
        (source, line, reason, raw[:1_000_000], now_ms()),
    )


def append_event(stores: Stores, event: Event) -> bool:
    """Store one event unless it is already there (same id or same content hash). True if new."""
    conn = stores.conn
    exists = conn.execute(
        "SELECT 1 FROM events WHERE id = ? OR content_hash = ? LIMIT 1", (event.id, event.content_hash)
    ).fetchone()
    if exists:
        return False
    conn.execute(
        """INSERT INTO events (id, platform, sender_id, sender_name, peer_id, peer_kind, thread_id,
               session_id, direction, content, content_hash, as_of, ingested_at, day, metadata, source)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            event.id,
            event.platform,
            event.sender_id,
            event.sender_name,
            event.peer_id,
            event.peer_kind,
            event.thread_id,
            event.session_id,
            event.direction,
            event.content,
            event.content_hash,
            event.as_of,
            now_ms(),
            event.day,
            json.dumps(event.metadata, ensure_ascii=False),
            event.source,
        ),
    )
    identity.register_delivery(stores.conn, event)
    return True


def ingest(
    stores: Stores,
    records: Iterable[RawRecord],
    *,
    on_record: Callable[[IngestSummary], None] | None = None,
    batch_size: int = 500,
) -> IngestSummary:
    """Validate and append records; bad ones go to event_rejects. Commits every `batch_size` records."""
    summary = IngestSummary()
    max_chars = stores.settings.max_content_chars
    pending = 0
    conn = stores.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        for record in records:
            summary.read += 1
            try:
                if record.data is None:
                    raise InvalidRecord(record.error or "unparseable record")
                event = parse_event(record.data, source=record.source, max_chars=max_chars)
            except InvalidRecord as exc:
                summary.rejected += 1
                summary.rejects.append(f"{record.source}:{record.line}: {exc}")
                record_reject(stores, record.source, record.line, str(exc), record.raw)
            else:
                if append_event(stores, event):
                    summary.ingested += 1
                    summary.partitions.add((event.day, event.platform))
                else:
                    summary.duplicates += 1
            pending += 1
            if pending >= batch_size:
                conn.execute("COMMIT")
                conn.execute("BEGIN IMMEDIATE")
                pending = 0
            if on_record:
                on_record(summary)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return summary


def row_to_event(row: Any) -> Event:
    """An Event from an `events` row."""
    return Event(
        id=row["id"],
        platform=row["platform"],
        sender_id=row["sender_id"],
        content=row["content"],
        as_of=row["as_of"],
        direction=row["direction"],
        sender_name=row["sender_name"],
        peer_id=row["peer_id"],
        peer_kind=row["peer_kind"],
        thread_id=row["thread_id"],
        session_id=row["session_id"],
        metadata=json.loads(row["metadata"] or "{}"),
        source=row["source"],
    )
