"""Text nobody can see: an event or a tool call whose text is only zero-width, format or control
characters says so in one reason and stores nothing, like an empty one; an invisible optional field is
as absent as a blank one and costs its event nothing; any text that shows something (emoji, RTL,
a Persian zero-width non-joiner) is stored as given. Complements tests/test_ingest_bad_input.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nexus_memory.agents.tools import call_tool
from nexus_memory.cli import main
from nexus_memory.core.stores import Stores
from nexus_memory.events.ledger import RawRecord, ingest

# Only format characters (zero-width, BOM, bidi, soft hyphen); then control characters, which an identifier
# may not hold at all (its reject says so).
INVISIBLE_FORMAT = ["\u200b", "\u200b\u200b\ufeff", "\u202e", "\u2060\u00ad", " \u200b "]
INVISIBLE = [*INVISIBLE_FORMAT, "\x00", "\x00 \x01"]
SHOWN = ["\U0001f44d", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u05e9\u05dc\u05d5\u05dd", "Mohammad\u200cReza"]


def event(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"e{n}",
        "platform": "sms",
        "sender_id": "+15550111",
        "content": f"hello {n}",
        "as_of": 1741017600,
        **fields,
    }


def record(stores: Stores, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = call_tool(stores, "record_events", {"events": events})
    assert "error" not in result, result
    return list(result["events"])


@pytest.mark.parametrize("text", INVISIBLE)
def test_an_event_with_nothing_visible_is_refused_alone(stores: Stores, text: str) -> None:
    outcomes = record(stores, [event(1), event(2, content=text), event(3, sender_id=text), event(4)])
    assert [o["status"] for o in outcomes] == ["stored", "rejected", "rejected", "stored"]
    assert outcomes[1]["reason"] in ("field 'content' has no visible character", "missing required field 'content'")
    assert outcomes[2]["reason"].startswith("field 'sender_id' "), outcomes[2]
    assert stores.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 2
    assert stores.conn.execute("SELECT count(*) FROM event_rejects").fetchone()[0] == 2


@pytest.mark.parametrize("text", INVISIBLE_FORMAT)
def test_an_invisible_optional_field_is_absent_and_the_event_is_kept(stores: Stores, text: str) -> None:
    (outcome,) = record(stores, [event(1, sender_name=text, thread_id=text)])
    assert outcome["status"] == "stored", outcome
    row = stores.conn.execute("SELECT sender_name, thread_id FROM events").fetchone()
    assert (row[0], row[1]) == (None, None)


@pytest.mark.parametrize("text", SHOWN)
def test_text_that_shows_something_is_stored_as_given(stores: Stores, text: str) -> None:
    (outcome,) = record(stores, [event(1, content=text, sender_name=text)])
    assert outcome["status"] == "stored", outcome
    assert tuple(stores.conn.execute("SELECT content, sender_name FROM events").fetchone()) == (text, text)


@pytest.mark.parametrize("text", INVISIBLE)
def test_the_ingest_of_a_file_counts_an_invisible_line_as_rejected(stores: Stores, text: str) -> None:
    lines = [event(1), event(2, content=text), event(3)]
    summary = ingest(stores, [RawRecord("f.jsonl", i, r, json.dumps(r)) for i, r in enumerate(lines, 1)])
    assert (summary.ingested, summary.rejected) == (2, 1)


@pytest.mark.parametrize("text", INVISIBLE)
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("remember_fact", lambda t: {"text": t}),
        ("remember_fact", lambda t: {"text": "Dana likes green tea", "entities": [t]}),
        ("get_entity_info", lambda t: {"entity": t}),
        ("create_mental_model", lambda t: {"name": t}),
    ],
)
def test_a_tool_call_with_invisible_text_is_refused(stores: Stores, text: str, tool: str, arguments: Any) -> None:
    result = call_tool(stores, tool, arguments(text))
    assert "must not be empty" in result.get("error", ""), result
    assert stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 0
    assert stores.conn.execute("SELECT count(*) FROM entities").fetchone()[0] == 0


def test_a_json_array_of_events_says_how_to_make_it_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    path = tmp_path / "events.json"
    path.write_text(json.dumps([event(1), event(2)], indent=2))
    assert main(["ingest", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "events.json holds a JSON array of events" in err and "jq -c '.[]' events.json > events.jsonl" in err


@pytest.mark.parametrize(
    ("as_of", "day"),
    [("Mon, 03 Mar 2025 10:00:00 +0000", "2025-03-03"), ("Mon, 03 Mar 2025 23:30:00 -0500", "2025-03-04")],
)
def test_an_email_date_header_is_a_timestamp(stores: Stores, as_of: str, day: str) -> None:
    (outcome,) = record(stores, [event(1, platform="gmail", as_of=as_of)])
    assert outcome["status"] == "stored", outcome
    assert stores.conn.execute("SELECT day FROM events").fetchone()[0] == day


@pytest.mark.parametrize("as_of", ["next tuesday", "Mon, 32 Mar 2025 10:00:00 +0000", "03/03/2025"])
def test_a_bad_timestamp_says_what_is_accepted(stores: Stores, as_of: str) -> None:
    (outcome,) = record(stores, [event(1, as_of=as_of)])
    assert outcome["status"] == "rejected"
    assert outcome["reason"].startswith(f"bad timestamp '{as_of}' (expected unix seconds or milliseconds, ISO 8601")


def test_export_messages_with_words_but_no_known_speaker_are_rejected_not_dropped(
    tmp_path: Path, stores: Stores
) -> None:
    from nexus_memory.events.ingest import ingest_file

    claude = [
        {
            "uuid": "c1",
            "created_at": "2025-03-03T10:00:00Z",
            "chat_messages": [
                {"uuid": "m1", "sender": "human", "text": "I am allergic to peanuts."},
                {"uuid": "m2", "text": "Words with no sender at all."},
                {"uuid": "m3", "sender": "robot", "text": "Words from a sender no export writes."},
                {"uuid": "m4", "sender": "system", "text": "A system prompt is skipped."},
                {"uuid": "m5", "sender": "robot", "text": "  "},  # nothing said: nothing to keep
            ],
        }
    ]
    node = {"id": "n1", "parent": None, "children": []}
    chatgpt = [
        {
            "id": "g1",
            "create_time": 1741017600,
            "mapping": {
                "n1": {**node, "message": {"author": {"role": "user"}, "content": {"parts": ["I moved to Porto."]}}},
                "n2": {**node, "id": "n2", "message": {"author": {}, "content": {"parts": ["No role."]}}},
                "n3": {**node, "id": "n3", "message": {"author": {"role": "critic"}, "content": {"parts": ["Hm."]}}},
                "n4": {**node, "id": "n4", "message": {"author": {"role": "tool"}, "content": {"parts": ["{}"]}}},
            },
        }
    ]
    (tmp_path / "claude.json").write_text(json.dumps(claude))
    (tmp_path / "chatgpt.json").write_text(json.dumps(chatgpt))

    for name, fmt in (("claude.json", "claude"), ("chatgpt.json", "chatgpt")):
        summary = ingest_file(stores, tmp_path / name, fmt)
        assert (summary.ingested, summary.rejected) == (1, 2), (name, summary.as_dict())
    reasons = [r[0] for r in stores.conn.execute("SELECT reason FROM event_rejects ORDER BY rowid")]
    assert reasons == [
        "conversation 1 message 2: message has text but its sender is None, not 'human' or 'assistant'",
        "conversation 1 message 3: message has text but its sender is 'robot', not 'human' or 'assistant'",
        "conversation 1 message 2: message has text but its author role is None, not 'user' or 'assistant'",
        "conversation 1 message 3: message has text but its author role is 'critic', not 'user' or 'assistant'",
    ]
