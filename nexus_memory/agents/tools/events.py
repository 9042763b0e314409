"""The agent tool that hands memory the conversation as it happens: record_events.

Each event goes through the ledger's own ingest (events/ledger.py: `parse_event`, `append_event`), so it is
validated and stored exactly as a line of `nexus-memory ingest` is: a bad event is refused alone with its
reason (and kept in `event_rejects`), the good ones are stored, and an event already stored (same id and
content, or the same content without an id) is a duplicate, so a client may retry a call. Stored events
are found by recall and get_context at once (recall/fresh.py); their facts, vectors and observations
follow through the pipeline, which the new-events sensor launches for the partitions they touched.
"""

from __future__ import annotations

import json
from typing import Any

from nexus_memory.agents.tools.common import CallContext
from nexus_memory.core.textcheck import json_type
from nexus_memory.core.tooling import Tool, ToolError, object_schema
from nexus_memory.events.ledger import IngestSummary, RawRecord, RecordOutcome, ingest

MAX_EVENTS = 1_000  # events in one call
SOURCE = "tool:record_events"  # the ledger's `source` of what this tool stores, and of its rejects

# The README's event format, for the model writing the call. Only described, not typed: the ledger checks
# each event, so one bad event is refused with its reason while the others are stored.
_EVENT_FIELDS = {
    "id": "Your id for the message; a retry with the same id and content is a duplicate, never a second event.",
    "platform": "Required. Where it was said: 'agent', 'imessage', 'slack', ...",
    "sender_id": "Required. Who said it, as the platform names them: 'user', '+15550111', 'priya@example.com'.",
    "sender_name": "Their display name, when known.",
    "content": "Required. What was said.",
    "as_of": "Required. When: unix seconds, unix milliseconds or ISO 8601 (no zone = UTC).",
    "thread_id": "The conversation thread.",
    "session_id": "The agent or chat session.",
    "direction": "'inbound' (default; said to the owner), 'outbound' (the owner said it) or 'internal'.",
    "peer_id": "Who or where it went: a handle, a group id, 'server/channel'.",
    "peer_kind": "'dm', 'group' or 'channel'.",
    "metadata": "A JSON object of extras.",
}


def _record_events(call: CallContext, events: list[Any]) -> dict[str, Any]:
    if not events:
        raise ToolError("events is empty: give at least one event")
    records = [
        RawRecord(SOURCE, i + 1, event, _raw(event)) if isinstance(event, dict) else _not_an_object(i, event)
        for i, event in enumerate(events)
    ]
    outcomes: list[RecordOutcome] = []

    def keep(summary: IngestSummary) -> None:
        assert summary.last is not None
        outcomes.append(summary.last)

    summary = ingest(call.stores, records, on_record=keep)
    return {
        "stored": summary.ingested,
        "duplicates": summary.duplicates,
        "conflicts": summary.conflicts,
        "rejected": summary.rejected,
        "events": [_outcome(o) for o in outcomes],
        "partitions": summary.as_dict()["partitions"],
    }


def _raw(event: Any) -> str:
    """The event as JSON, kept with a reject for repair (what a rejected JSONL line keeps)."""
    try:
        return json.dumps(event, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return repr(event)


def _not_an_object(index: int, event: Any) -> RawRecord:
    """A record the ledger refuses with parse_event's own words (its `data` is always an object)."""
    return RawRecord(SOURCE, index + 1, None, _raw(event), f"record must be a JSON object, got {json_type(event)}")


def _outcome(outcome: RecordOutcome) -> dict[str, Any]:
    """One event's line of the answer: its place in the call, what became of it, its id, the reason."""
    out: dict[str, Any] = {"index": outcome.line - 1, "status": outcome.status}
    if outcome.event_id is not None:
        out["id"] = outcome.event_id
    if outcome.reason is not None:
        out["reason"] = outcome.reason
    return out


RECORD_EVENTS = Tool(
    "record_events",
    "Record what is being said, as it happens: one or more messages of the conversation (yours and the "
    "user's), so memory holds them at once. They are recalled within seconds; facts follow. Each event is "
    "checked alone: the answer says which were stored, which were duplicates (already recorded) and which "
    "were rejected, with the reason.",
    object_schema(
        {
            "events": {
                "type": "array",
                "maxItems": MAX_EVENTS,
                "items": {
                    "description": "One message: platform, sender_id, content and as_of are required.",
                    "properties": {name: {"description": text} for name, text in _EVENT_FIELDS.items()},
                },
                "description": f"The messages, oldest first (at most {MAX_EVENTS}).",
            }
        },
        ["events"],
    ),
    _record_events,
)

TOOLS = (RECORD_EVENTS,)
REFUSALS: tuple[type[Exception], ...] = ()
