"""`nexus-memory mcp`: the agent tools served over the Model Context Protocol (official `mcp` SDK).

One registry: the tools listed are `agents.tools.tool_schemas()` (name, description and the same
JSON schema the OpenAI tool loop gets), and every call goes through `agents.tools.call_tool`
(validation, dispatch; a fact write with its side effects, agents/writes.py). So a tool added there is
served here with nothing to change. The SDK's low-level `Server` is used because it takes
those schemas as they are; its high-level `MCPServer` derives schemas from Python signatures.

Every bad call (unknown tool, invalid arguments, a failure inside a tool) answers a tool result with
`isError` set and the reason as text, never a protocol error or a crash. Results are JSON: as text
for any client, and as structured content.

Transports: stdio (the default; what Claude Desktop and IDE agents start), or streamable HTTP on a
loopback port for a long-running server (`--http [--port N]`, path /mcp). The stores are opened once
per server; calls run one at a time in a worker thread so the event loop stays free.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from nexus_memory.agents.listening import listen
from nexus_memory.agents.tools import INTERNAL_ERROR, call_tool, tool_schemas
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores

log = logging.getLogger(__name__)

SERVER_NAME = "nexus-memory"
DEFAULT_PORT = 8765
LOOPBACK = "127.0.0.1"
INSTRUCTIONS = (
    "Long-term memory of the user's conversations (messages, mail, chats, agent sessions). Use recall "
    "or search_memory before answering anything about the user's past, people or plans; results carry "
    "their date, platform and source event ids. Save what the user asks you to remember with "
    "remember_fact, and fix a wrong fact with correct_fact (the old one stops being recalled). Hand memory "
    "the conversation as it happens with record_events: it is recalled within seconds, its facts follow."
)


def mcp_tools() -> list[types.Tool]:
    """The agent tools as MCP tools: the OpenAI function schemas, unchanged."""
    return [
        types.Tool(
            name=tool["function"]["name"],
            description=tool["function"]["description"],
            input_schema=tool["function"]["parameters"],
        )
        for tool in tool_schemas()
    ]


class MemoryToolServer:
    """The stores and the tool calls on them, behind the SDK's low-level server."""

    def __init__(self, stores: Stores, *, session_id: str | None = None) -> None:
        self.stores = stores
        self.session_id = session_id
        self._lock = threading.Lock()  # one SQLite connection: calls take turns
        self._tools = mcp_tools()
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=package_version(),
            instructions=INSTRUCTIONS,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        return next((t.input_schema for t in self._tools if t.name == name), None)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            result = await anyio.to_thread.run_sync(self.call, params.name, params.arguments)
        except Exception as exc:  # call_tool never raises; this guards the thread hop itself
            log.exception("tool %s failed", params.name)
            result = {"error": f"{INTERNAL_ERROR}{params.name}: {type(exc).__name__}: {exc}"}
        return as_call_result(result)

    def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """One tool call on the stores (blocking): the result dict, or {"error": ...}."""
        with self._lock:
            return call_tool(self.stores, name, arguments or {}, session_id=self.session_id)


def as_call_result(result: dict[str, Any]) -> types.CallToolResult:
    """A tool's dict as an MCP result: an error result when it holds "error", else JSON text + structure."""
    if "error" in result:
        return types.CallToolResult(content=[types.TextContent(text=str(result["error"]))], is_error=True)
    text = json.dumps(result, ensure_ascii=False, default=str)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=json.loads(text))


def serve(settings: Settings, *, http: bool = False, port: int = DEFAULT_PORT, session_id: str | None = None) -> None:
    """Serve until the client disconnects (stdio) or the process is stopped (HTTP); CannotListen first when the
    HTTP port is taken."""
    listener = listen(LOOPBACK, port) if http else None
    try:
        with Stores(settings) as stores:
            tools = MemoryToolServer(stores, session_id=session_id)
            if listener is not None:
                anyio.run(_serve_http, tools.server, listener)
            else:
                anyio.run(_serve_stdio, tools.server)
    finally:
        if listener is not None:
            listener.close()


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(server: Server[Any], listener: socket.socket) -> None:
    import uvicorn

    # host=loopback also turns on the SDK's DNS-rebinding protection (Host/Origin must be local).
    app = server.streamable_http_app(host=LOOPBACK)
    port = listener.getsockname()[1]
    log.warning("nexus-memory MCP server on http://%s:%d/mcp", LOOPBACK, port)
    config = uvicorn.Config(app, host=LOOPBACK, port=port, log_level="warning")
    await uvicorn.Server(config).serve(sockets=[listener])


def package_version() -> str:
    """The installed nexus-memory version, "0" in a checkout that is not installed."""
    from importlib import metadata

    try:
        return metadata.version("nexus-memory")
    except metadata.PackageNotFoundError:
        return "0"
