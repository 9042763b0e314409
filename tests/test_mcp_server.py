"""`nexus-memory mcp` through the SDK's real client: stdio subprocess and streamable HTTP on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from built_store import built_copy
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from nexus_memory.agents.tools import TOOLS
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores

SERVER = [sys.executable, "-m", "nexus_memory.cli", "mcp"]


@pytest.fixture
def built(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Settings:
    return built_copy(tmp_path_factory, tmp_path)


def _env(settings: Settings) -> dict[str, str]:
    env = {"NEXUS_DATA_DIR": str(settings.data_dir), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if os.environ.get("NEXUS_MODEL_CACHE"):
        env["NEXUS_MODEL_CACHE"] = os.environ["NEXUS_MODEL_CACHE"]
    return env


def _over_stdio(settings: Settings, session: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], env=_env(settings))
        async with Client(params, read_timeout_seconds=120) as client:
            return await session(client)

    return anyio.run(main)


def _error_text(result: CallToolResult) -> str:
    assert result.is_error, result
    return " ".join(block.text for block in result.content)  # type: ignore[union-attr]


def test_tools_are_the_agent_tool_schemas(built: Settings) -> None:
    async def session(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = _over_stdio(built, session)
    assert [t.name for t in tools] == [t["function"]["name"] for t in TOOLS]
    for tool, schema in zip(tools, TOOLS, strict=True):
        assert tool.input_schema == schema["function"]["parameters"]
        assert tool.description == schema["function"]["description"]


def test_recall_returns_results_with_provenance_and_bad_calls_are_tool_errors(built: Settings) -> None:
    async def session(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"recall": await client.call_tool("recall", {"query": "When is the Atlas launch?"})}
        out["bad"] = {
            "wrong type": await client.call_tool("recall", {"query": 5}),
            "missing": await client.call_tool("recall", {}),
            "unknown argument": await client.call_tool("recall", {"query": "x", "colour": "red"}),
            "out of range": await client.call_tool("search_memory", {"query": "x", "limit": 10_000}),
            "empty fact": await client.call_tool("remember_fact", {"text": "   "}),
            "unknown fact": await client.call_tool("correct_fact", {"fact_id": "nope", "new_text": "x"}),
            "unknown tool": await client.call_tool("drop_all_tables", {}),
        }
        out["after"] = await client.call_tool("memory_stats", {})
        return out

    got = _over_stdio(built, session)
    recall = got["recall"]
    assert not recall.is_error
    assert json.loads(recall.content[0].text) == recall.structured_content
    results = recall.structured_content["results"]
    assert results and any("Atlas" in r["text"] for r in results[:5])
    with Stores(built, readonly=True) as stores:
        for r in (r for r in results if r["type"] == "fact"):
            assert r["date"] and r["platform"] and r["source_event_ids"]  # where and when it was said
            for event_id in r["source_event_ids"]:
                assert stores.conn.execute("SELECT 1 FROM events WHERE id = ?", (event_id,)).fetchone()
    reasons = {name: _error_text(result) for name, result in got["bad"].items()}
    # Each reason names what was wrong, so the model calling the tool can fix its call.
    assert "query" in reasons["wrong type"] and "query" in reasons["missing"] and "text" in reasons["empty fact"]
    assert "colour" in reasons["unknown argument"] and "limit" in reasons["out of range"]
    assert "nope" in reasons["unknown fact"] and "drop_all_tables" in reasons["unknown tool"]
    assert not got["after"].is_error and got["after"].structured_content["counts"]["facts"] > 0  # still serving


def test_remember_over_mcp_is_recalled_semantically(built: Settings) -> None:
    async def session(client: Client) -> tuple[CallToolResult, CallToolResult]:
        written = await client.call_tool(
            "remember_fact", {"text": "Priya's daughter Maya starts violin lessons in April", "entities": ["Maya"]}
        )
        found = await client.call_tool("search_memory", {"query": "which instrument is the child learning?"})
        return written, found

    written, found = _over_stdio(built, session)
    assert not written.is_error
    fact = written.structured_content
    assert fact["side_effects"]["embedded"] == 1
    assert fact["fact_id"] in [r["id"] for r in found.structured_content["results"]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_on_loopback(built: Settings) -> None:
    port = _free_port()
    env = {**os.environ, **_env(built)}
    server = subprocess.Popen([*SERVER, "--http", "--port", str(port)], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)

        async def main() -> tuple[list[str], CallToolResult, CallToolResult]:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                found = await client.call_tool("search_memory", {"query": "Atlas launch date"})
                bad = await client.call_tool("get_entity_info", {"entity": ""})
                return names, found, bad

        names, found, bad = anyio.run(main)
        assert "recall" in names and not found.is_error and found.structured_content["results"]
        assert "entity" in _error_text(bad)
    finally:
        server.terminate()
        server.wait(timeout=30)
