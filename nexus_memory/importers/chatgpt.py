"""ChatGPT export importer: the `conversations.json` of "Export data", one event per visible message.

Each conversation holds a `mapping` of nodes {id, message, parent, children}; edits and regenerations make
it a tree. We import the branch the user last saw (from `current_node` back to the root), and fall back to
every node ordered by time when there is no usable `current_node`. System prompts, tool calls and tool
output, hidden messages and messages without text are not conversation and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nexus_memory.events import RawRecord
from nexus_memory.importers.jsonl import assistant_chat_event, dump_raw, read_conversations

PLATFORM = "chatgpt"
SENDERS = frozenset({"user", "assistant"})  # the roles that are conversation, not system or tool
TEXT_CONTENT_TYPES = ("text", "multimodal_text")


def read(path: Path) -> Iterator[RawRecord]:
    """One RawRecord per user/assistant message; raise ValueError if the file is not a ChatGPT export."""
    return read_conversations(path, "a ChatGPT export", conversation_records)


def conversation_records(conversation: Any, index: int, source: str, numbers: Iterator[int]) -> Iterator[RawRecord]:
    """The visible messages of one conversation, or a single reject when its shape is wrong."""
    fields = conversation if isinstance(conversation, dict) else {}
    mapping = fields.get("mapping")
    conversation_id = fields.get("conversation_id") or fields.get("id")
    if not isinstance(mapping, dict) or not conversation_id:
        yield RawRecord(
            source,
            next(numbers),
            None,
            dump_raw(conversation)[:10_000],
            f"conversation {index} has no id or no 'mapping' of messages",
        )
        return
    title = fields.get("title") if isinstance(fields.get("title"), str) else None
    for node in ordered_nodes(mapping, fields.get("current_node")):
        message = node.get("message")
        if not isinstance(message, dict):
            continue  # the synthetic root node has no message
        event = message_event(message, str(conversation_id), title, fields.get("create_time"))
        if event is not None:
            yield RawRecord(source, next(numbers), event, dump_raw(message))


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
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def message_event(
    message: dict[str, Any], conversation_id: str, title: str | None, conversation_time: Any
) -> dict[str, Any] | None:
    """The generic event for one message, or None when it is not a visible user/assistant message."""
    author = message.get("author") if isinstance(message.get("author"), dict) else {}
    role = author.get("role")
    if role not in SENDERS or _is_hidden(message):
        return None
    text = message_text(message.get("content"))
    if not text:
        return None
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
    """The text parts of a message's content joined; images and other assets are left out."""
    if not isinstance(content, dict) or content.get("content_type") not in TEXT_CONTENT_TYPES:
        return ""
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ""
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(t for t in texts if t.strip()).strip()
