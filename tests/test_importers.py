"""Importers: each format to RawRecords, bad records to event_rejects, idempotent re-ingest, identities."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.importers import FORMATS, chatgpt, claude, jsonl, locomo, read_records
from nexus_memory.events.ledger import IngestSummary, ingest

SAMPLE = Path(__file__).resolve().parent.parent / "nexus_memory" / "sample_data" / "events.jsonl"
LOCOMO_DEV = Path("/work/shared/data/locomo/locomo_dev.json")


def event(**fields: Any) -> dict[str, Any]:
    """A valid generic event, with `fields` on top."""
    base = {"platform": "imessage", "sender_id": "+15550111", "content": "hi", "as_of": 1741017600}
    return {**base, **fields}


def write_lines(path: Path, lines: list[bytes | str | dict[str, Any]]) -> Path:
    """A JSONL file from dicts (dumped), strings (as written) and bytes (raw, for bad encodings)."""
    chunks = []
    for line in lines:
        if isinstance(line, dict):
            line = json.dumps(line)
        chunks.append(line if isinstance(line, bytes) else line.encode())
    path.write_bytes(b"\n".join(chunks) + b"\n")
    return path


def import_file(stores: Stores, path: Path, format: str = "jsonl") -> IngestSummary:
    return ingest(stores, read_records(path, format))


def rejects(stores: Stores) -> list[tuple[str, int, str]]:
    rows = stores.conn.execute("SELECT source, line, reason FROM event_rejects ORDER BY id").fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


@pytest.fixture
def small_stores(tmp_path: Path) -> Iterator[Stores]:
    """Stores whose content limit is 50 characters, so 'oversized' is cheap to write."""
    settings: Settings = load_settings(data_dir=tmp_path / "small", max_content_chars=50)
    with Stores(settings) as opened:
        yield opened


# --- generic JSONL ---------------------------------------------------------------------------------


def test_jsonl_keeps_good_records_and_rejects_bad_ones_with_line_and_reason(
    tmp_path: Path, small_stores: Stores
) -> None:
    path = write_lines(
        tmp_path / "mixed.jsonl",
        [
            event(id="m1", content="first good one"),  # 1
            "",  # 2 blank: skipped, not counted
            '{"platform": "imessage", "sender_id": ',  # 3 malformed JSON
            "[1, 2, 3]",  # 4 not an object
            {"platform": "imessage", "content": "no sender", "as_of": 1},  # 5 missing sender_id
            event(id="m5", as_of="next tuesday"),  # 6 bad timestamp
            b'{"platform": "imessage", "content": "caf\xe9"}',  # 7 invalid UTF-8 (latin-1 e-acute)
            event(id="m7", content="x" * 51),  # 8 over the 50-character limit
            '{"platform": "imessage", "as_of": NaN}',  # 9 NaN is not JSON
            "   ",  # 10 whitespace only: skipped
            event(id="m9", content="second good one", as_of=1741017660),  # 11
        ],
    )

    summary = import_file(small_stores, path)

    assert (summary.read, summary.ingested, summary.duplicates, summary.rejected) == (9, 2, 0, 7)
    stored = [r[0] for r in small_stores.conn.execute("SELECT content FROM events ORDER BY as_of")]
    assert stored == ["first good one", "second good one"]
    found = rejects(small_stores)
    assert [line for _, line, _ in found] == [3, 4, 5, 6, 7, 8, 9]
    assert {source for source, _, _ in found} == {str(path)}
    reasons = dict((line, reason) for _, line, reason in found)
    assert reasons[3].startswith("malformed JSON")
    assert "not a JSON object" in reasons[4]
    assert "missing required field 'sender_id'" in reasons[5]
    assert "bad timestamp" in reasons[6]
    assert reasons[7].startswith("invalid UTF-8")
    assert "over the limit of 50" in reasons[8]
    assert "NaN" in reasons[9]
    assert summary.rejects[0] == f"{path}:3: {reasons[3]}"
    raw_invalid = small_stores.conn.execute("SELECT raw FROM event_rejects WHERE line = 7").fetchone()[0]
    assert "caf\ufffd" in raw_invalid  # kept, lossily decoded, for repair


def test_jsonl_handles_crlf_and_byte_order_mark(tmp_path: Path, stores: Stores) -> None:
    path = tmp_path / "windows.jsonl"
    lines = [json.dumps(event(id="a", content="one")), json.dumps(event(id="b", content="two"))]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    records = list(jsonl.read(path))
    assert [r.line for r in records] == [1, 2]
    assert all(r.data is not None for r in records)
    assert import_file(stores, path).ingested == 2


def test_missing_file_and_unknown_format_raise_value_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    for format in FORMATS:
        with pytest.raises(ValueError, match=r"nope\.jsonl"):
            list(read_records(missing, format))
    with pytest.raises(ValueError, match="unknown import format 'mbox'"):
        read_records(SAMPLE, "mbox")


@pytest.mark.parametrize("format", ["locomo", "chatgpt", "claude"])
def test_json_formats_reject_a_file_that_is_not_json(tmp_path: Path, format: str) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('[{"sample_id": ', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.json is not valid JSON"):
        read_records(broken, format)
    scalar = tmp_path / "scalar.json"
    scalar.write_text('"hello"', encoding="utf-8")
    with pytest.raises(ValueError, match=r"scalar\.json"):
        read_records(scalar, format)


# --- idempotence ---------------------------------------------------------------------------------


def test_reingest_is_idempotent(tmp_path: Path, stores: Stores) -> None:
    path = write_lines(
        tmp_path / "a.jsonl", [event(id=f"m{i}", content=f"message {i}", as_of=1741017600 + i) for i in range(5)]
    )
    first = import_file(stores, path)
    second = import_file(stores, path)
    assert (first.ingested, first.duplicates) == (5, 0)
    assert (second.read, second.ingested, second.duplicates, second.rejected) == (5, 0, 5, 0)
    assert second.partitions == set()
    assert stores.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 5


def test_records_without_id_deduplicate_by_content_hash(tmp_path: Path, stores: Stores) -> None:
    record = event(content="see you at 7", thread_id="t1", as_of="2025-03-04T19:00:00Z")
    one = write_lines(tmp_path / "one.jsonl", [record, record])
    # The same event from another file, timestamp written another way, keys in another order.
    other = dict(reversed(list({**record, "as_of": 1741114800000}.items())))
    two = write_lines(tmp_path / "two.jsonl", [other])
    first = import_file(stores, one)
    second = import_file(stores, two)
    assert (first.ingested, first.duplicates) == (1, 1)
    assert (second.ingested, second.duplicates) == (0, 1)
    event_id = stores.conn.execute("SELECT id FROM events").fetchone()[0]
    assert event_id.startswith("h:")


# --- delivery-sourced identities -------------------------------------------------------------------


def test_senders_become_delivery_entities_with_contacts(tmp_path: Path, stores: Stores) -> None:
    path = write_lines(
        tmp_path / "people.jsonl",
        [
            event(id="i1", sender_id="+15550111", sender_name="Priya Kapoor", content="hi from imessage"),
            event(id="g1", platform="gmail", sender_id="priya.k@example.com", content="Subject: hi\n\nfrom gmail"),
            event(id="d1", platform="discord", sender_id="priyak#2211", sender_name="Priya K", content="hi discord"),
            event(id="i2", sender_id="+15550100", direction="outbound", content="hi back"),
            event(id="i3", sender_id="+15550111", content="second message", as_of=1741017700),
        ],
    )
    assert import_file(stores, path).ingested == 5

    entities = {
        r["name"]: (r["type"], r["source"], bool(r["is_user"]))
        for r in stores.conn.execute("SELECT name, type, source, is_user FROM entities")
    }
    assert entities == {
        "+15550111": ("phone", "delivery", False),
        "priya.k@example.com": ("email", "delivery", False),
        "priyak#2211": ("discord_handle", "delivery", False),
        "+15550100": ("phone", "delivery", True),
    }
    contacts = {(r[0], r[1]) for r in stores.conn.execute("SELECT platform, handle FROM contacts")}
    assert contacts == {
        ("imessage", "+15550111"),
        ("gmail", "priya.k@example.com"),
        ("discord", "priyak#2211"),
        ("imessage", "+15550100"),
    }
    aliases = {r[0] for r in stores.conn.execute("SELECT alias FROM aliases WHERE alias_type = 'display_name'")}
    assert aliases == {"Priya Kapoor", "Priya K"}


# --- the shipped sample ----------------------------------------------------------------------------


def test_sample_data_ingests_cleanly_and_covers_platforms(stores: Stores) -> None:
    lines = [line for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert 250 <= len(lines) <= 400
    summary = import_file(stores, SAMPLE)
    assert summary.rejected == 0, summary.rejects
    assert (summary.read, summary.ingested) == (len(lines), len(lines))
    platforms = {r[0] for r in stores.conn.execute("SELECT DISTINCT platform FROM events")}
    assert {"imessage", "gmail", "discord", "agent"} <= platforms
    days = stores.conn.execute("SELECT count(DISTINCT day) FROM events").fetchone()[0]
    assert days >= 20
    # One person under three handles, and the owner under one handle per platform.
    handles = {r[0] for r in stores.conn.execute("SELECT handle FROM contacts")}
    assert {"+15550111", "priya.k@example.com", "priyak#2211", "priya.kapoor@example.org"} <= handles
    owners = {r[0] for r in stores.conn.execute("SELECT name FROM entities WHERE is_user")}
    assert {"+15550100", "me@example.com"} <= owners
    text = "\n".join(r[0] for r in stores.conn.execute("SELECT content FROM events"))
    for phrase in (
        "I'm Marcus from the climbing gym",
        "my new email is",
        "because the vendor slipped",
        "we decided to use Postgres",
        "I'll send the QA report by Friday",
        "I prefer window seats",
        "Actually, the dinner is on Thursday, not Wednesday",
    ):
        assert phrase in text
    assert import_file(stores, SAMPLE).duplicates == len(lines)


# --- LoCoMo ----------------------------------------------------------------------------------------


def locomo_conversation() -> dict[str, Any]:
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ada",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ada", "dia_id": "D1:1", "text": "Hi Ben!"},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Look at this.",
                    "img_url": ["http://x/y.jpg"],
                    "blip_caption": "a photo of a sunset over a lake",
                },
                {"speaker": "Ada", "dia_id": "D1:3"},  # no text: rejected by validation
            ],
            "session_2_date_time": "9:05 am on 1 June, 2023",
            "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Back again."}],
            "session_3_date_time": "sometime in June",
            "session_3": [{"speaker": "Ada", "dia_id": "D3:1", "text": "No date here."}],
            "session_4_date_time": "10:00 am on 2 July, 2023",  # a date without a session: ignored
        },
        "qa": [],
    }


def test_locomo_turns_become_ordered_events(tmp_path: Path, stores: Stores) -> None:
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps(locomo_conversation()), encoding="utf-8")  # one conversation, not a list

    records = list(locomo.read(path))
    assert [r.line for r in records] == [1, 2, 3, 4, 5]
    first, photo = records[0].data, records[1].data
    assert first == {
        "id": "conv-x:D1:1",
        "platform": "locomo",
        "thread_id": "conv-x",
        "session_id": "conv-x:session_1",
        "sender_id": "conv-x/Ada",
        "sender_name": "Ada",
        "peer_id": "conv-x/Ben",
        "peer_kind": "dm",
        "direction": "inbound",
        "content": "Hi Ben!",
        "as_of": "2023-05-08T13:56:00+00:00",
        "metadata": {"dia_id": "D1:1", "session": 1, "conversation": "conv-x"},
    }
    assert photo["content"] == "Look at this. [shares a photo: a photo of a sunset over a lake]"
    assert photo["as_of"] == "2023-05-08T13:56:01+00:00"
    assert records[3].data["as_of"] == "2023-06-01T09:05:00+00:00"
    assert records[4].data is None and "no parseable date" in (records[4].error or "")

    summary = import_file(stores, path, "locomo")
    assert (summary.read, summary.ingested, summary.rejected) == (5, 3, 2)
    assert [line for _, line, _ in rejects(stores)] == [3, 5]
    ids = [r[0] for r in stores.conn.execute("SELECT id FROM events ORDER BY as_of")]
    assert ids == ["locomo:conv-x:D1:1", "locomo:conv-x:D1:2", "locomo:conv-x:D2:1"]


def test_locomo_speakers_of_two_conversations_are_two_handles(tmp_path: Path, stores: Stores) -> None:
    """Two conversations' "Ada"s are two people: two delivery entities, never one by their shared name."""
    first, second = locomo_conversation(), locomo_conversation()
    second["sample_id"] = "conv-y"
    path = tmp_path / "two.json"
    path.write_text(json.dumps([first, second]), encoding="utf-8")
    import_file(stores, path, "locomo")
    contacts = stores.conn.execute(
        "SELECT handle, entity_id FROM contacts WHERE handle LIKE '%/Ada' ORDER BY handle"
    ).fetchall()
    assert [handle for handle, _ in contacts] == ["conv-x/Ada", "conv-y/Ada"]
    assert contacts[0][1] != contacts[1][1]


