"""Live memory: an assistant records its conversation as it happens (record_events over the registry, MCP and
the HTTP API; `ingest -` from a shell hook) and recalls it at once, before any fact exists; facts follow."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from built_store import built_copy
from mcp import Client, StdioServerParameters

from nexus_memory.agents.http_api import openapi
from nexus_memory.agents.tools import REGISTRY, TOOLS, call_tool
from nexus_memory.agents.tools.events import SOURCE
from nexus_memory.cli import main
from nexus_memory.core.config import Settings
from nexus_memory.core.ids import now_ms
from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.recall import recall

README = Path(__file__).resolve().parent.parent / "README.md"
CLI = [sys.executable, "-m", "nexus_memory.cli"]
SAID = "Marta's new flat in Lisbon has a tiny balcony facing the river"


def event(key: str, content: str = SAID, **fields: Any) -> dict[str, Any]:
    return {"id": key, "platform": "chat", "sender_id": "marta", "content": content, "as_of": now_ms(), **fields}


@pytest.fixture
def built(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Settings:
    return built_copy(tmp_path_factory, tmp_path)


def _env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NEXUS_API_TOKEN"}
    return {**env, "NEXUS_DATA_DIR": str(settings.data_dir), "HF_HUB_OFFLINE": "1", **extra}


# --- record_events: the ledger's own checks, one answer per event ---------------------------------


def test_record_events_checks_each_event_as_ingest_does(stores: Stores) -> None:
    said = event("m1")
    events: list[Any] = [
        said,
        event("m2", content="   "),
        "not an event",
        event("m3", as_of="yesterday-ish"),
        said,  # the same again: a duplicate, as a retried call would send it
        {**said, "content": "something else"},  # the id taken by other content: a conflict
    ]
    answer = call_tool(stores, "record_events", {"events": events})
    assert (answer["stored"], answer["duplicates"], answer["conflicts"], answer["rejected"]) == (1, 1, 1, 3)
    by_index = {e["index"]: e for e in answer["events"]}
    assert by_index[0] == {"index": 0, "status": "stored", "id": "chat:m1"}
    assert by_index[1]["status"] == "rejected" and "content" in by_index[1]["reason"]
    assert by_index[2]["reason"] == "record must be a JSON object, got string"
    assert by_index[3]["status"] == "rejected" and "timestamp" in by_index[3]["reason"]
    assert by_index[4] == {"index": 4, "status": "duplicate", "id": "chat:m1"}
    assert by_index[5]["status"] == "conflict" and by_index[5]["id"] == "chat:m1"
    assert answer["partitions"] and answer["partitions"][0].endswith("|chat")
    # Kept for repair like an ingest's rejects, under the tool's name and the event's number.
    rejects = stores.conn.execute("SELECT source, line FROM event_rejects ORDER BY line").fetchall()
    assert [tuple(r) for r in rejects] == [(SOURCE, 2), (SOURCE, 3), (SOURCE, 4), (SOURCE, 6)]
    again = call_tool(stores, "record_events", {"events": [said]})
    assert (again["stored"], again["duplicates"]) == (0, 1)  # idempotent by id
    assert stores.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 1


def test_record_events_refuses_a_call_it_cannot_read(stores: Stores) -> None:
    assert "at least one" in call_tool(stores, "record_events", {"events": []})["error"]
    assert "events" in call_tool(stores, "record_events", {})["error"]
    assert "1000" in call_tool(stores, "record_events", {"events": [event("x")] * 1001})["error"]
    assert stores.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0


def test_ingest_reads_jsonl_from_standard_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))

    def ingest(text: str, *flags: str) -> int:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        return main(["ingest", "-", *flags])

    turn = "\n".join(json.dumps(event(f"t{i}", content=f"turn {i} about the Lisbon flat")) for i in range(2))
    assert ingest(turn + "\n") == 0
    assert "read 2, ingested 2, duplicates 0" in capsys.readouterr().out
    assert ingest(turn) == 0  # the same turn again: duplicates, still fine
    assert "ingested 0, duplicates 2" in capsys.readouterr().out
    assert ingest(turn + '\n{"platform": "chat"\n') == 1  # one bad line: rejected, named by line, exit 1
    assert "rejected <stdin>:3: malformed JSON" in capsys.readouterr().out
    assert ingest("") == 2  # nothing at all: one line, exit 2, as for an empty file
    assert capsys.readouterr().err.strip() == "error: <stdin> is empty"
    assert ingest(turn, "--format", "chatgpt") == 2
    assert "JSONL" in capsys.readouterr().err


# --- fresh: recalled before any fact exists, then through its facts -------------------------------


def test_a_recorded_event_is_recalled_at_once_and_then_through_its_facts(built: Settings) -> None:
    from nexus_memory.embeddings.model import get_embedder
    from nexus_memory.events.partitions import split_partition_key
    from nexus_memory.pipeline.layers import run_layers
    from nexus_memory.writer.offline_writer import OfflineWriter

    with Stores(built) as stores:
        unrelated = {"query": "When is the Atlas launch now?"}
        before = call_tool(stores, "recall", unrelated)["results"]
        recorded = call_tool(stores, "record_events", {"events": [event("balcony", session_id="s-1")]})
        event_id = recorded["events"][0]["id"]
        started = time.perf_counter()
        found = call_tool(stores, "recall", {"query": "Marta's flat in Lisbon, balcony facing the river"})["results"]
        block = call_tool(stores, "get_context", {"message": "What is Marta's flat in Lisbon like?"})["context"]
        assert time.perf_counter() - started < 2.0
        assert found[0]["type"] == "event" and found[0]["id"] == event_id and found[0]["text"] == SAID
        assert found[0]["source_event_ids"] == [event_id] and found[0]["platform"] == "chat"
        assert SAID in block and "no facts of it yet" in block
        # Nothing else moved: an unprocessed event that does not match leaves other results as they were.
        assert [r["id"] for r in call_tool(stores, "recall", unrelated)["results"]] == [r["id"] for r in before]
        # Its own session already holds it: the context block of that session does not repeat it.
        own = call_tool(stores, "get_context", {"message": "What is Marta's flat in Lisbon like?"}, session_id="s-1")
        assert SAID not in own["context"]
        assert call_tool(stores, "recall", {"query": SAID, "scope": ["facts"]})["results"][0]["type"] == "fact"
        # The pipeline's run for the touched partition writes its facts; recall then answers with them.
        day, platform = split_partition_key(recorded["partitions"][0])
        run_layers(stores, platform, [day], writer=OfflineWriter(), embedder=get_embedder())
        after = call_tool(stores, "recall", {"query": "Marta's flat in Lisbon, balcony facing the river"})["results"]
        assert all(r["type"] != "event" for r in after)
        assert any(r["type"] == "fact" and event_id in r["source_event_ids"] for r in after[:5])


def test_fresh_events_keep_to_the_filters(stores: Stores) -> None:
    call_tool(stores, "record_events", {"events": [event("e1"), event("e2", content="Lisbon flat keys at Rui's")]})
    with stores.transaction():
        identity.resolve_or_create(stores.conn, "Marta", "person", source="user", seen_at=now_ms())
    query = "Marta's flat in Lisbon, the balcony facing the river"

    def ids(**filters: Any) -> list[str]:
        return [r.id for r in recall(stores, query, **filters).results]

    assert ids() == ["chat:e1"]  # half the query's terms, at least: the second event holds too few
    assert ids(platform="chat") == ["chat:e1"] and ids(platform="mail") == []
    assert ids(thread_id="elsewhere") == [] and ids(session_id="elsewhere") == [] and ids(time_before=1_000) == []
    assert ids(exclude_session_id="elsewhere") == ["chat:e1"]
    assert ids(scope=["events"]) == ["chat:e1"] and ids(scope=["facts"]) == []
    assert ids(entity="Marta") == []  # the writer has not linked it to anyone yet
    assert call_tool(stores, "search_memory", {"query": query})["results"][0]["id"] == "chat:e1"


# --- the same flow over MCP and over the HTTP API -------------------------------------------------


def test_record_recall_forget_over_mcp(built: Settings) -> None:
    async def session(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["record"] = await client.call_tool("record_events", {"events": [event("mcp-1")]})
        out["recall"] = await client.call_tool("recall", {"query": SAID})
        out["bad"] = await client.call_tool("record_events", {"events": "not a list"})
        out["forget"] = await client.call_tool("forget", {"target": "event", "value": "chat:mcp-1", "confirm": True})
        out["after"] = await client.call_tool("recall", {"query": SAID})
        return out

    async def main_() -> dict[str, Any]:
        params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "mcp"], env=_env(built))
        async with Client(params, read_timeout_seconds=120) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "record_events" in names
            return await session(client)

    got = anyio.run(main_)
    assert not got["record"].is_error and got["record"].structured_content["stored"] == 1
    first = got["recall"].structured_content["results"][0]
    assert (first["type"], first["id"], first["source_event_ids"]) == ("event", "chat:mcp-1", ["chat:mcp-1"])
    assert got["bad"].is_error and "events" in got["bad"].content[0].text
    assert not got["forget"].is_error
    assert all(r["id"] != "chat:mcp-1" for r in got["after"].structured_content["results"])
    with Stores(built, readonly=True) as stores:
        assert stores.conn.execute("SELECT count(*) FROM events WHERE id = 'chat:mcp-1'").fetchone()[0] == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Served:
    """`nexus-memory serve` with these flags on a free port of these stores, while in a `with`; its URL."""

    def __init__(self, settings: Settings, *flags: str) -> None:
        self.port = _free_port()
        command = [*CLI, "serve", *flags, "--port", str(self.port)]
        self.process = subprocess.Popen(command, env=_env(settings), stderr=subprocess.PIPE)
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> str:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self.url
            assert self.process.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def api(built: Settings) -> Iterator[str]:
    with _Served(built, "--host", "127.0.0.1") as url:
        yield url


def request(
    url: str, body: Any = None, *, headers: dict[str, str] | None = None, raw: bytes | None = None
) -> tuple[int, Any]:
    """(status, JSON answer) of a GET (no body) or a JSON POST."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json"} if data is not None else {}
    call = urllib.request.Request(url, data=data, headers={**sent, **(headers or {})})
    try:
        with urllib.request.urlopen(call, timeout=120) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_record_recall_forget_over_http(api: str) -> None:
    status, recorded = request(f"{api}/tools/record_events", {"events": [event("http-1"), event("bad", as_of=None)]})
    assert status == 200 and recorded["stored"] == 1 and recorded["events"][1]["status"] == "rejected"
    status, found = request(f"{api}/tools/recall", {"query": SAID})
    assert status == 200 and found["results"][0]["id"] == "chat:http-1" and found["results"][0]["type"] == "event"
    status, block = request(f"{api}/tools/get_context", {"message": "What is Marta's flat in Lisbon like?"})
    assert status == 200 and SAID in block["context"]
    status, gone = request(f"{api}/tools/forget", {"target": "event", "value": "chat:http-1", "confirm": True})
    assert status == 200 and gone
    _, after = request(f"{api}/tools/recall", {"query": SAID})
    assert all(r["id"] != "chat:http-1" for r in after["results"])
    # What a client gets wrong is a 4xx with one reason; the server goes on.
    assert request(f"{api}/tools/recall", {"query": 5}) == (
        400,
        {"error": "invalid arguments: query must be a string, got int"},
    )
    assert request(f"{api}/tools/recall", raw=b"{not json")[0] == 400
    assert request(f"{api}/tools/drop_tables", {})[0] == 404
    assert request(f"{api}/tools/recall", raw=b'{"query": "x"}', headers={"Content-Type": "text/plain"})[0] == 415
    assert request(f"{api}/health", headers={"Host": "attacker.example"})[0] == 400  # DNS rebinding
    status, description = request(f"{api}/openapi.json")
    assert status == 200 and description == json.loads(json.dumps(openapi()))


