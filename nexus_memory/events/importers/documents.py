"""What the whole-JSON-document importers (LoCoMo, ChatGPT, Claude) share.

A document is read at once; a file that cannot be read, is not JSON or has the wrong shape raises one
ValueError naming the file. Past that point nothing raises: each conversation and each message becomes
an event or a reject of its own, so one malformed message loses only itself. A value nested deeper
than MAX_DEPTH (which Python's JSON reader cannot take) is cut out and replaced by a marker, so only
the message holding it is rejected.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path
from typing import Any

from nexus_memory.core.textcheck import json_type, safe_text, show
from nexus_memory.events.ledger import InvalidRecord, RawRecord, reject_reason

MAX_DEPTH = 100  # JSON nesting kept; real exports stay under 20 levels
TOO_DEEP_KEY = "\x00nexus: nested too deeply"  # marker object that stands in for a cut-out value
MAX_CONVERSATION_RAW = 10_000  # characters of a rejected conversation kept in event_rejects
# (conversation, its 1-based index, source, running record numbers) -> its records
ConversationReader = Callable[[Any, int, str, Iterator[int]], Iterator[RawRecord]]
# A JSON string token, or one bracket: enough to track nesting without parsing.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def load_json_document(path: Path) -> Any:
    """The parsed content of a whole JSON file; ValueError naming the file if unreadable or invalid."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot open {path}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not valid UTF-8 (byte {exc.start})") from exc
    if not text.strip():
        raise ValueError(f"{path} is empty")
    try:
        try:
            return json.loads(text, parse_int=_json_int)
        except RecursionError:
            return json.loads(_cut_deep(text, MAX_DEPTH), parse_int=_json_int)
    except RecursionError:
        raise ValueError(f"{path} is not valid JSON: nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc


def _json_int(digits: str) -> int | float:
    """An integer literal; one too long for Python's int parser becomes a float (inf), rejected later."""
    return int(digits) if len(digits) <= 4_000 else float(digits)


def _cut_deep(text: str, limit: int) -> str:
    """`text` with every array or object nested deeper than `limit` replaced by the TOO_DEEP marker."""
    pieces: list[str] = []
    depth, kept_to, cut_at = 0, 0, -1
    marker = json.dumps({TOO_DEEP_KEY: True})
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth == limit + 1:
                cut_at = match.start()
        elif token in ("]", "}"):
            if depth == limit + 1 and cut_at >= 0:
                pieces += [text[kept_to:cut_at], marker]
                kept_to, cut_at = match.end(), -1
            depth -= 1
    if cut_at >= 0:  # truncated inside a deep value: keep what is before it, the parser says what is wrong
        pieces += [text[kept_to:cut_at], marker]
        kept_to = len(text)
    pieces.append(text[kept_to:])
    return "".join(pieces)


def holds_too_deep(value: Any) -> bool:
    """Whether `value` holds a part `_cut_deep` replaced (walked with a stack, not recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if TOO_DEEP_KEY in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def dump_raw(value: Any, limit: int | None = None) -> str:
    """The source object as text for the rejects table (never raises)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        text = show(value)
    return text if limit is None else text[:limit]


def read_conversations(path: Path, what: str, per_conversation: ConversationReader) -> Iterator[RawRecord]:
    """Records of a JSON document holding one conversation or a list of them (LoCoMo, ChatGPT, Claude).

    Raises ValueError at once if the document is not such a list; record numbers run across the file.
    """
    document = load_json_document(path)
    if isinstance(document, dict):
        document = [document]
    if not isinstance(document, list):
        raise ValueError(f"{path} is not {what}: expected a list of conversations, got {json_type(document)}")
    if not document:
        raise ValueError(f"{path} holds no conversations")
    return _conversation_records(document, str(path), per_conversation)


def _conversation_records(
    conversations: list[Any], source: str, per_conversation: ConversationReader
) -> Iterator[RawRecord]:
    numbers = count(1)
    for index, conversation in enumerate(conversations, start=1):
        try:
            yield from per_conversation(conversation, index, source, numbers)
        except Exception as exc:  # an importer bug on odd input costs this conversation's rest, not the file
            reason = f"conversation {index}: {reject_reason(exc)}"
            yield RawRecord(source, next(numbers), None, dump_raw(conversation, MAX_CONVERSATION_RAW), reason)


def conversation_reject(source: str, numbers: Iterator[int], conversation: Any, reason: str) -> RawRecord:
    """The one reject for a conversation whose own shape is wrong."""
    return RawRecord(source, next(numbers), None, dump_raw(conversation, MAX_CONVERSATION_RAW), reason)


def item_record(
    source: str, numbers: Iterator[int], where: str, item: Any, build: Callable[[], dict[str, Any] | None]
) -> RawRecord | None:
    """The record of one message or turn: its event from `build`, None when `build` says it is not
    conversation (system prompts, tool calls, empty messages), or a reject naming `where` when
    anything about it is malformed."""
    try:
        if holds_too_deep(item):
            raise InvalidRecord(f"holds a value nested more than {MAX_DEPTH} levels deep")
        event = build()
    except Exception as exc:
        return RawRecord(source, next(numbers), None, dump_raw(item), f"{where}: {reject_reason(exc)}")
    return None if event is None else RawRecord(source, next(numbers), event, dump_raw(item))


def identifier(value: Any, what: str) -> str | None:
    """A conversation or message id from an export: text (a number is taken as its text), or None."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return value
    raise InvalidRecord(f"{what} must be a string, got {json_type(value)}")


def label(value: Any) -> str | None:
    """A title or name for metadata: text made storable, else None (a bad title costs no message)."""
    return safe_text(value, 1_000) if isinstance(value, str) else None


def text_parts(parts: list[Any]) -> list[str]:
    """The texts in a list of message parts, in order.

    Strings are text, numbers their text, objects their "text" field; nested lists are read through;
    null parts and typed objects without text (images, tool calls) hold no text. Anything else raises
    InvalidRecord: a message is rejected rather than stored without a part that was meant to be text.
    """
    texts: list[str] = []
    stack: list[tuple[Any, str]] = [(part, f"part {i + 1}") for i, part in reversed(list(enumerate(parts)))]
    while stack:
        part, where = stack.pop()
        if isinstance(part, dict):
            if "text" not in part:
                if part.get("type", part.get("content_type")) is not None:
                    continue  # an image, a tool call, a thinking block: not conversation text
                raise InvalidRecord(f"message {where} is an object with neither a type nor text")
            part = part["text"]
        if isinstance(part, list):
            stack += [(p, f"{where}.{i + 1}") for i, p in reversed(list(enumerate(part)))]
        elif isinstance(part, str):
            texts.append(part)
        elif isinstance(part, int | float) and not isinstance(part, bool) and math.isfinite(part):
            texts.append(str(part))
        elif part is not None:
            raise InvalidRecord(f"message {where} is not text: {show(part)}")
    return texts


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