def test_locomo_date_parsing() -> None:
    assert locomo.parse_session_date("12:09 am on 13 September, 2023").isoformat() == "2023-09-13T00:09:00+00:00"
    assert locomo.parse_session_date("12:30 pm on 1 Jan, 2024").isoformat() == "2024-01-01T12:30:00+00:00"
    assert locomo.parse_session_date("1:00 pm on 31 February, 2023") is None
    assert locomo.parse_session_date("yesterday") is None


@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason="LoCoMo dev data not present")
def test_locomo_first_dev_conversation(tmp_path: Path, stores: Stores) -> None:
    conversation = json.loads(LOCOMO_DEV.read_text(encoding="utf-8"))[0]
    path = tmp_path / "conv0.json"
    path.write_text(json.dumps([conversation]), encoding="utf-8")
    dialogue = conversation["conversation"]
    turns = sum(len(v) for k, v in dialogue.items() if locomo.SESSION_KEY.fullmatch(k))

    summary = import_file(stores, path, "locomo")
    assert summary.rejected == 0, summary.rejects
    assert summary.ingested == turns
    sample_id = conversation["sample_id"]
    row = stores.conn.execute("SELECT * FROM events WHERE id = ?", (f"locomo:{sample_id}:D1:1",)).fetchone()
    assert row["thread_id"] == sample_id and row["session_id"] == f"{sample_id}:session_1"
    # Turn order survives: dia_ids sorted by time are in session, then turn, order.
    order = [json.loads(r[0])["dia_id"] for r in stores.conn.execute("SELECT metadata FROM events ORDER BY as_of")]
    expected = [t["dia_id"] for n in locomo.session_numbers(dialogue) for t in dialogue[f"session_{n}"]]
    assert order == expected
    speakers = {r[0] for r in stores.conn.execute("SELECT handle FROM contacts")}
    assert speakers == {f"{sample_id}/{dialogue['speaker_a']}", f"{sample_id}/{dialogue['speaker_b']}"}


