"""`nexus-memory serve`: the agent tools as a JSON API over HTTP (Starlette on uvicorn, both `mcp` dependencies).

One registry, as for MCP: `POST /tools/<name>` runs the tool `<name>` of `agents.tools` through
`call_tool` (its JSON schema, its validation, a fact write's side effects), with the request body as
its arguments (a JSON object) and its result as the answer. `GET /openapi.json` describes one
operation per tool, generated from the same schemas the MCP server lists; `GET /health` says the
server is up. Answers: 200 and the result; 400 and {"error": reason} for a call the tool refuses; 404
for an unknown tool; 500 for a failure inside a tool (its reason, one line).

Access: on a loopback address without a token, only local clients reach it, and a request must name a
loopback Host (a web page's DNS-rebinding trick cannot) and send `Content-Type: application/json` (a
page cannot send that without a CORS preflight, which is never granted). Beyond loopback a token is
required (NEXUS_API_TOKEN or --token); with a token set, every request needs `Authorization: Bearer
<token>`, else 401. The stores are opened CONNECTIONS times, once per worker thread: a call takes a free
connection, so a short write (record_events) does not wait behind a recall (SQLite lets readers and one
writer work at once; writers take turns under its lock).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import queue
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from nexus_memory.agents.listening import listen
from nexus_memory.agents.mcp_server import package_version
from nexus_memory.agents.tools import INTERNAL_ERROR, REGISTRY, call_tool, tool_schemas
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8766  # `nexus-memory mcp --http` takes 8765
MAX_BODY_BYTES = 20_000_000  # a record_events call of 1,000 long events fits
CONNECTIONS = 4  # calls served at once, each on its own connection to the stores
TOOL_PATH = "/tools/{name}"
_LOOPBACK_NAMES = ("localhost",)


class RefusedToStart(ValueError):
    """The server would listen beyond loopback without a token."""


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or name to bind or a Host header's host) is this machine only."""
    host = host.strip().strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name may resolve to anything


def check_exposure(host: str, token: str) -> None:
    """RefusedToStart, with the one line to say, for a non-loopback `host` without a token."""
    if not token and not is_loopback(host):
        raise RefusedToStart(
            f"refusing to listen on {host} without a token: set NEXUS_API_TOKEN or pass --token "
            "(every request must then send 'Authorization: Bearer <token>'), or listen on 127.0.0.1"
        )


def openapi(tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 description: one POST operation per agent tool, its request body the tool's schema."""
    error = {
        "content": {
            "application/json": {
                "schema": {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
            }
        }
    }
    paths: dict[str, Any] = {}
    for tool in tool_schemas() if tools is None else tools:
        function = tool["function"]
        paths[TOOL_PATH.format(name=function["name"])] = {
            "post": {
                "operationId": function["name"],
                "summary": function["description"],
                "tags": ["tools"],
                "requestBody": {"required": True, "content": {"application/json": {"schema": function["parameters"]}}},
                "responses": {
                    "200": {
                        "description": "The tool's result.",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    "400": {"description": "The call was refused: invalid arguments or request.", **error},
                    "401": {"description": "A token is set and the request did not send it.", **error},
                    "500": {"description": "The tool failed.", **error},
                },
            }
        }
    ok = {"200": {"description": "OK"}}
    for path, operation, summary in (("/openapi.json", "openapi", "This description."), ("/health", "health", "Up?")):
        paths[path] = {"get": {"operationId": operation, "summary": summary, "responses": ok}}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Nexus Memory",
            "version": package_version(),
            "description": "The agent tools of Nexus Memory (the ones its MCP server lists), one operation each.",
        },
        "paths": paths,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}, {}],  # required only when the server was started with a token
    }


