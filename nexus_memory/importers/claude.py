"""Claude export importer: the `conversations.json` of claude.ai's data export, one event per message.

Each conversation is {uuid, name, created_at, chat_messages: [{uuid, sender, text, content?, created_at}]}
with `sender` "human" or "assistant". Newer exports split a message into `content` blocks (text,
tool_use, tool_result, thinking); we keep the text blocks, and fall back to the flat `text` field.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nexus_memory.events import RawRecord
from nexus_memory.importers.jsonl import assistant_chat_event, dump_raw, read_conversations

PLATFORM = "claude"
# sender -> (sender_id, direction, role): the owner wrote the human turns.
SENDERS = {"human": "user", "assistant": "assistant"}  # export sender -> role


def read(path: Path) -> Iterator[RawRecord]:
    """One RawRecord per human/assistant message; raise ValueError if the file is not a Claude export."""
    return read_conversations(path, "a Claude export", conversation_records)


def conversation_records(conversation: Any, index: int, source: str, numbers: Iterator[int]) -> Iterator[RawRecord]:
    """The messages of one conversation, or a single reject when its shape is wrong."""
    fields = conversation if isinstance(conversation, dict) else {}
    messages = fields.get("chat_messages", [])
    conversation_id = fields.get("uuid")
    if not conversation_id or not isinstance(messages, list):
        yield RawRecord(
            source,
            next(numbers),
            None,
            dump_raw(conversation)[:10_000],
            f"conversation {index} has no uuid or no list of 'chat_messages'",
        )
        return
    title = fields.get("name") if isinstance(fields.get("name"), str) else None
    for message in messages:
        if not isinstance(message, dict):
            yield RawRecord(source, next(numbers), None, dump_raw(message), "message is not a JSON object")
            continue
        event = message_event(message, str(conversation_id), title, fields.get("created_at"))
        if event is not None:
            yield RawRecord(source, next(numbers), event, dump_raw(message))


def message_event(
    message: dict[str, Any], conversation_id: str, title: str | None, conversation_time: Any
) -> dict[str, Any] | None:
    """The generic event for one message, or None when it has no sender we know or no text."""
    sender = message.get("sender")
    if sender not in SENDERS:
        return None
    text = message_text(message)
    if not text:
        return None
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
    """Text blocks of `content` joined, else the flat `text` field."""
    blocks = message.get("content")
    if isinstance(blocks, list):
        texts = [
            block["text"]
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
        joined = "\n\n".join(t.strip() for t in texts if t.strip())
        if joined:
            return joined
    text = message.get("text")
    return text.strip() if isinstance(text, str) else ""
