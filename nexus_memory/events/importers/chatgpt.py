"""ChatGPT export importer: the `conversations.json` of "Export data", one event per visible message.

Each conversation holds a `mapping` of nodes {id, message, parent, children}; edits and regenerations make
it a tree. We import the branch the user last saw (from `current_node` back to the root), and fall back to
every node ordered by time when there is no usable `current_node`. System prompts, tool calls and tool
output, hidden messages and messages without text are not conversation and are skipped.
"""

from __future__ import annotations

import math
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

PLATFORM = "chatgpt"
SENDERS = frozenset({"user", "assistant"})  # the roles that are conversation
NOT_CONVERSATION = frozenset({"system", "tool"})  # the roles skipped: system prompts and tool output
TEXT_CONTENT_TYPES = ("text", "multimodal_text")


def read(path: Path) -> Iterator[RawRecord]:
    """One RawRecord per user/assistant message; raise ValueError if the file is not a ChatGPT export."""
    return read_conversations(path, "a ChatGPT export", conversation_records)


def conversation_records(conversation: Any, index: int, source: str, numbers: Iterator[int]) -> Iterator[RawRecord]:
    """The visible messages of one conversation, or a single reject when its shape is wrong."""
    fields = conversation if isinstance(conversation, dict) else {}
    mapping = fields.get("mapping")
    try:
        conversation_id = identifier(fields.get("conversation_id") or fields.get("id"), "conversation id")
    except InvalidRecord as exc:
        yield conversation_reject(source, numbers, conversation, f"conversation {index}: {exc}")
        return
    if not isinstance(mapping, dict) or not conversation_id:
        reason = f"conversation {index} has no id or no 'mapping' of messages"
        yield conversation_reject(source, numbers, conversation, reason)
        return
    title = label(fields.get("title"))
    for position, node in enumerate(ordered_nodes(mapping, fields.get("current_node")), start=1):
        message = node.get("message")
        if message is None:
            continue  # the synthetic root node has no message
        where = f"conversation {index} message {position}"
        build = partial(_message_event, message, conversation_id, title, fields.get("create_time"))
        record = item_record(source, numbers, where, message, build)
        if record is not None:
            yield record


def ordered_nodes(mapping: dict[str, Any], current_node: Any) -> list[dict[str, Any]]:
    """Nodes of the branch ending at current_node, root first; else all nodes by create_time."""
    nodes = {key: node for key, node in mapping.items() if isinstance(node, dict)}
    if isinstance(current_node, str) and current_node in nodes:
        chain: list[dict[str, Any]] = []
        seen: set[str] = set()
        key: Any = current_node
        while isinstance(key, str) and key in nodes and key not in seen:  # `seen` guards a corrupt cycle
            seen.add(key)
            chain.append(nodes[key])
            key = nodes[key].get("parent")
        return chain[::-1]
    return sorted(nodes.values(), key=_node_time)


def _node_time(node: dict[str, Any]) -> float:
    message = node.get("message")
    value = message.get("create_time") if isinstance(message, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(value) if math.isfinite(value) else 0.0
        except OverflowError:  # an int too large for a float
            return 0.0
    return 0.0


def _message_event(
    message: Any, conversation_id: str, title: str | None, conversation_time: Any
) -> dict[str, Any] | None:
    if not isinstance(message, dict):
        raise InvalidRecord(f"message is not a JSON object (got {json_type(message)})")
    return message_event(message, conversation_id, title, conversation_time)


def message_event(
    message: dict[str, Any], conversation_id: str, title: str | None, conversation_time: Any
) -> dict[str, Any] | None:
    """The generic event for one message, None when it is not a visible user/assistant message with
    text; InvalidRecord when its content has a shape no export writes."""
    author = message.get("author") or {}
    if not isinstance(author, dict):
        raise InvalidRecord(f"message author must be an object, got {json_type(author)}")
    role = author.get("role")
    if role is not None and not isinstance(role, str):
        raise InvalidRecord(f"author role must be a string, got {json_type(role)}")
    if role in NOT_CONVERSATION or _is_hidden(message):
        return None
    text = message_text(message.get("content"))
    if not text:
        return None
    if role not in SENDERS:  # words without a known speaker: refused with the reason, never dropped in silence
        raise InvalidRecord(f"message has text but its author role is {show(role)}, not 'user' or 'assistant'")
    # Some messages carry no time of their own; the conversation's keeps them in the right day.
    return assistant_chat_event(
        event_id=message.get("id"),
        platform=PLATFORM,
        assistant="ChatGPT",
        conversation_id=conversation_id,
        user_side=role == "user",
        text=text,
        as_of=message.get("create_time") or conversation_time,
        title=title,
        role=role,
    )


def _is_hidden(message: dict[str, Any]) -> bool:
    """Tool calls (addressed to a tool, not to the user) and messages the UI hides."""
    metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    if metadata.get("is_visually_hidden_from_conversation"):
        return True
    recipient = message.get("recipient")
    return recipient not in (None, "all")


def message_text(content: Any) -> str:
    """The text parts of a message's content joined; "" for content that is not text (code, tool output,
    images only); InvalidRecord for content of a shape no export writes (a number, parts not a list)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, dict):
        raise InvalidRecord(f"message content must be an object, got {json_type(content)}")
    content_type = content.get("content_type")
    if content_type is not None and not isinstance(content_type, str):
        raise InvalidRecord(f"message content_type must be a string, got {json_type(content_type)}")
    if content_type is not None and content_type not in TEXT_CONTENT_TYPES:
        return ""  # code, execution output, browsing results: not conversation
    parts = content.get("parts", [content["text"]] if "text" in content else [])
    if not isinstance(parts, list):
        raise InvalidRecord(f"message content 'parts' must be a list, got {json_type(parts)}")
    return "\n".join(t for t in text_parts(parts) if t.strip()).strip()
