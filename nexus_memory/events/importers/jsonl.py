"""Generic JSONL importer: one event object per line, the format every other importer produces.

Each non-blank line is a JSON object with these fields (`?` = optional):

    {
      "id"?:          str   source-side message id; makes re-imports idempotent (else a content hash does)
      "platform":     str   "imessage", "gmail", "discord", "agent", ...
      "sender_id":    str   raw handle: "+15550111", "priya.k@example.com", "priyak#2211"
      "sender_name"?: str   display name, when the platform gives one
      "peer_id"?:     str   who/where it went: a handle, a group id, "server/channel"
      "peer_kind"?:   str   "dm" | "group" | "channel"
      "thread_id"?:   str   conversation thread
      "session_id"?:  str   agent/chat session
      "direction"?:   str   "inbound" (default) | "outbound" (the owner wrote it) | "internal"
      "content":      str   the text (for email: subject and body)
      "as_of":        unix seconds, unix milliseconds, or an ISO 8601 string (no zone = UTC);
                      "timestamp" is accepted as another name for it
      "metadata"?:    object  importer extras, e.g. {"subject": ...}
    }

Validation of the fields happens in `nexus_memory.events.ledger.parse_event`; this module only splits the file
into lines (LF, CRLF or a lone CR) and JSON-decodes them. Blank lines are skipped, and a UTF-8 byte order
mark is dropped wherever a line starts with one (two files joined by `cat`). A line that is not UTF-8,
not JSON, nested too deeply or not an object becomes a `RawRecord` with `data=None` and the reason, so
the rest of the file still imports. An empty file, or one in UTF-16/32, raises ValueError at once.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from nexus_memory.core.textcheck import json_type
from nexus_memory.events.ledger import RawRecord

CHUNK = 1 << 20
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = {b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16", b"\x00\x00\xfe\xff": "UTF-32"}


def read(path: Path) -> Iterator[RawRecord]:
    """One RawRecord per non-blank line of a JSONL file; ValueError if it cannot be opened or is empty."""
    path = Path(path)
    try:
        handle = path.open("rb")
        head = _check_start(handle, str(path))
    except OSError as exc:
        raise ValueError(f"cannot open {path}: {exc.strerror or exc}") from exc
    return _records(handle, str(path), head)


def read_stream(handle: IO[bytes], source: str) -> Iterator[RawRecord]:
    """The same for a stream read once (standard input), named `source` in rejects; ValueError when it is
    empty or in a wide encoding. The stream is closed once read."""
    return _records(handle, source, _check_start(handle, source))


def _check_start(handle: IO[bytes], source: str) -> bytes:
    """The bytes read to see that there are records in UTF-8 (they are read again from here, so a pipe
    works too); ValueError (closing `handle`) for a file with no records or in a wide encoding."""
    head = handle.read(4)
    wide = next((name for bom, name in _WIDE_BOMS.items() if head.startswith(bom)), None)
    if wide is None:
        chunk, seen = head, bytearray(head)
        while chunk and not chunk.replace(_BOM, b"").strip():
            chunk = handle.read(CHUNK)
            seen += chunk
        if chunk:
            return bytes(seen)
    handle.close()
    if wide:
        raise ValueError(f"{source} is {wide}, not UTF-8; convert it (iconv -t UTF-8) and ingest again")
    raise ValueError(f"{source} is empty")


def _records(handle: IO[bytes], source: str, head: bytes = b"") -> Iterator[RawRecord]:
    """Decode the lines of an open binary file (after `head`, its bytes already read) one at a time, so
    large files stream."""
    with handle:
        for number, raw_line in enumerate(_lines(handle, head), start=1):
            record = parse_line(raw_line, source, number)
            if record is not None:
                yield record


def _lines(handle: IO[bytes], head: bytes = b"") -> Iterator[bytes]:
    """The lines of a binary file without their endings: LF, CRLF, or a lone CR (old Mac files)."""
    pending = bytearray()
    for chunk in itertools.chain([head] if head else [], iter(lambda: handle.read(CHUNK), b"")):
        pending += chunk
        if b"\n" not in chunk and b"\r" not in chunk:
            continue
        held = pending.endswith(b"\r")  # its LF may be in the next chunk: one CRLF is one break
        *complete, rest = _LINE_BREAK.split(bytes(pending[:-1] if held else pending))
        yield from complete
        pending = bytearray(rest + (b"\r" if held else b""))
    if pending:
        yield from _LINE_BREAK.split(bytes(pending))


def parse_line(raw_line: bytes, source: str, number: int) -> RawRecord | None:
    """The RawRecord for one line (without its line ending), or None for a blank line."""
    body = raw_line.rstrip(b"\r\n")
    if body.startswith(_BOM):
        body = body[len(_BOM) :]  # a byte order mark, at the start of a file or of a file joined on
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raw = body.decode("utf-8", errors="replace")
        return RawRecord(source, number, None, raw, f"invalid UTF-8 at byte {exc.start} of the line")
    if not text.strip():
        return None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return RawRecord(source, number, None, text, "malformed JSON: nested too deeply")
    except ValueError as exc:
        return RawRecord(source, number, None, text, f"malformed JSON: {_json_error(exc)}")
    if not isinstance(data, dict):
        return RawRecord(source, number, None, text, f"line is not a JSON object (got {json_type(data)})")
    return RawRecord(source, number, data, text)


def _reject_constant(name: str) -> Any:
    """Refuse NaN/Infinity: they are not JSON, and a NaN timestamp would crash validation."""
    raise ValueError(f"{name} is not valid JSON")


def _json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return str(exc)