# --- ChatGPT ---------------------------------------------------------------------------------------


def gpt_node(
    node_id: str,
    parent: str | None,
    role: str | None,
    text: Any = None,
    *,
    t: float | None = None,
    content_type: str = "text",
    **message: Any,
) -> dict[str, Any]:
    if role is None:
        return {"id": node_id, "message": None, "parent": parent, "children": []}
    parts = text if isinstance(text, list) else [text]
    return {
        "id": node_id,
        "parent": parent,
        "children": [],
        "message": {
            "id": node_id,
            "author": {"role": role},
            "create_time": t,
            "content": {"content_type": content_type, "parts": parts},
            **message,
        },
    }


def chatgpt_export() -> list[Any]:
    nodes = [
        gpt_node("root", None, None),
        gpt_node("sys", "root", "system", "You are ChatGPT.", t=1700000000.0),
        gpt_node("u1", "sys", "user", "Which is faster, bikes or scooters?", t=1700000010.0),
        gpt_node("a1-old", "u1", "assistant", "An answer the user regenerated.", t=1700000011.0),
        gpt_node("a1", "u1", "assistant", "Bikes, on hills.", t=1700000012.0),
        gpt_node(
            "u2",
            "a1",
            "user",
            ["Check this chart", {"content_type": "image_asset_pointer"}],
            t=1700000050.0,
            content_type="multimodal_text",
        ),
        gpt_node("call", "u2", "assistant", "print(1)", t=1700000051.0, content_type="code", recipient="python"),
        gpt_node("tool", "call", "tool", "1", t=1700000052.0),
        gpt_node(
            "hidden",
            "tool",
            "user",
            "custom instructions",
            t=1700000053.0,
            metadata={"is_visually_hidden_from_conversation": True},
        ),
        gpt_node("a2", "hidden", "assistant", "", t=1700000054.0),  # empty: skipped
        gpt_node("a3", "a2", "assistant", "The chart agrees.", t=None),  # no time: conversation's
    ]
    return [
        {
            "title": "Bikes",
            "create_time": 1699999999.0,
            "conversation_id": "c-1",
            "current_node": "a3",
            "mapping": {n["id"]: n for n in nodes},
        },
        {"title": "Broken", "create_time": 1700000000.0},  # no mapping
        {
            "title": "No current node",
            "id": "c-2",
            "create_time": 1700001000.0,
            "mapping": {
                "m2": gpt_node("m2", "m1", "assistant", "second", t=1700001002.0),
                "m1": gpt_node("m1", None, "user", "first", t=1700001001.0),
            },
        },
    ]


