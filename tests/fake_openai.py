"""A scripted OpenAI-compatible chat server on 127.0.0.1, for testing the LLM writer with the real client.

Each POST /v1/chat/completions takes the next entry of the script:
- `tool_calls(("insert_fact", {...}), ...)`: an assistant message with native tool calls
  (arguments may be a dict, or a raw string to test bad JSON);
- `content("...")`: an assistant message with plain text (garbage, or a tool call written as JSON);
- `http_error(500)`: an error status (with optional headers, e.g. Retry-After);
- `document({...})`: an assistant message whose content is a JSON document (structured mode);
- `sleep(seconds)`: wait before answering (longer than the client's timeout to test timeouts);
- a callable `f(request_body) -> entry`, to answer from what the writer sent (e.g. use ids that
  earlier tool results returned; see `tool_results`).
Every request body is recorded in `server.requests`. A request past the end of the script gets 500.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any

_ids = count(1)


@dataclass
class Reply:
    """One scripted answer: an HTTP status and a JSON body, after an optional delay."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Entry = Reply | Callable[[dict[str, Any]], Reply]


def _completion(message: dict[str, Any], finish_reason: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def tool_calls(*calls: tuple[str, dict[str, Any] | str], usage: tuple[int, int] = (100, 20)) -> Reply:
    """An assistant turn that calls tools; a str argument is sent verbatim (bad JSON tests)."""
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{next(_ids)}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for name, args in calls
        ],
    }
    return Reply(body=_completion(message, "tool_calls", usage))


def content(text: str, usage: tuple[int, int] = (100, 20), *, refusal: str | None = None) -> Reply:
    """An assistant turn with text only."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if refusal is not None:
        message["refusal"] = refusal
    return Reply(body=_completion(message, "stop", usage))


def http_error(
    status: int = 500, message: str = "scripted server error", headers: dict[str, str] | None = None
) -> Reply:
    body = {"error": {"message": message, "type": "server_error", "code": status}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


def document(doc: dict[str, Any] | str, usage: tuple[int, int] = (300, 60)) -> Reply:
    """A structured-mode answer: the document as the message content (a str is sent verbatim)."""
    return content(doc if isinstance(doc, str) else json.dumps(doc), usage)


def sleep(seconds: float, then: Reply | None = None) -> Reply:
    """Answer `then` (by default a finish) only after `seconds`."""
    reply = then or tool_calls(("finish", {"summary": "late"}))
    return Reply(status=reply.status, body=reply.body, delay_s=seconds, headers=reply.headers)


def tool_results(request: dict[str, Any]) -> list[Any]:
    """The parsed results of every `tool` message the writer has sent so far, in order."""
    results = []
    for message in request.get("messages", []):
        if message.get("role") == "tool":
            try:
                results.append(json.loads(message["content"]))
            except (TypeError, ValueError):
                results.append(message["content"])
    return results


def result_ids(request: dict[str, Any], key: str) -> list[str]:
    """Every value of `key` (fact_id, entity_id) in the tool results so far."""
    return [r[key] for r in tool_results(request) if isinstance(r, dict) and key in r]


class FakeOpenAI:
    """The server; use as a context manager, or `start()` / `close()`."""

    def __init__(self, script: list[Entry] | None = None) -> None:
        self.script: list[Entry] = list(script or [])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True  # a handler still sleeping must not block shutdown
        # shutdown() waits for the serve loop to wake up: at the default 0.5 s poll, every close() took 0.5 s.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def add(self, *entries: Entry) -> None:
        """Append to the script (e.g. a good script for a rerun)."""
        with self._lock:
            self.script.extend(entries)

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            entry = self.script.pop(0) if self.script else http_error(500, "fake_openai: script exhausted")
        return entry(body) if callable(entry) else entry

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(http_error(404, f"no route {self.path}"))
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(http_error(400, "request body is not JSON"))
                    return
                reply = fake._next_reply(body)
                if reply.delay_s and fake._closing.wait(reply.delay_s):
                    return  # shutting down: nobody is waiting for this answer
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test); nothing to deliver

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output quiet

        return Handler


def iter_messages(server: FakeOpenAI, role: str) -> Iterator[dict[str, Any]]:
    """Every message of `role` in every recorded request (for assertions)."""
    for request in server.requests:
        for message in request.get("messages", []):
            if message.get("role") == role:
                yield message
