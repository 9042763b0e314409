"""LoCoMo benchmark importer: every dialogue turn of every session becomes one event.

A LoCoMo file is a list of conversations (or one), each with `sample_id` and a `conversation` dict of
`speaker_a`, `speaker_b`, `session_N` (a list of turns {speaker, dia_id, text, blip_caption?}) and
`session_N_date_time` ("1:56 pm on 8 May, 2023"). Session dates carry no zone; we treat them as UTC
and add the turn's index in seconds, so turns keep their order and never share a timestamp.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from nexus_memory.core.calendar_words import month_number
from nexus_memory.core.textcheck import show
from nexus_memory.events.importers.documents import conversation_reject, identifier, item_record, read_conversations
from nexus_memory.events.ledger import InvalidRecord, RawRecord
from nexus_memory.identity.participant import Participant

PLATFORM = "locomo"
SESSION_KEY = re.compile(r"session_([0-9]{1,6})")
DATE_RE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$", re.IGNORECASE
)


def read(path: Path) -> Iterator[RawRecord]:
    """One RawRecord per LoCoMo turn; raise ValueError if the file is not a LoCoMo JSON document."""
    return read_conversations(path, "LoCoMo data", conversation_records)


def conversation_records(conversation: Any, index: int, source: str, numbers: Iterator[int]) -> Iterator[RawRecord]:
    """The turns of one conversation, or a single reject when its shape is wrong."""
    dialogue = conversation.get("conversation") if isinstance(conversation, dict) else None
    if not isinstance(dialogue, dict):
        yield conversation_reject(source, numbers, conversation, f"conversation {index} has no 'conversation' object")
        return
    try:
        sample_id = identifier(conversation.get("sample_id"), "sample_id") or f"conversation-{index}"
    except InvalidRecord as exc:
        yield conversation_reject(source, numbers, conversation, f"conversation {index}: {exc}")
        return
    speakers = (dialogue.get("speaker_a"), dialogue.get("speaker_b"))
    for session in session_numbers(dialogue):
        turns = dialogue[f"session_{session}"]
        when = dialogue.get(f"session_{session}_date_time")
        start = parse_session_date(when) if isinstance(when, str) else None
        for turn_index, turn in enumerate(turns):
            where = f"{sample_id} session {session} turn {turn_index + 1}"
            build = partial(_turn, turn, turn_index, start, when, sample_id, session, speakers)
            record = item_record(source, numbers, where, turn, build)
            if record is not None:
                yield record


def _turn(
    turn: Any,
    turn_index: int,
    start: datetime | None,
    when: Any,
    sample_id: str,
    session: int,
    speakers: tuple[Any, Any],
) -> dict[str, Any]:
    """The event of one turn; InvalidRecord when its session has no date or it is not an object."""
    if start is None:
        raise InvalidRecord(f"the session has no parseable date ({show(when)})")
    if not isinstance(turn, dict):
        raise InvalidRecord("turn is not a JSON object")
    return turn_event(turn, sample_id, session, speakers, start + timedelta(seconds=turn_index))


def session_numbers(dialogue: dict[str, Any]) -> list[int]:
    """The N of every `session_N` key that holds a list of turns, in numeric order."""
    found = []
    for key, value in dialogue.items():
        match = SESSION_KEY.fullmatch(key)
        if match and isinstance(value, list):
            found.append(int(match.group(1)))
    return sorted(found)


def parse_session_date(text: str) -> datetime | None:
    """UTC datetime of "1:56 pm on 8 May, 2023", or None when it does not look like that."""
    match = DATE_RE.match(text)
    if not match:
        return None
    hour, minute, half, day, month_name, year = match.groups()
    month = month_number(month_name)
    if month is None or not 1 <= int(hour) <= 12:
        return None
    hour_24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    try:
        return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=UTC)
    except ValueError:  # 31 February and friends
        return None


def turn_event(
    turn: dict[str, Any], sample_id: str, session: int, speakers: tuple[Any, Any], as_of: datetime
) -> dict[str, Any]:
    """The generic event for one turn; missing fields are left for `parse_event` to reject."""
    speaker = turn.get("speaker")
    dia_id = identifier(turn.get("dia_id"), "dia_id")
    content = turn.get("text")
    caption = turn.get("blip_caption")
    if isinstance(content, str) and isinstance(caption, str) and caption.strip():
        # The image is part of what was said; its caption is the only trace of it we have.
        content = f"{content} [shares a photo: {caption.strip()}]"
    return {
        "id": f"{sample_id}:{dia_id}" if dia_id else None,
        "platform": PLATFORM,
        "thread_id": sample_id,
        "session_id": f"{sample_id}:session_{session}",
        "sender_id": speaker_handle(sample_id, speaker),
        "sender_name": speaker,
        "peer_id": speaker_handle(sample_id, other_speaker(speaker, speakers)),
        "peer_kind": "dm",
        "direction": "inbound",
        "content": content,
        "as_of": as_of.isoformat(),
        "metadata": {"dia_id": dia_id, "session": session, "conversation": sample_id},
    }


def speaker_handle(sample_id: str, speaker: Any) -> Any:
    """The handle a speaker sends from: scoped to its conversation, since each LoCoMo conversation is its
    own world (two conversations' "John"s are two people, and one handle would merge them). Anything
    but a name is passed through for `parse_event` to judge."""
    return f"{sample_id}/{speaker}" if isinstance(speaker, str) and speaker.strip() else speaker


def participants(conversation: dict[str, Any]) -> list[Participant]:
    """The two speakers of a conversation as the handles they send from: who is in it when its questions
    are asked."""
    sample_id = conversation.get("sample_id")
    dialogue = conversation.get("conversation") or {}
    names = [dialogue.get("speaker_a"), dialogue.get("speaker_b")]
    return [
        Participant(PLATFORM, speaker_handle(sample_id, name), name)
        for name in names
        if isinstance(sample_id, str) and isinstance(name, str) and name.strip()
    ]


def other_speaker(speaker: Any, speakers: tuple[Any, Any]) -> str | None:
    """The speaker a turn is addressed to: the other one of the pair."""
    a, b = speakers
    if speaker == a and isinstance(b, str):
        return b
    if speaker == b and isinstance(a, str):
        return a
    return None