def test_beyond_loopback_a_token_is_required(built: Settings) -> None:
    refused = subprocess.run(
        [*CLI, "serve", "--host", "0.0.0.0", "--port", str(_free_port())],
        env=_env(built),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()]  # one line
    assert refused.stderr.startswith("error: refusing to listen on 0.0.0.0 without a token")
    with _Served(built, "--host", "0.0.0.0", "--token", "s3cret") as url:
        assert request(f"{url}/tools/memory_stats", {})[0] == 401
        assert request(f"{url}/tools/memory_stats", {}, headers={"Authorization": "Bearer wrong"})[0] == 401
        assert request(f"{url}/openapi.json")[0] == 401
        status, stats = request(f"{url}/tools/memory_stats", {}, headers={"Authorization": "Bearer s3cret"})
        assert status == 200 and stats["counts"]["facts"] > 0


def test_the_readme_and_the_openapi_description_agree() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## HTTP API\n")
    section = text[start : text.index("\n## ", start + 1)]
    named = set(re.findall(r"`(?:GET |POST )?(/[a-z_./{}]+)`", section))
    paths = openapi()["paths"]
    assert set(paths) <= named, f"the README's HTTP section does not name {sorted(set(paths) - named)}"
    assert named <= set(paths), f"the README names paths the API does not have: {sorted(named - set(paths))}"
    for tool in TOOLS:
        function = tool["function"]
        operation = paths[f"/tools/{function['name']}"]["post"]
        assert operation["operationId"] == function["name"] and operation["summary"] == function["description"]
        assert operation["requestBody"]["content"]["application/json"]["schema"] == function["parameters"]
    assert len([p for p in paths if p.startswith("/tools/")]) == len(REGISTRY.names)


