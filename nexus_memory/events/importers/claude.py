"""Claude export importer: the `conversations.json` of claude.ai's data export, one event per message.

Each conversation is {uuid, name, created_at, chat_messages: [{uuid, sender, text, content?, created_at}]}
with `sender` "human" or "assistant". Newer exports split a message into `content` blocks (text,
tool_use, tool_result, thinking); we keep the text blocks, and fall back to the flat `text` field.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from nexus_memory.core.textcheck import json_type, show
from nexus_memory.events.importers.documents import (
    assistant_chat_event,
    conversation_reject,
    identifier,
    item_record,
    label,
    read_conversations,
    text_parts,
)
from nexus_memory.events.ledger import InvalidRecord, RawRecord

PLATFORM = "claude"
SENDERS = {"human": "user", "assistant": "assistant"}  # export sender -> role; the owner wrote the human turns
NOT_CONVERSATION = frozenset({"system"})  # senders skipped: a system prompt is nobody's words


def read(path: Path) -> Iterator[RawRecord]:
    """One RawRecord per human/assistant message; raise ValueError if the file is not a Claude export."""
    return read_conversations(path, "a Claude export", conversation_records)


def conversation_records(conversation: Any, index: int, source: str, numbers: Iterator[int]) -> Iterator[RawRecord]:
    """The messages of one conversation, or a single reject when its shape is wrong."""
    fields = conversation if isinstance(conversation, dict) else {}
    messages = fields.get("chat_messages", [])
    try:
        conversation_id = identifier(fields.get("uuid"), "conversation uuid")
    except InvalidRecord as exc:
        yield conversation_reject(source, numbers, conversation, f"conversation {index}: {exc}")
        return
    if not conversation_id or not isinstance(messages, list):
        reason = f"conversation {index} has no uuid or no list of 'chat_messages'"
        yield conversation_reject(source, numbers, conversation, reason)
        return
    title = label(fields.get("name"))
    for position, message in enumerate(messages, start=1):
        where = f"conversation {index} message {position}"
        build = partial(message_event, message, conversation_id, title, fields.get("created_at"))
        record = item_record(source, numbers, where, message, build)
        if record is not None:
            yield record


def message_event(
    message: Any, conversation_id: str, title: str | None, conversation_time: Any
) -> dict[str, Any] | None:
    """The generic event for one message, None when it has no text; InvalidRecord when it has a shape no
    export writes, or text without a sender we know."""
    if not isinstance(message, dict):
        raise InvalidRecord(f"message is not a JSON object (got {json_type(message)})")
    sender = message.get("sender")
    if sender is not None and not isinstance(sender, str):
        raise InvalidRecord(f"sender must be a string, got {json_type(sender)}")
    if sender in NOT_CONVERSATION:
        return None
    text = message_text(message)
    if not text:
        return None
    if sender not in SENDERS:  # words without a known speaker: refused with the reason, never dropped in silence
        raise InvalidRecord(f"message has text but its sender is {show(sender)}, not 'human' or 'assistant'")
    role = SENDERS[sender]
    return assistant_chat_event(
        event_id=message.get("uuid"),
        platform=PLATFORM,
        assistant="Claude",
        conversation_id=conversation_id,
        user_side=sender == "human",
        text=text,
        as_of=message.get("created_at") or conversation_time,
        title=title,
        role=role,
    )


def message_text(message: dict[str, Any]) -> str:
    """Text blocks of `content` joined, else the flat `text` field; InvalidRecord for odd shapes."""
    blocks = message.get("content")
    if blocks is not None:
        if not isinstance(blocks, list):
            raise InvalidRecord(f"message content must be a list of blocks, got {json_type(blocks)}")
        joined = "\n\n".join(t.strip() for t in text_parts(blocks) if t.strip())
        if joined:
            return joined
    text = message.get("text")
    return "\n\n".join(t.strip() for t in text_parts([text]) if t.strip())
