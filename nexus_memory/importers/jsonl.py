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

Validation of the fields happens in `nexus_memory.events.parse_event`; this module only splits the file
into lines and JSON-decodes them. Blank lines are skipped; a line that is not UTF-8, not JSON or not an
object becomes a `RawRecord` with `data=None` and the reason, so the rest of the file still imports.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path
from typing import IO, Any

from nexus_memory.events import RawRecord

# (conversation, its 1-based index, source, running record numbers) -> its records
ConversationReader = Callable[[Any, int, str, Iterator[int]], Iterator[RawRecord]]


def read(path: Path) -> Iterator[RawRecord]:
    """One RawRecord per non-blank line of a JSONL file; raise ValueError if it cannot be opened."""
    path = Path(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ValueError(f"cannot open {path}: {exc.strerror or exc}") from exc
    return _records(handle, str(path))


def _records(handle: IO[bytes], source: str) -> Iterator[RawRecord]:
    """Decode the lines of an open binary file one at a time, so large files stream."""
    with handle:
        for number, raw_line in enumerate(handle, start=1):
            record = parse_line(raw_line, source, number)
            if record is not None:
                yield record


def parse_line(raw_line: bytes, source: str, number: int) -> RawRecord | None:
    """The RawRecord for one line, or None for a blank line."""
    body = raw_line.rstrip(b"\r\n")
    if number == 1 and body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]  # a UTF-8 byte order mark some editors write
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raw = body.decode("utf-8", errors="replace")
        return RawRecord(source, number, None, raw, f"invalid UTF-8 at byte {exc.start} of the line")
    if not text.strip():
        return None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        return RawRecord(source, number, None, text, f"malformed JSON: {_json_error(exc)}")
    if not isinstance(data, dict):
        return RawRecord(source, number, None, text, f"line is not a JSON object (got {_json_type(data)})")
    return RawRecord(source, number, data, text)


def _reject_constant(name: str) -> Any:
    """Refuse NaN/Infinity: they are not JSON, and a NaN timestamp would crash validation."""
    raise ValueError(f"{name} is not valid JSON")


def _json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return str(exc)


def _json_type(value: Any) -> str:
    """JSON's name for a decoded value's type, for error messages a user reads."""
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def load_json_document(path: Path) -> Any:
    """The parsed content of a whole JSON file; ValueError naming the file if unreadable or invalid."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot open {path}: {exc.strerror or exc}") from exc
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not valid UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc


def dump_raw(value: Any) -> str:
    """The source object as text for the rejects table."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # circular structures cannot come from json.loads, but be safe
        return repr(value)


def read_conversations(path: Path, what: str, per_conversation: ConversationReader) -> Iterator[RawRecord]:
    """Records of a JSON document holding one conversation or a list of them (LoCoMo, ChatGPT, Claude).

    Raises ValueError at once if the document is not such a list; record numbers run across the file.
    """
    document = load_json_document(path)
    if isinstance(document, dict):
        document = [document]
    if not isinstance(document, list):
        raise ValueError(f"{path} is not {what}: expected a list of conversations")
    return _conversation_records(document, str(path), per_conversation)


def _conversation_records(
    conversations: list[Any], source: str, per_conversation: ConversationReader
) -> Iterator[RawRecord]:
    numbers = count(1)
    for index, conversation in enumerate(conversations, start=1):
        yield from per_conversation(conversation, index, source, numbers)


def assistant_chat_event(
    *,
    event_id: Any,
    platform: str,
    assistant: str,
    conversation_id: str,
    user_side: bool,
    text: str,
    as_of: Any,
    title: str | None,
    role: str,
) -> dict[str, Any]:
    """The generic event for one message of a user <-> assistant export (ChatGPT, Claude)."""
    return {
        "id": event_id,
        "platform": platform,
        "thread_id": conversation_id,
        "session_id": conversation_id,
        "sender_id": "user" if user_side else platform,
        "sender_name": None if user_side else assistant,
        "peer_id": platform if user_side else "user",
        "peer_kind": "dm",
        "direction": "outbound" if user_side else "inbound",
        "content": text,
        "as_of": as_of,
        "metadata": {"title": title, "role": role},
    }
