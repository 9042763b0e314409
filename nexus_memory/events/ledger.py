"""The events ledger: validate records into events and append them idempotently.

Importers turn files into `RawRecord`s; `ingest` validates each one, stores the good ones, and
keeps the bad ones verbatim in `event_rejects` with the file, line and reason, so one broken line
never costs the rest of the file.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import day_of, now_ms
from nexus_memory.core.stores import Stores
from nexus_memory.core.textcheck import (
    MAX_ID_CHARS,
    MAX_PLATFORM_CHARS,
    identifier_problem,
    json_type,
    one_line,
    safe_text,
    show,
    unicode_problem,
    visible,
)
from nexus_memory.events.partitions import partition_key
from nexus_memory.identity import store as identity

DIRECTIONS = ("inbound", "outbound", "internal")
PEER_KINDS = ("dm", "group", "channel")
MIN_MS = 0  # 1970-01-01
MAX_MS = 4_102_444_800_000  # 2100-01-01
# What a bad timestamp's reason says is accepted (the README's event format).
TIMESTAMP_FORMS = (
    "expected unix seconds or milliseconds, ISO 8601, or an email date such as 'Mon, 03 Mar 2025 10:00:00 +0000'"
)
# Bounds on what one record may hold (content's is Settings.max_content_chars); the README states them.
MAX_METADATA_CHARS = 100_000  # metadata as JSON
MAX_METADATA_DEPTH = 32
MAX_SOURCE_CHARS = 1_000  # the file path kept with each event and reject
MAX_RAW_CHARS = 1_000_000  # the text of a rejected record kept for repair
MAX_REJECTS_LISTED = 100  # reject lines an IngestSummary keeps (event_rejects keeps them all)


class InvalidRecord(ValueError):
    """A record that cannot become an event; the message says why."""


class EventConflict(InvalidRecord):
    """A record whose event id is already in the ledger with other content: not new, not a duplicate."""


@dataclass(frozen=True)
class Event:
    """One immutable ledger entry: delivery context (docs/writer.md) plus session, direction, time."""

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


@dataclass(frozen=True)
class RecordOutcome:
    """What became of one record: stored, duplicate, conflict or rejected; its event id once it parsed."""

    line: int  # the record's line or number, as in RawRecord
    status: str  # 'stored' | 'duplicate' | 'conflict' | 'rejected'
    event_id: str | None = None
    reason: str | None = None  # why it was refused (conflict, rejected)


@dataclass
class IngestSummary:
    """What one ingest did: the counts a person wants, and the partitions it touched."""

    read: int = 0
    ingested: int = 0
    duplicates: int = 0
    conflicts: int = 0  # an id already stored with other content (also kept in event_rejects)
    rejected: int = 0
    rejects: list[str] = field(default_factory=list)  # "file:line: reason", the first MAX_REJECTS_LISTED
    partitions: set[tuple[str, str]] = field(default_factory=set)  # (day, platform)
    last: RecordOutcome | None = None  # the record just ingested: what `on_record` sees it became

    def as_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "ingested": self.ingested,
            "duplicates": self.duplicates,
            "conflicts": self.conflicts,
            "rejected": self.rejected,
            "rejects": self.rejects[:MAX_REJECTS_LISTED],
            "partitions": sorted(partition_key(d, p) for d, p in self.partitions),
        }


def content_hash(platform: str, sender_id: str, thread_id: str | None, as_of: int, content: str) -> str:
    key = "\x1f".join([platform, sender_id, thread_id or "", str(as_of), content])
    return hashlib.sha256(key.encode()).hexdigest()


def parse_timestamp(value: Any) -> int:
    """Unix ms from unix seconds, unix ms, an ISO 8601 string or an email Date header (RFC 2822: 'Mon, 03 Mar
    2025 10:00:00 +0000', what a mail export holds); raise InvalidRecord otherwise."""
    if isinstance(value, bool) or value is None or value == "":
        raise InvalidRecord(f"missing or invalid timestamp {show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidRecord(f"bad timestamp {show(value)}")
    if isinstance(value, int | float):
        ms = int(value * 1000) if abs(value) < 100_000_000_000 else int(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            if text.lstrip("-").replace(".", "", 1).isdigit():
                return parse_timestamp(float(text))
            parsed = _iso_or_email_date(text)
        except ValueError as exc:
            raise InvalidRecord(f"bad timestamp {show(value)} ({TIMESTAMP_FORMS})") from exc
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        ms = int(parsed.timestamp() * 1000)
    else:
        raise InvalidRecord(f"bad timestamp {show(value)} ({TIMESTAMP_FORMS})")
    if not MIN_MS <= ms < MAX_MS:
        raise InvalidRecord(f"timestamp {show(value)} is outside 1970-2100")
    return ms


def _iso_or_email_date(text: str) -> datetime:
    """An ISO 8601 time, else an email Date header; ValueError when it is neither."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return parsedate_to_datetime(text)  # ValueError too when it is not one


def _identifier(data: dict[str, Any], key: str, limit: int = MAX_ID_CHARS, *, required: bool = False) -> str | None:
    """A trimmed identifier field: a string (a number is taken as its text), bounded, no control characters."""
    value = data.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise InvalidRecord(f"missing required field '{key}'")
        return None
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidRecord(f"field '{key}' must be a string, got {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            value = str(value)  # a numeric id is its text
        except ValueError:  # an int of thousands of digits
            raise InvalidRecord(f"field '{key}' is a number too large for an identifier") from None
    if not isinstance(value, str):
        raise InvalidRecord(f"field '{key}' must be a string, got {json_type(value)}")
    value = value.strip()
    problem = identifier_problem(value, limit)
    if problem:
        raise InvalidRecord(f"field '{key}' {problem}")
    if not visible(value):  # '\u200b': as empty as '  ' (a handle or a name nobody could see or tell apart)
        if required:
            raise InvalidRecord(f"field '{key}' has no visible character")
        return None
    return value


def _choice(data: dict[str, Any], key: str, choices: tuple[str, ...]) -> str | None:
    value = _identifier(data, key)
    if value is not None and value not in choices:
        raise InvalidRecord(f"field '{key}' must be one of {choices}, got {show(value)}")
    return value


def _content(data: dict[str, Any], max_chars: int) -> str:
    content = data.get("content")
    if content is None or (isinstance(content, str) and not content.strip()):
        raise InvalidRecord("missing required field 'content'")
    if not isinstance(content, str):
        raise InvalidRecord(f"field 'content' must be a string, got {json_type(content)}")
    content = content.strip()
    if len(content) > max_chars:
        raise InvalidRecord(f"content is {len(content)} characters, over the limit of {max_chars}")
    problem = unicode_problem(content)  # U+FFFD is a real character and fine; a lone surrogate is not
    if problem:
        raise InvalidRecord(f"field 'content' {problem}")
    if not visible(content):  # only zero-width or control characters: nothing anyone said
        raise InvalidRecord("field 'content' has no visible character")
    return content


def _metadata(data: dict[str, Any]) -> dict[str, Any]:
    """The metadata object, checked to be JSON SQLite can store: bounded depth and size, finite numbers."""
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidRecord(f"field 'metadata' must be a JSON object, got {json_type(metadata)}")
    problem = json_problem(metadata, MAX_METADATA_DEPTH)
    if problem:
        raise InvalidRecord(f"field 'metadata' {problem}")
    size = len(json.dumps(metadata, ensure_ascii=False))
    if size > MAX_METADATA_CHARS:
        raise InvalidRecord(f"field 'metadata' is {size} characters as JSON, over the limit of {MAX_METADATA_CHARS}")
    return metadata


def json_problem(value: Any, max_depth: int) -> str | None:
    """Why `value` is not plain JSON of at most `max_depth` levels that SQLite can store, or None.

    Walks with a stack, not recursion, so a value nested 100,000 deep is an answer, not a RecursionError.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > max_depth:
                return f"is nested more than {max_depth} levels deep"
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        return f"has a key that is not a string: {show(key)}"
                    if unicode_problem(key):
                        return f"has a key that {unicode_problem(key)}"
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            problem = unicode_problem(item)
            if problem:
                return f"holds a string that {problem}"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"holds the number {item!r}, which JSON cannot represent"
        elif isinstance(item, int) and not isinstance(item, bool):
            if not -(2**63) <= item < 2**63:
                return "holds an integer too large to store"
        elif item is not None and not isinstance(item, bool):
            return f"holds a {type(item).__name__}, which is not JSON"
    return None


def parse_event(data: dict[str, Any], *, source: str | None = None, max_chars: int = 100_000) -> Event:
    """Validate one record (the JSONL event format of the README) into an Event; InvalidRecord if it is bad.

    Every identifier is a trimmed string of at most MAX_ID_CHARS characters (platform MAX_PLATFORM_CHARS,
    lower-cased) without control characters; every string must be valid Unicode.
    """
    if not isinstance(data, dict):
        raise InvalidRecord(f"record must be a JSON object, got {json_type(data)}")
    platform = _identifier(data, "platform", MAX_PLATFORM_CHARS, required=True)
    sender_id = _identifier(data, "sender_id", required=True)
    assert platform and sender_id
    platform = platform.lower()  # ids and rows use the same spelling
    content = _content(data, max_chars)
    as_of = parse_timestamp(data.get("as_of", data.get("timestamp")))
    direction = _choice(data, "direction", DIRECTIONS) or "inbound"
    peer_kind = _choice(data, "peer_kind", PEER_KINDS)
    metadata = _metadata(data)
    thread_id = _identifier(data, "thread_id")
    source_id = _identifier(data, "id")
    if source_id:
        event_id = f"{platform}:{source_id}"
    else:
        event_id = "h:" + content_hash(platform, sender_id, thread_id, as_of, content)[:32]
    return Event(
        id=event_id,
        platform=platform,
        sender_id=sender_id,
        sender_name=_identifier(data, "sender_name"),
        peer_id=_identifier(data, "peer_id"),
        peer_kind=peer_kind,
        thread_id=thread_id,
        session_id=_identifier(data, "session_id"),
        direction=direction,
        content=content,
        as_of=as_of,
        metadata=metadata,
        source=None if source is None else safe_text(source, MAX_SOURCE_CHARS),
    )


def record_reject(stores: Stores, source: str, line: int | None, reason: str, raw: str) -> None:
    """Keep a rejected record for repair: escaped where it is not valid Unicode, bounded, stored once."""
    row = (safe_text(source, MAX_SOURCE_CHARS), line, safe_text(reason, 2_000), safe_text(raw, MAX_RAW_CHARS))
    already = stores.conn.execute(
        """SELECT 1 FROM event_rejects WHERE source = ? AND line IS ? AND reason = ? AND raw = ?
           AND resolved_at IS NULL LIMIT 1""",
        row,
    ).fetchone()
    if already is None:  # a rerun of the same file does not pile up copies of the same reject
        stores.conn.execute(
            "INSERT INTO event_rejects (source, line, reason, raw, rejected_at) VALUES (?, ?, ?, ?, ?)",
            (*row, now_ms()),
        )


def append_event(stores: Stores, event: Event) -> bool:
    """Store one event; False when it is already there (same id and content, or same content hash).

    Raises EventConflict when its id is taken by an event with other content: the stored one is kept.
    """
    conn = stores.conn
    stored = conn.execute("SELECT content_hash FROM events WHERE id = ?", (event.id,)).fetchone()
    if stored is not None:
        if stored[0] == event.content_hash:
            return False
        raise EventConflict(
            f"conflict: event id {show(event.id)} is already in the ledger with other content; the stored event is kept"
        )
    if conn.execute("SELECT 1 FROM events WHERE content_hash = ? LIMIT 1", (event.content_hash,)).fetchone():
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
    """Validate and append records; bad ones go to event_rejects. Commits every `batch_size` records.

    Nothing one record holds stops the import: whatever goes wrong while validating or storing it
    (wrong types, invalid Unicode, nesting too deep, numbers too large) rolls back that record alone
    and becomes its reject row. Only a failure of the store itself (locked, disk full) is raised.
    """
    summary = IngestSummary()
    stream = _guarded(records)
    while _ingest_batch(stores, stream, summary, batch_size, on_record):
        pass
    return summary


def _ingest_batch(
    stores: Stores,
    stream: Iterator[RawRecord],
    summary: IngestSummary,
    size: int,
    on_record: Callable[[IngestSummary], None] | None,
) -> bool:
    """Up to `size` records in one transaction; False once the records ran out."""
    with db.transaction(stores.conn):
        for _ in range(max(1, size)):
            record = next(stream, None)
            if record is None:
                return False
            _ingest_record(stores, record, summary)
            if on_record:
                on_record(summary)
    return True


def _ingest_record(stores: Stores, record: RawRecord, summary: IngestSummary) -> None:
    summary.read += 1
    event: Event | None = None
    try:
        with db.transaction(stores.conn):  # a savepoint: a record failing half-way leaves nothing behind
            if record.data is None:
                raise InvalidRecord(record.error or "unparseable record")
            event = parse_event(record.data, source=record.source, max_chars=stores.settings.max_content_chars)
            is_new = append_event(stores, event)
    except db.OperationalError:
        raise  # the store failed (locked, disk full, I/O), not this record
    except Exception as exc:
        if isinstance(exc, EventConflict):
            summary.conflicts += 1
        else:
            summary.rejected += 1
        reason = reject_reason(exc)
        if len(summary.rejects) < MAX_REJECTS_LISTED:
            summary.rejects.append(f"{safe_text(record.source, MAX_SOURCE_CHARS)}:{record.line}: {reason}")
        record_reject(stores, record.source, record.line, reason, record.raw)
        status = "conflict" if isinstance(exc, EventConflict) else "rejected"
        summary.last = RecordOutcome(record.line, status, event.id if event else None, reason)
        return
    if is_new:
        summary.ingested += 1
        summary.partitions.add((event.day, event.platform))
    else:
        summary.duplicates += 1
    summary.last = RecordOutcome(record.line, "stored" if is_new else "duplicate", event.id)


def reject_reason(exc: BaseException) -> str:
    """The reason a record was rejected, for a person: the validation message, or what broke."""
    if isinstance(exc, InvalidRecord):
        return one_line(exc, 1_000)
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return one_line(f"could not be stored: {type(exc).__name__}: {exc}", 1_000)


def _guarded(records: Iterable[RawRecord]) -> Iterator[RawRecord]:
    """The records; if the importer itself fails part-way, a last reject saying where reading stopped."""
    iterator = iter(records)
    last: RawRecord | None = None
    while True:
        try:
            record = next(iterator)
        except StopIteration:
            return
        except Exception as exc:
            source, line = (last.source, last.line + 1) if last else ("<input>", 1)
            yield RawRecord(source, line, None, "", f"reading stopped here: {reject_reason(exc)}")
            return
        last = record
        yield record


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
