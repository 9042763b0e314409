"""An episode as the model reads it: context events (read only), then new events with refs e1, e2, ...

Both modes of the LLM writer send the same rendering; only the closing instruction differs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib import resources

from nexus_memory.events.ledger import Event
from nexus_memory.identity import store as identity
from nexus_memory.identity import writer_notes
from nexus_memory.llm.client import clip
from nexus_memory.writer.base import EpisodeInput
from nexus_memory.writer.tools import WriterTools

MAX_EVENT_CHARS = 8_000  # one new event's content in the prompt
MAX_CONTEXT_CHARS = 500  # one context event's content in the prompt
TOOLS_CLOSING = "Store the durable facts of the new events with the tools, then call finish."


def load_prompt(name: str) -> str:
    """A prompt shipped as package data (nexus_memory/prompts/NAME.md)."""
    return (resources.files("nexus_memory") / "prompts" / f"{name}.md").read_text(encoding="utf-8")


def load_role_prompt() -> str:
    """The tool loop's role prompt."""
    return load_prompt("writer_role")


def system_prompt(role_prompt: str, tools: WriterTools) -> str:
    """The role prompt, then the writer's notes (disambiguation rules, false positives) when there are any."""
    notes = writer_notes.for_prompt(tools.conn)
    return f"{role_prompt.rstrip()}\n\n{notes}" if notes else role_prompt


def iso(ms: int) -> str:
    """Unix ms as ISO 8601 UTC, the form models read best."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def event_refs(episode: EpisodeInput) -> list[str]:
    return [f"e{i}" for i in range(1, len(episode.events) + 1)]


def sender_entity_id(tools: WriterTools, event: Event) -> str | None:
    """The delivery entity the ledger created for this sender (prefer it over new ones)."""
    return identity.delivered_entity(tools.conn, event.platform, event.sender_id)


def delivery_line(tools: WriterTools, event: Event) -> str:
    """The event's deliveryContext, with `speaker`: the only name facts may give its sender.

    A sender_name that is not the speaker (shaped like another handle, or already another sender's
    name) is shown as unverified, so the model reads it as a claim. `peer_name` is the name a delivered
    peer is known by (who "you" is in an email to the owner's address).
    """
    speaker = identity.speaker_name(tools.conn, event)
    peer = identity.contact_name(tools.conn, event.platform, event.peer_id) if event.peer_id else None
    parts = [
        f"platform={event.platform}",
        f"direction={event.direction}",
        f"sender_id={event.sender_id}",
        f"speaker={speaker}",
    ]
    optional = {
        "sender_name" if event.sender_name == speaker else "unverified_sender_name": event.sender_name,
        "peer_id": event.peer_id,
        "peer_name": peer[1] if peer else None,
        "peer_kind": event.peer_kind,
        "thread_id": event.thread_id,
        "session_id": event.session_id,
    }
    parts += [f"{k}={v}" for k, v in optional.items() if v]
    return " ".join(parts)


def render_episode(tools: WriterTools, episode: EpisodeInput, closing: str = TOOLS_CLOSING) -> str:
    """The user message: context events (read only), the new events with refs, then `closing`."""
    lines = [f"Episode {episode.episode_id or '(ad hoc)'}: {len(episode.events)} new event(s)."]
    if episode.context:
        lines += ["", "CONTEXT EVENTS (earlier in the thread; for understanding only, do not extract from them):"]
        for event in episode.context:
            # Who and when is enough to follow the thread; the full deliveryContext is for new events.
            who = identity.speaker_name(tools.conn, event)
            lines.append(f"- {iso(event.as_of)} {who} ({event.direction}): {clip(event.content, MAX_CONTEXT_CHARS)}")
    lines += ["", "NEW EVENTS (extract from these; cite the ref of the event each fact comes from):"]
    for ref, event in zip(event_refs(episode), episode.events, strict=True):
        entity = sender_entity_id(tools, event)
        lines += [
            "",
            f"[{ref}] id={event.id}",
            f"time: {iso(event.as_of)} (as_of={event.as_of})",
            f"delivery: {delivery_line(tools, event)}" + (f" sender_entity_id={entity}" if entity else ""),
            f"content: {clip(event.content, MAX_EVENT_CHARS)}",
        ]
    lines += ["", closing]
    return "\n".join(lines)