# --- the README's hooks, as written there -----------------------------------------------------------


def _readme_script(name: str) -> str:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(#!/bin/sh\n.*?)```", text, flags=re.DOTALL)
    return next(block for block in blocks if block.startswith(f"#!/bin/sh\n# {name}:"))


@pytest.mark.skipif(shutil.which("jq") is None, reason="the README's hooks read their input with jq")
def test_the_readme_hooks_record_a_turn_and_inject_it_elsewhere(tmp_path: Path, settings: Settings) -> None:
    scripts = {}
    for name in ("memory-context.sh", "memory-record.sh"):
        scripts[name] = tmp_path / name
        scripts[name].write_text(_readme_script(name), encoding="utf-8")
        scripts[name].chmod(0o755)
    transcript = tmp_path / "transcript.jsonl"

    def said(kind: str, uuid: str, second: int, content: Any) -> dict[str, Any]:
        when = f"2026-11-26T09:00:{second:02d}Z"
        return {"type": kind, "uuid": uuid, "sessionId": "s-a", "timestamp": when, "message": {"content": content}}

    lines = [
        said("user", "u1", 0, SAID),
        said("assistant", "a1", 5, [{"type": "text", "text": "A river view, lovely."}, {"type": "tool_use"}]),
        said("user", "u2", 6, [{"type": "tool_result", "content": "ok"}]),  # nobody's words: left out
        {"type": "summary", "summary": "flat talk"},
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    env = _env(settings, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")

    def hook(name: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(scripts[name])], input=json.dumps(payload), env=env, capture_output=True, text=True, timeout=120
        )

    for _ in range(2):  # the turn ends twice: the messages are stored once
        assert hook("memory-record.sh", {"session_id": "s-a", "transcript_path": str(transcript)}).returncode == 0
    with Stores(settings, readonly=True) as stores:
        rows = stores.conn.execute("SELECT id, sender_id, direction, content FROM events ORDER BY as_of").fetchall()
    assert [tuple(r) for r in rows] == [
        ("agent:u1", "me", "outbound", SAID),
        ("agent:a1", "assistant", "inbound", "A river view, lovely."),
    ]
    asked = {"session_id": "s-b", "prompt": "What is Marta's flat in Lisbon like?"}
    context = hook("memory-context.sh", asked)
    assert context.returncode == 0 and SAID in context.stdout
    own = hook("memory-context.sh", {**asked, "session_id": "s-a"})  # its own session holds it already
    assert own.returncode == 0 and SAID not in own.stdout