def test_chatgpt_follows_the_visible_branch_and_skips_non_messages(tmp_path: Path, stores: Stores) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export()), encoding="utf-8")

    records = list(chatgpt.read(path))
    good = [r.data for r in records if r.data is not None]
    assert [d["id"] for d in good] == ["u1", "a1", "u2", "a3", "m1", "m2"]
    assert [d["content"] for d in good[:4]] == [
        "Which is faster, bikes or scooters?",
        "Bikes, on hills.",
        "Check this chart",
        "The chart agrees.",
    ]
    user, assistant = good[0], good[1]
    assert (user["sender_id"], user["direction"], user["thread_id"], user["session_id"]) == (
        "user",
        "outbound",
        "c-1",
        "c-1",
    )
    assert (assistant["sender_id"], assistant["direction"]) == ("chatgpt", "inbound")
    assert assistant["metadata"] == {"title": "Bikes", "role": "assistant"}
    assert good[3]["as_of"] == 1699999999.0
    assert [r.line for r in records] == list(range(1, 8))

    summary = import_file(stores, path, "chatgpt")
    assert (summary.read, summary.ingested, summary.rejected) == (7, 6, 1)
    assert "no id or no 'mapping'" in rejects(stores)[0][2]
    assert stores.conn.execute("SELECT count(*) FROM events WHERE platform = 'chatgpt'").fetchone()[0] == 6


