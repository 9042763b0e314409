"""Bad input of every kind: one bad record loses only itself, good records are never rejected, a
conflicting id is reported, and a file bad as a whole is one line on stderr with a non-zero exit."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexus_memory.cli import main
from nexus_memory.core.stores import Stores
from nexus_memory.events import ledger
from nexus_memory.events.importers import read_records
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.identity import store as identity

DEEP = "[" * 10_000 + "]" * 10_000
GOOD_TIME = 1741017600


def good(n: int, **fields: Any) -> str:
    record = {"id": f"g{n}", "platform": "sms", "sender_id": "+15550111", "content": f"good {n}"}
    return json.dumps({**record, "as_of": GOOD_TIME + n, **fields})


def bad(**fields: Any) -> str:
    """A record that is bad in `fields` only (a unique id, so it is not taken for a duplicate)."""
    record = {"platform": "sms", "sender_id": "+15550111", "content": "bad", "as_of": GOOD_TIME}
    return json.dumps({**record, **fields})


# (line text, a fragment of its reject reason); each is a record no ingest may store, nor crash on.
BAD_LINES: list[tuple[str, str]] = [
    (bad(content="x \ud800 y").replace("\\\\", "\\"), "not valid Unicode"),
    ('{"platform": "sms", "sender_id": "a\\udfff", "content": "c", "as_of": 1741017600}', "sender_id"),
    ('{"platform": "s\\ud800", "sender_id": "a", "content": "c", "as_of": 1741017600}', "platform"),
    ('{"platform": "sms", "sender_id": "a", "sender_name": "\\ud83d", "content": "c", "as_of": 1}', "sender_name"),
    ('{"platform": "sms", "sender_id": "a", "thread_id": "\\udc80", "content": "c", "as_of": 1}', "thread_id"),
    ('{"id": "\\ud800", "platform": "sms", "sender_id": "a", "content": "c", "as_of": 1}', "field 'id'"),
    ('{"platform": "sms", "sender_id": "a", "content": "c", "as_of": 1, "metadata": {"k": "\\ud800"}}', "metadata"),
    ('{"platform": "sms", "sender_id": "a", "content": "c", "as_of": 1, "metadata": {"\\ud800": 1}}', "metadata"),
    ('{"platform": "sms", "sender_id": "a", "content": "c", "as_of": 1, "metadata": ' + DEEP + "}", "nested"),
    ('{"platform": "sms", "sender_id": "a", "content": ' + DEEP + ', "as_of": 1}', "nested"),
    (bad(metadata={"a": json.loads("[" * 40 + "]" * 40)}), "nested more than 32"),
    (bad(content=["a", "list"]), "'content' must be a string"),
    (bad(content=12), "'content' must be a string"),
    (bad(platform={"a": 1}), "'platform' must be a string"),
    (bad(sender_id=True), "'sender_id' must be a string"),
    (bad(as_of=[1]), "bad timestamp"),
    (bad(as_of=1e308), "outside 1970-2100"),
    (bad(as_of="9" * 400), "bad timestamp"),
    ('{"platform": "sms", "sender_id": "a", "content": "c", "as_of": ' + "9" * 5_000 + "}", "malformed JSON"),
    ('{"platform": "sms", "sender_id": "a", "content": "c", "as_of": 1e999}', "bad timestamp"),
    ('{"platform": "sms", "sender_id": "a", "content": "c", "as_of": NaN}', "NaN"),
    ('{"platform": "sms", "sender_id": "a", "content": "c", "as_of": -Infinity}', "Infinity"),
    ('{"platform": "sms", "sender_id": "a", "content": "c", "as_of": 1, "metadata": {"n": 1e999}}', "metadata"),
    (bad(metadata=[1, 2]), "'metadata' must be a JSON object"),
    (bad(metadata={"big": 2**70}), "too large"),
    (bad(direction=5), "'direction' must be one of"),
    (bad(peer_kind="everyone"), "'peer_kind' must be one of"),
    (bad(platform="p" * 1_000_000), "over the limit of 64"),
    (bad(sender_id="s" * 300), "over the limit of 256"),
    (bad(sender_id=10**300), "over the limit of 256"),
    (bad(peer_id="x" * 257), "'peer_id' is 257 characters"),
    (bad(session_id="y" * 1000), "'session_id' is 1000 characters"),
    (bad(sender_name="Ann\u0007"), "control character"),
    (bad(platform="sms\nfake"), "control character"),
    (bad(id="i\x00d"), "control character"),
    (bad(content="z" * 51), "over the limit of 50"),
    (bad(content="   "), "missing required field 'content'"),
    (bad(platform=None), "missing required field 'platform'"),
    ("{}", "missing required field"),
    ("[1, 2]", "not a JSON object"),
    ('"just a string"', "not a JSON object"),
    ('{"platform": "sms", "sender_id": ', "malformed JSON"),
]


def write(path: Path, lines: list[str | bytes], ending: bytes = b"\n") -> Path:
    path.write_bytes(ending.join(line if isinstance(line, bytes) else line.encode() for line in lines) + ending)
    return path


def reject_rows(stores: Stores) -> list[tuple[int, str, str]]:
    return [tuple(r) for r in stores.conn.execute("SELECT line, reason, raw FROM event_rejects ORDER BY line")]


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Stores]:
    from nexus_memory.core.config import load_settings

    with Stores(load_settings(data_dir=tmp_path / "small", max_content_chars=50)) as opened:
        yield opened


def test_every_kind_of_bad_record_loses_only_itself(tmp_path: Path, small: Stores) -> None:
    lines: list[str | bytes] = []
    expected: dict[int, str] = {}  # line -> reason fragment
    for n, (line, reason) in enumerate(BAD_LINES):
        lines.append(good(n))
        lines.append(line)
        expected[len(lines)] = reason
    lines.append(b'{"platform": "sms", "sender_id": "a", "content": "caf\xe9", "as_of": 1}')  # not UTF-8
    expected[len(lines)] = "invalid UTF-8"
    lines.append(good(999))
    path = write(tmp_path / "mixed.jsonl", lines)

    summary = ingest(small, read_records(path, "jsonl"))

    assert summary.ingested == len(BAD_LINES) + 1
    assert summary.rejected == len(expected)
    stored = {r[0] for r in small.conn.execute("SELECT id FROM events")}
    assert stored == {f"sms:g{n}" for n in [*range(len(BAD_LINES)), 999]}
    rows = reject_rows(small)
    assert [line for line, _, _ in rows] == sorted(expected)
    for line, reason, raw in rows:
        assert expected[line] in reason, (line, reason)
        assert len(reason) <= 1_100 and "\n" not in reason
        raw.encode("utf-8")  # stored text is valid UTF-8, whatever the line held
    assert small.conn.execute("SELECT count(*) FROM event_rejects WHERE source = ?", (str(path),)).fetchone()[0] == len(
        expected
    )

    # A rerun goes past the same lines again: no crash, nothing new, no second copy of each reject.
    again = ingest(small, read_records(path, "jsonl"))
    assert (again.ingested, again.duplicates, again.rejected) == (0, len(BAD_LINES) + 1, len(expected))
    assert len(reject_rows(small)) == len(expected)


def test_surrogates_in_a_reject_are_stored_escaped(tmp_path: Path, stores: Stores) -> None:
    records = [RawRecord("feed\udcff.jsonl", 1, {"platform": "sms"}, "raw \ud800 text")]
    summary = ingest(stores, records)
    assert summary.rejected == 1
    source, raw = stores.conn.execute("SELECT source, raw FROM event_rejects").fetchone()
    assert (source, raw) == ("feed\\udcff.jsonl", "raw \\ud800 text")
    assert summary.rejects[0].startswith("feed\\udcff.jsonl:1: missing required field 'sender_id'")


def test_good_records_are_not_rejected(tmp_path: Path, stores: Stores) -> None:
    part_one = write(tmp_path / "one.jsonl", [good(1, content="a real \ufffd replacement character"), good(2)])
    part_two = write(tmp_path / "two.jsonl", [good(3, platform=" SMS|Work ", sender_id=15550111), good(4)])
    joined = tmp_path / "joined.jsonl"  # `cat` of two files that each start with a byte order mark
    joined.write_bytes(b"\xef\xbb\xbf" + part_one.read_bytes() + b"\xef\xbb\xbf" + part_two.read_bytes())
    cr_only = write(tmp_path / "mac.jsonl", [good(5), good(6)], ending=b"\r")
    crlf = write(tmp_path / "dos.jsonl", [good(7), "", good(8)], ending=b"\r\n")

    summaries = [ingest(stores, read_records(p, "jsonl")) for p in (joined, cr_only, crlf)]

    assert [(s.read, s.ingested, s.rejected) for s in summaries] == [(4, 4, 0), (2, 2, 0), (2, 2, 0)]
    row = stores.conn.execute("SELECT content FROM events WHERE id = 'sms:g1'").fetchone()
    assert row[0] == "a real \ufffd replacement character"
    row = stores.conn.execute("SELECT platform, sender_id FROM events WHERE id = 'sms|work:g3'").fetchone()
    assert tuple(row) == ("sms|work", "15550111")
    assert [r.line for r in read_records(crlf, "jsonl")] == [1, 3]


def test_a_long_cr_only_file_streams_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nexus_memory.events.importers import jsonl

    monkeypatch.setattr(jsonl, "CHUNK", 7)  # line breaks, CRLF pairs included, fall across chunk edges
    path = write(tmp_path / "many.jsonl", [good(n) for n in range(30)], ending=b"\r\n")
    assert [r.line for r in read_records(path, "jsonl")] == list(range(1, 31))
    path = write(tmp_path / "many_cr.jsonl", [good(n) for n in range(30)], ending=b"\r")
    assert [r.data["id"] for r in read_records(path, "jsonl")] == [f"g{n}" for n in range(30)]


def test_an_id_reused_with_other_content_is_a_conflict(tmp_path: Path, stores: Stores) -> None:
    first = write(tmp_path / "first.jsonl", [good(1), good(2)])
    same = write(tmp_path / "same.jsonl", [good(1)])
    changed = write(tmp_path / "changed.jsonl", [good(1, content="rewritten history"), good(3)])
    ingest(stores, read_records(first, "jsonl"))

    duplicate = ingest(stores, read_records(same, "jsonl"))
    conflict = ingest(stores, read_records(changed, "jsonl"))

    assert (duplicate.duplicates, duplicate.conflicts, duplicate.rejected) == (1, 0, 0)
    assert (conflict.ingested, conflict.duplicates, conflict.conflicts, conflict.rejected) == (1, 0, 1, 0)
    assert conflict.as_dict()["conflicts"] == 1
    assert stores.conn.execute("SELECT content FROM events WHERE id = 'sms:g1'").fetchone()[0] == "good 1"
    line, reason, raw = reject_rows(stores)[0]
    assert line == 1 and reason.startswith("conflict: event id 'sms:g1'") and "rewritten history" in raw


def test_cli_exit_status_says_duplicate_or_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    original = write(tmp_path / "a.jsonl", [good(1)])
    changed = write(tmp_path / "b.jsonl", [good(1, content="other")])
    assert main(["ingest", str(original)]) == 0
    assert main(["ingest", str(original)]) == 0  # a true duplicate is fine
    capsys.readouterr()
    assert main(["ingest", str(changed)]) == 1
    out = capsys.readouterr().out
    assert "conflicts 1" in out and "conflict: event id 'sms:g1'" in out


def test_a_record_that_fails_while_being_stored_leaves_nothing_behind(
    tmp_path: Path, stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    register = identity.register_delivery

    def fragile(conn: Any, event: ledger.Event) -> None:
        register(conn, event)
        if event.sender_id == "+1fragile":
            raise OverflowError("boom after the event row was written")

    monkeypatch.setattr(identity, "register_delivery", fragile)
    path = write(tmp_path / "f.jsonl", [good(1), good(2, sender_id="+1fragile"), good(3)])
    summary = ingest(stores, read_records(path, "jsonl"), batch_size=2)
    assert (summary.ingested, summary.rejected) == (2, 1)
    assert {r[0] for r in stores.conn.execute("SELECT id FROM events")} == {"sms:g1", "sms:g3"}
    handles = {r[0] for r in stores.conn.execute("SELECT handle FROM contacts")}
    assert "+1fragile" not in handles
    assert "OverflowError" in reject_rows(stores)[0][1]


def test_an_importer_failing_part_way_keeps_what_it_read(stores: Stores) -> None:
    def records() -> Iterator[RawRecord]:
        yield RawRecord("gen", 1, json.loads(good(1)), good(1))
        raise RecursionError("deep inside an importer")

    summary = ingest(stores, records())
    assert (summary.read, summary.ingested, summary.rejected) == (2, 1, 1)
    assert reject_rows(stores)[0][:2] == (2, "reading stopped here: nested too deeply to read")


def test_random_mutations_of_a_line_never_stop_an_ingest(tmp_path: Path, stores: Stores) -> None:
    rng = random.Random(20240509)
    template = good(0, sender_name="Priya", peer_id="+15550100", thread_id="t1", metadata={"k": [1, "v"]})
    junk = ["\\ud800", "\\u0000", "\ufeff", "\x07", "9" * 30, "[", "{", '"', "\\", "NaN", "-", "1e999", "ü", "\r"]
    lines = []
    for n in range(600):
        chars = list(template.replace('"g0"', f'"f{n}"'))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(chars))
            action = rng.random()
            if action < 0.4:
                chars[at] = rng.choice(junk)
            elif action < 0.7:
                chars.insert(at, rng.choice(junk))
            else:
                del chars[at]
        lines.append("".join(chars))
    path = write(tmp_path / "fuzz.jsonl", lines)

    summary = ingest(stores, read_records(path, "jsonl"))

    assert summary.read >= 550  # a mutation may add a line break or blank a line
    assert summary.ingested + summary.duplicates + summary.conflicts + summary.rejected == summary.read
    assert summary.ingested > 0 and summary.rejected > 0
    assert ingest(stores, read_records(path, "jsonl")).ingested == 0


def test_random_values_in_a_chatgpt_export_never_stop_an_ingest(tmp_path: Path, stores: Stores) -> None:
    rng = random.Random(7)
    odd = [None, 123, -1.5, True, "\ud800", [], {}, [123, None], [[["deep"]]], {"x": 1}, "x" * 300, 2**80]
    conversations = []
    for c in range(20):
        mapping = {}
        for m in range(6):
            message = {
                "id": f"c{c}m{m}",
                "author": {"role": "user" if m % 2 else "assistant"},
                "create_time": 1700000000 + 60 * m,
                "content": {"content_type": "text", "parts": [f"message {m} of {c}"]},
            }
            target = rng.choice([message, message["author"], message["content"], message["content"]["parts"]])
            if rng.random() < 0.5:
                if isinstance(target, list):
                    target.append(rng.choice(odd))
                else:
                    target[rng.choice(list(target))] = rng.choice(odd)
            mapping[f"c{c}m{m}"] = {"id": f"c{c}m{m}", "parent": None, "children": [], "message": message}
        conversations.append({"conversation_id": f"c{c}", "title": rng.choice(odd), "mapping": mapping})
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(conversations, default=str).replace('"\\\\ud800"', '"\\ud800"'), encoding="utf-8")

    summary = ingest(stores, read_records(path, "chatgpt"))

    assert summary.ingested + summary.duplicates + summary.conflicts + summary.rejected == summary.read
    assert summary.ingested > 40


# --- the document formats: one bad message among good ones -------------------------------------------


def _dump(document: Any, path: Path) -> Path:
    """Write `document`; the strings DEEP and SURROGATE become 10,000-level nesting and a lone surrogate."""
    text = json.dumps(document).replace('"DEEP"', DEEP).replace("SURROGATE", "\\ud800")
    path.write_text(text, encoding="utf-8")
    return path


def _imported(stores: Stores, path: Path, format: str) -> tuple[set[str], dict[int, str]]:
    summary = ingest(stores, read_records(path, format))
    assert summary.rejected == len(summary.rejects)
    stored = {r[0].split(":", 1)[1] for r in stores.conn.execute("SELECT id FROM events")}
    return stored, {line: reason for line, reason, _ in reject_rows(stores)}


def test_chatgpt_bad_messages_lose_only_themselves(tmp_path: Path, stores: Stores) -> None:
    def node(node_id: str, parent: str | None, content: Any, role: str = "user") -> dict[str, Any]:
        message = {"id": node_id, "author": {"role": role}, "create_time": 1700000000.0, "content": content}
        return {"id": node_id, "parent": parent, "children": [], "message": message}

    text = {"content_type": "text", "parts": ["fine"]}
    nodes = [
        node("ok1", None, text),
        node("deep", "ok1", {"content_type": "text", "parts": ["DEEP"]}),  # rejected: nesting
        node("sur", "deep", {"content_type": "text", "parts": ["SURROGATE"]}),  # rejected: not Unicode
        node("num", "sur", 42),  # rejected: content is a number
        node("nums", "num", {"content_type": "text", "parts": [123, None]}, "assistant"),  # "123"
        node("nested", "nums", {"content_type": "text", "parts": [["a", ["b"]], {"text": "c"}]}),  # "a\nb\nc"
        node("obj", "nested", {"content_type": "text", "parts": [{"weird": 1}]}),  # rejected: no text
        node("parts", "obj", {"content_type": "text", "parts": "not a list"}),  # rejected
        node("ok2", "parts", {"content_type": "text", "parts": ["fine again"]}),
    ]
    mapping = {n["id"]: n for n in nodes}
    export = [{"conversation_id": "c1", "current_node": "ok2", "mapping": mapping}]

    stored, reasons = _imported(stores, _dump(export, tmp_path / "gpt.json"), "chatgpt")

    assert stored == {"ok1", "nums", "nested", "ok2"}
    assert stores.conn.execute("SELECT content FROM events WHERE id = 'chatgpt:nums'").fetchone()[0] == "123"
    assert stores.conn.execute("SELECT content FROM events WHERE id = 'chatgpt:nested'").fetchone()[0] == "a\nb\nc"
    assert sorted(reasons) == [2, 3, 4, 7, 8]
    assert "message 2: holds a value nested more than 100 levels deep" in reasons[2]
    assert "not valid Unicode" in reasons[3]
    assert "content must be an object, got number" in reasons[4]
    assert "neither a type nor text" in reasons[7]
    assert "'parts' must be a list" in reasons[8]


def test_claude_bad_messages_lose_only_themselves(tmp_path: Path, stores: Stores) -> None:
    def msg(uuid: str, **fields: Any) -> dict[str, Any]:
        return {"uuid": uuid, "sender": "human", "created_at": "2025-03-01T10:00:00Z", **fields}

    messages = [
        msg("ok1", text="fine"),
        msg("deep", text="DEEP"),
        msg("sur", text="SURROGATE"),
        msg("num", text=7),  # "7"
        msg("blocks", content=[{"type": "text", "text": 123}, None, ["x"]], text=""),  # "123\n\nx"
        msg("badblocks", content={"type": "text"}),  # rejected: content is not a list
        msg("sender", sender=["human"], text="x"),  # rejected: sender not a string
        msg("obj", text={"what": 1}),  # rejected
        msg("ok2", text="fine again"),
    ]
    export = [{"uuid": "conv", "name": "SURROGATE title", "chat_messages": messages}]

    stored, reasons = _imported(stores, _dump(export, tmp_path / "claude.json"), "claude")

    assert stored == {"ok1", "num", "blocks", "ok2"}
    assert stores.conn.execute("SELECT content FROM events WHERE id = 'claude:blocks'").fetchone()[0] == "123\n\nx"
    assert sorted(reasons) == [2, 3, 6, 7, 8]
    assert "nested" in reasons[2] and "not valid Unicode" in reasons[3]
    assert "must be a list of blocks" in reasons[6] and "sender must be a string" in reasons[7]
    assert "neither a type nor text" in reasons[8]


def test_locomo_bad_turns_lose_only_themselves(tmp_path: Path, stores: Stores) -> None:
    turns = [
        {"speaker": "Ada", "dia_id": "D1:1", "text": "fine"},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "DEEP"},
        {"speaker": "Ada", "dia_id": "D1:3", "text": "SURROGATE"},
        {"speaker": ["Ada"], "dia_id": "D1:4", "text": "x"},
        {"speaker": "Ben", "dia_id": {"no": 1}, "text": "x"},
        {"speaker": "Ada", "dia_id": "D1:6", "text": 5},
        {"speaker": "Ben", "dia_id": "D1:7", "text": "fine again", "extra": "DEEP"},
    ]
    document = {
        "sample_id": "s",
        "conversation": {"speaker_a": "Ada", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023"},
    }
    document["conversation"]["session_1"] = turns
    document["conversation"]["session_" + "9" * 5000] = turns  # no session number: ignored, not a crash

    stored, reasons = _imported(stores, _dump([document, "not a conversation"], tmp_path / "l.json"), "locomo")

    assert stored == {"s:D1:1"}
    assert sorted(reasons) == [2, 3, 4, 5, 6, 7, 8]
    assert "turn 2: holds a value nested" in reasons[2]
    assert "not valid Unicode" in reasons[3]
    assert "'sender_id' must be a string" in reasons[4]
    assert "dia_id must be a string" in reasons[5]
    assert "'content' must be a string" in reasons[6]
    assert "turn 7: holds a value nested" in reasons[7]  # deep even outside the fields we read
    assert "conversation 2 has no 'conversation' object" in reasons[8]


# --- a file bad as a whole ------------------------------------------------------------------------------


WHOLE_FILE_ERRORS: list[tuple[str, bytes | None, list[str], str]] = [
    ("empty.jsonl", b"", [], "is empty"),
    ("blank.jsonl", b"\n  \r\n\xef\xbb\xbf\n", [], "is empty"),
    ("empty.json", b"", [], "is empty"),
    ("utf16.jsonl", '{"platform": "x"}\n'.encode("utf-16"), [], "UTF-16"),
    ("truncated.json", b'[{"conversation_id": "c", "mapping": {', [], "not valid JSON"),
    ("truncated2.json", b'[{"uuid": "c", "chat_messages": [' + b"[" * 5000, ["--format", "claude"], "not valid JSON"),
    ("latin1.json", '[{"uuid": "café", "chat_messages": []}]'.encode("latin-1"), [], "not valid UTF-8"),
    ("shape.json", b'"chat_messages"', ["--format", "claude"], "expected a list of conversations"),
    ("number.json", b"42", ["--format", "locomo"], "expected a list of conversations"),
    ("none.json", b"[]", ["--format", "chatgpt"], "holds no conversations"),
    ("unknown.json", b'{"hello": "world"}', [], "cannot tell the format"),
    ("notes.txt", b"plain text", [], "cannot tell the format"),
    ("missing.jsonl", None, [], "does not exist"),
    ("folder.json", b"dir", [], "is not a file"),
]


@pytest.mark.parametrize(("name", "body", "flags", "reason"), WHOLE_FILE_ERRORS, ids=[c[0] for c in WHOLE_FILE_ERRORS])
def test_a_file_bad_as_a_whole_is_one_line_and_a_non_zero_exit(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    body: bytes | None,
    flags: list[str],
    reason: str,
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    path = tmp_path / name
    if body == b"dir":
        path.mkdir()
    elif body is not None:
        path.write_bytes(body)

    status = main(["ingest", str(path), *flags])

    out, err = capsys.readouterr()
    assert status != 0
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert name in lines[0] and reason in lines[0] and lines[0].startswith("error: ")


def test_cli_ingest_with_a_bad_file_name_in_a_subprocess(tmp_path: Path) -> None:
    import os
    import subprocess

    name = os.fsdecode(b"bad\xffname\nx.jsonl")  # not UTF-8, with a line break
    path = tmp_path / name
    path.write_bytes(b"")
    env = {**os.environ, "NEXUS_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "-m", "nexus_memory.cli", "ingest", os.fsencode(path)], capture_output=True, env=env
    )
    assert done.returncode == 2
    assert done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr
    assert b"is empty" in done.stderr and b"\\n" in done.stderr