class MemoryApi:
    """The stores, the tool calls on them, and the Starlette app that serves them (`close` when done)."""

    def __init__(self, settings: Settings, *, host: str, token: str = "", session_id: str | None = None) -> None:
        check_exposure(host, token)
        self.session_id = session_id
        self.token = token.encode()
        self.local_only = is_loopback(host)
        self._free: queue.SimpleQueue[Stores] = queue.SimpleQueue()
        self._opened = [Stores(settings) for _ in range(CONNECTIONS)]
        for stores in self._opened:
            self._free.put(stores)
        self._workers = anyio.CapacityLimiter(CONNECTIONS)
        self._openapi = openapi()
        self.app = Starlette(
            routes=[
                Route(TOOL_PATH, self._tool, methods=["POST"]),
                Route("/openapi.json", self._describe, methods=["GET"]),
                Route("/health", self._health, methods=["GET"]),
            ],
            middleware=[Middleware(BaseHTTPMiddleware, dispatch=self._guard)],
        )

    def call(self, name: str, arguments: str) -> dict[str, Any]:
        """One tool call on a free connection (blocking): the result dict, or {"error": ...}."""
        stores = self._free.get()
        try:
            return call_tool(stores, name, arguments, session_id=self.session_id)
        finally:
            self._free.put(stores)

    def close(self) -> None:
        for stores in self._opened:
            stores.close()

    async def _guard(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if self.token and not hmac.compare_digest(_bearer(request), self.token):
            return _json({"error": "missing or wrong token: send 'Authorization: Bearer <token>'"}, 401)
        if self.local_only and not is_loopback(_host_name(request.headers.get("host", ""))):
            return _json({"error": "this server answers only requests to a loopback host"}, 400)
        if request.method == "POST" and _media_type(request) != "application/json":
            return _json({"error": "send the arguments as JSON, with 'Content-Type: application/json'"}, 415)
        return await call_next(request)

    async def _tool(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in REGISTRY.names:
            return _json({"error": f"no tool {name!r}; GET /openapi.json lists them"}, 404)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return _json({"error": f"the body is over {MAX_BODY_BYTES} bytes"}, 413)
        try:
            arguments = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _json({"error": f"the body is not UTF-8 (byte {exc.start})"}, 400)
        try:
            result = await anyio.to_thread.run_sync(self.call, name, arguments, limiter=self._workers)
        except Exception as exc:  # call_tool never raises; this guards the thread hop itself
            log.exception("tool %s failed", name)
            result = {"error": f"{INTERNAL_ERROR}{name}: {type(exc).__name__}: {exc}"}
        if "error" not in result:
            return _json(result, 200)
        return _json(result, 500 if str(result["error"]).startswith(INTERNAL_ERROR) else 400)

    async def _describe(self, request: Request) -> Response:
        return _json(self._openapi, 200)

    async def _health(self, request: Request) -> Response:
        return _json({"ok": True}, 200)


def _json(body: dict[str, Any], status: int) -> Response:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    text = json.dumps(body, ensure_ascii=False, default=str)
    return Response(text, status_code=status, media_type="application/json", headers=headers)


def _bearer(request: Request) -> bytes:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip().encode() if scheme.lower() == "bearer" else b""


def _host_name(header: str) -> str:
    """The host of a Host header, without its port ('[::1]:8766' -> '::1')."""
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def serve(
    settings: Settings,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str = "",
    session_id: str | None = None,
) -> None:
    """Serve until the process is stopped; RefusedToStart or CannotListen before anything opens when it may not
    or cannot listen."""
    import uvicorn

    check_exposure(host, token)
    listener = listen(host, port)  # CannotListen before the banner
    api = MemoryApi(settings, host=host, token=token, session_id=session_id)
    try:
        access = "a bearer token required" if token else "loopback only, no token"
        log.warning("nexus-memory API on http://%s:%d (%s); GET /openapi.json describes it", host, port, access)
        uvicorn.Server(uvicorn.Config(api.app, host=host, port=port, log_level="warning")).run(sockets=[listener])
    finally:
        api.close()
        listener.close()