# --- Claude ----------------------------------------------------------------------------------------


def test_claude_messages_become_events(tmp_path: Path, stores: Stores) -> None:
    export = [
        {
            "uuid": "conv-1",
            "name": "Trip planning",
            "created_at": "2025-03-01T10:00:00Z",
            "chat_messages": [
                {"uuid": "h1", "sender": "human", "text": "Plan a day in Sintra", "created_at": "2025-03-01T10:00:05Z"},
                {
                    "uuid": "a1",
                    "sender": "assistant",
                    "text": "flattened text",
                    "created_at": "2025-03-01T10:00:09Z",
                    "content": [
                        {"type": "thinking", "thinking": "hmm"},
                        {"type": "text", "text": "Start at Pena Palace."},
                        {"type": "tool_use", "name": "search", "input": {}},
                        {"type": "text", "text": "Then Quinta da Regaleira."},
                    ],
                },
                {"uuid": "s1", "sender": "system", "text": "ignored"},
                {"uuid": "e1", "sender": "human", "text": "   ", "created_at": "2025-03-01T10:01:00Z"},
                "not a message",
                {"uuid": "h2", "sender": "human", "text": "thanks", "created_at": "last week"},
            ],
        },
        {"name": "no uuid", "chat_messages": []},
    ]
    path = tmp_path / "claude.json"
    path.write_text(json.dumps(export), encoding="utf-8")

    records = list(claude.read(path))
    assert [r.line for r in records] == [1, 2, 3, 4, 5]
    human, assistant = records[0].data, records[1].data
    assert (human["sender_id"], human["direction"], human["session_id"]) == ("user", "outbound", "conv-1")
    assert human["metadata"] == {"title": "Trip planning", "role": "user"}
    assert (assistant["sender_id"], assistant["direction"]) == ("claude", "inbound")
    assert assistant["content"] == "Start at Pena Palace.\n\nThen Quinta da Regaleira."

    summary = import_file(stores, path, "claude")
    assert (summary.read, summary.ingested, summary.rejected) == (5, 2, 3)
    reasons = [reason for _, _, reason in rejects(stores)]
    assert "not a JSON object" in reasons[0]
    assert "bad timestamp" in reasons[1]
    assert "no uuid" in reasons[2]
