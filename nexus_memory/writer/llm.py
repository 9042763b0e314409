"""The LLM writer of seed 002: a bounded tool-calling loop against any OpenAI-compatible server.

The model reads an episode (its events with their deliveryContext, plus earlier thread events as
context only) and calls the six writer tools plus `finish`. Everything it writes goes through
`WriterTools`, so validation, dedup and merge rules are the same as for the offline writer.

Robustness, because small local models are the common case:
- a tool call with bad JSON or bad arguments gets `{"error": ...}` back so the model can fix it,
  within a per-episode error budget;
- garbage output, API errors, timeouts and refusals end the attempt: its writes are rolled back
  (a nested `db.transaction`) and the loop starts again, up to `max_retries` times, then `WriterFailure`;
- a tool call written as JSON in the message content (not in `tool_calls`) is accepted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import openai

from nexus_memory import db, identity
from nexus_memory.config import Settings
from nexus_memory.events import Event, InvalidRecord, parse_timestamp
from nexus_memory.llm_json import llm_settings, openai_client
from nexus_memory.writer import notes as writer_notes
from nexus_memory.writer.base import EpisodeInput, WriteResult, WriterFailure
from nexus_memory.writer.tools import ToolError, WriterTools

log = logging.getLogger(__name__)

MAX_TOOL_ERRORS = 8  # per episode, across attempts
MAX_EVENT_CHARS = 8_000  # one new event's content in the prompt
MAX_CONTEXT_CHARS = 500  # one context event's content in the prompt
MAX_RESULT_CHARS = 4_000  # one tool result sent back to the model
RETRY_TEMPERATURE = 0.7  # a retry at temperature 0 would repeat the same bad answer
FATAL_STATUS = (400, 401, 403, 404, 422)  # retrying the same request cannot help

_S = {"type": "string"}
_N = {"type": "number"}
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "recall",
        "description": "Search memory for existing facts or entities (dedup checks, entity lookups).",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {**_S, "description": "a few key words"},
                "scope": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["facts", "entities", "observations", "events"]},
                    "description": 'what to search, default ["facts"]; ["entities"] to find people and handles',
                },
                "entity": {**_S, "description": "only results about this entity (id or name)"},
                "time_after": {"type": ["integer", "string"], "description": "unix ms or ISO time"},
                "time_before": {"type": ["integer", "string"], "description": "unix ms or ISO time"},
                "platform": _S,
                "max_results": {"type": "integer", "minimum": 1, "maximum": 50},
                "budget": {"type": "string", "enum": ["low", "mid", "high"]},
            },
            "required": ["query"],
        },
    },
    {
        "name": "insert_fact",
        "description": "Store one atomic, durable fact as a plain sentence. Returns fact_id.",
        "parameters": {
            "type": "object",
            "properties": {
                "text": {**_S, "description": "the fact, one self-contained sentence with real names"},
                "as_of": {"type": "integer", "description": "when it became true, unix ms; omit for the event's time"},
                "source_event_id": {**_S, "description": "ref (e1, e2, ...) or id of the new event it comes from"},
                "metadata": {"type": "object", "description": "optional extra details"},
            },
            "required": ["text", "source_event_id"],
        },
    },
    {
        "name": "create_entity",
        "description": "Create an entity, or get the existing one with the same name and type. Returns entity_id.",
        "parameters": {
            "type": "object",
            "properties": {
                "name": _S,
                "type": {**_S, "description": "person, organization, project, location, email, phone, ..."},
                "source": {"type": "string", "enum": ["inferred", "user", "import"]},
            },
            "required": ["name", "type"],
        },
    },
    {
        "name": "link_fact_entity",
        "description": "Link a fact to an entity it is about.",
        "parameters": {
            "type": "object",
            "properties": {"fact_id": _S, "entity_id": _S},
            "required": ["fact_id", "entity_id"],
        },
    },
    {
        "name": "insert_causal_link",
        "description": "Record that one fact caused another; only when the text says so explicitly.",
        "parameters": {
            "type": "object",
            "properties": {
                "from_fact_id": {**_S, "description": "the cause"},
                "to_fact_id": {**_S, "description": "the effect"},
                "strength": {**_N, "minimum": 0, "maximum": 1},
            },
            "required": ["from_fact_id", "to_fact_id", "strength"],
        },
    },
    {
        "name": "propose_merge",
        "description": "Propose that entity b is the same as entity a (b merges into a).",
        "parameters": {
            "type": "object",
            "properties": {
                "entity_a_id": _S,
                "entity_b_id": _S,
                "confidence": {**_N, "minimum": 0, "maximum": 1},
                "reason": _S,
            },
            "required": ["entity_a_id", "entity_b_id", "confidence", "reason"],
        },
    },
    {
        "name": "finish",
        "description": "End the episode once everything worth remembering is stored (or nothing is).",
        "parameters": {
            "type": "object",
            "properties": {"summary": {**_S, "description": "one line: what was stored"}},
            "required": ["summary"],
        },
    },
]
TOOL_NAMES = frozenset(t["name"] for t in TOOL_SCHEMAS)
_ALLOWED = {t["name"]: frozenset(t["parameters"]["properties"]) for t in TOOL_SCHEMAS}
_REQUIRED = {t["name"]: tuple(t["parameters"]["required"]) for t in TOOL_SCHEMAS}
# Asked for in the schemas but defaulted here: a finish without a summary still ends the episode,
# and a fact from a one-event episode can only come from that event.
_REQUIRED["finish"] = ()
_REQUIRED["insert_fact"] = ("text",)
OPENAI_TOOLS = [{"type": "function", "function": schema} for schema in TOOL_SCHEMAS]


class _AttemptFailed(Exception):
    """One attempt of the loop cannot go on; `fatal` means another attempt cannot help either."""

    def __init__(self, reason: str, *, fatal: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fatal = fatal


@dataclass
class _Run:
    """What one episode's writing has used so far, across attempts."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    last_error: str = ""
    failures: list[str] = field(default_factory=list)


@dataclass
class _Call:
    """One tool call as the model made it: arguments still raw (a JSON string) or parsed."""

    name: str
    arguments: str | dict[str, Any] | None
    call_id: str = ""


def load_role_prompt() -> str:
    """The writer's role prompt, shipped as package data."""
    return (resources.files("nexus_memory") / "prompts" / "writer_role.md").read_text(encoding="utf-8")


def system_prompt(role_prompt: str, tools: WriterTools) -> str:
    """The role prompt, then the writer's notes (disambiguation rules, false positives) when there are any."""
    notes = writer_notes.for_prompt(tools.conn)
    return f"{role_prompt.rstrip()}\n\n{notes}" if notes else role_prompt


def iso(ms: int) -> str:
    """Unix ms as ISO 8601 UTC, the form models read best."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


# -- the input message ---------------------------------------------------------------------------
def sender_entity_id(tools: WriterTools, event: Event) -> str | None:
    """The delivery entity the ledger created for this sender (seed 002: prefer it over new ones)."""
    row = tools.conn.execute(
        "SELECT entity_id FROM contacts WHERE platform = ? AND handle = ?", (event.platform, event.sender_id)
    ).fetchone()
    return identity.canonical_id(tools.conn, row[0]) if row else None


def _delivery_line(tools: WriterTools, event: Event) -> str:
    """The event's deliveryContext, with `speaker`: the only name facts may give its sender.

    A sender_name that is not the speaker (shaped like another handle, or already another sender's
    name) is shown as unverified, so the model reads it as a claim.
    """
    speaker = identity.speaker_name(tools.conn, event)
    parts = [
        f"platform={event.platform}",
        f"direction={event.direction}",
        f"sender_id={event.sender_id}",
        f"speaker={speaker}",
    ]
    optional = {
        "sender_name" if event.sender_name == speaker else "unverified_sender_name": event.sender_name,
        "peer_id": event.peer_id,
        "peer_kind": event.peer_kind,
        "thread_id": event.thread_id,
        "session_id": event.session_id,
    }
    parts += [f"{k}={v}" for k, v in optional.items() if v]
    return " ".join(parts)


def render_episode(tools: WriterTools, episode: EpisodeInput) -> str:
    """The user message: context events (read only) then the new events with refs e1, e2, ..."""
    lines = [f"Episode {episode.episode_id or '(ad hoc)'}: {len(episode.events)} new event(s)."]
    if episode.context:
        lines += ["", "CONTEXT EVENTS (earlier in the thread; for understanding only, do not extract from them):"]
        for event in episode.context:
            lines.append(
                f"- {iso(event.as_of)} {_delivery_line(tools, event)}: {_clip(event.content, MAX_CONTEXT_CHARS)}"
            )
    lines += ["", "NEW EVENTS (extract from these; use the ref as source_event_id):"]
    for ref, event in zip(event_refs(episode), episode.events, strict=True):
        entity = sender_entity_id(tools, event)
        lines += [
            "",
            f"[{ref}] id={event.id}",
            f"time: {iso(event.as_of)} (as_of={event.as_of})",
            f"delivery: {_delivery_line(tools, event)}" + (f" sender_entity_id={entity}" if entity else ""),
            f"content: {_clip(event.content, MAX_EVENT_CHARS)}",
        ]
    lines += ["", "Store the durable facts of the new events with the tools, then call finish."]
    return "\n".join(lines)


def event_refs(episode: EpisodeInput) -> list[str]:
    return [f"e{i}" for i in range(1, len(episode.events) + 1)]


# -- parsing tool calls --------------------------------------------------------------------------
def parse_arguments(raw: str | dict[str, Any] | None) -> dict[str, Any]:
    """Tool arguments as a dict; raise ToolError with a fixable message otherwise."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolError(f"arguments are not valid JSON ({exc.msg} at character {exc.pos})") from exc
    if not isinstance(raw, dict):
        raise ToolError("arguments must be a JSON object")
    return raw


def calls_in_content(text: str) -> list[_Call]:
    """Tool calls a model wrote as JSON in its message text ({"name": ..., "arguments": {...}})."""
    decoder = json.JSONDecoder()
    calls: list[_Call] = []
    pos = 0
    while (start := text.find("{", pos)) != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        calls += _calls_in_object(obj)
        pos = end
    return calls


def _calls_in_object(obj: Any) -> list[_Call]:
    """Recognise the usual wrappings: bare call, {"tool_call": ...}, {"tool_calls": [...]}, {"function": ...}."""
    if isinstance(obj, list):
        return [c for item in obj for c in _calls_in_object(item)]
    if not isinstance(obj, dict):
        return []
    for key in ("tool_calls", "tool_call", "function"):
        if key in obj and isinstance(obj[key], dict | list):
            return _calls_in_object(obj[key])
    name = obj.get("name")
    # A bare {"name": "Alice"} is data, not a call: require arguments or a known tool name.
    if isinstance(name, str) and ("arguments" in obj or "parameters" in obj or name in TOOL_NAMES):
        args = obj.get("arguments", obj.get("parameters"))
        return [_Call(name, args if isinstance(args, str | dict) or args is None else json.dumps(args))]
    return []


# -- argument coercion ---------------------------------------------------------------------------
def _check_keys(name: str, args: dict[str, Any]) -> None:
    unknown = sorted(set(args) - _ALLOWED[name])
    if unknown:
        raise ToolError(f"{name} does not take {', '.join(unknown)}; allowed: {', '.join(sorted(_ALLOWED[name]))}")
    missing = [k for k in _REQUIRED[name] if args.get(k) in (None, "")]
    if missing:
        raise ToolError(f"{name} needs {', '.join(missing)}")


def _str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ToolError(f"'{key}' must be a string")
    return value.strip()


def _num(args: dict[str, Any], key: str) -> float:
    value = args.get(key)
    try:
        if isinstance(value, bool):
            raise ValueError
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ToolError(f"'{key}' must be a number between 0 and 1, got {value!r}") from None


def _time(args: dict[str, Any], key: str) -> int | None:
    value = args.get(key)
    if value in (None, ""):
        return None
    try:
        return parse_timestamp(value)
    except InvalidRecord:
        raise ToolError(f"'{key}' must be unix milliseconds or an ISO 8601 time, got {value!r}") from None


def _small_number(value: Any) -> bool:
    text = str(value).strip() if isinstance(value, int | float | str) else ""
    return text.lstrip("-").replace(".", "", 1).isdigit() and abs(float(text)) < 1e9


# -- the tools as the model sees them ------------------------------------------------------------
class ModelTools:
    """Validates a model's tool calls against one episode and runs them on `WriterTools`."""

    def __init__(self, tools: WriterTools, episode: EpisodeInput) -> None:
        self.tools = tools
        self.events = {e.id: e for e in episode.events}
        self.refs = dict(zip(event_refs(episode), episode.events, strict=True))
        self.finished = False
        self.summary = ""
        self.handlers: dict[str, Callable[[dict[str, Any]], Any]] = {
            "recall": self.recall,
            "insert_fact": self.insert_fact,
            "create_entity": self.create_entity,
            "link_fact_entity": self.link_fact_entity,
            "insert_causal_link": self.insert_causal_link,
            "propose_merge": self.propose_merge,
            "finish": self.finish,
        }

    def call(self, name: str, args: dict[str, Any]) -> Any:
        """Run one call; ToolError (bad name or arguments) leaves nothing behind."""
        if name not in self.handlers:
            raise ToolError(f"unknown tool {name!r}; tools are {', '.join(sorted(self.handlers))}")
        _check_keys(name, args)
        # Some tools write several rows; a failure half-way must not leave the first ones.
        with _undone_on_error(self.tools):
            return self.handlers[name](args)

    def source_event(self, value: str | None) -> Event:
        """The episode event a ref (e1), an id, or the id's unique tail names."""
        if not value:
            if len(self.events) == 1:
                return next(iter(self.events.values()))
            raise ToolError(f"insert_fact needs source_event_id, one of {', '.join(self.refs)}")
        key = value.strip().strip("[]")
        if key in self.refs:
            return self.refs[key]
        if key in self.events:
            return self.events[key]
        tail = [e for eid, e in self.events.items() if eid.endswith(":" + key)]
        if len(tail) == 1:
            return tail[0]
        raise ToolError(f"source_event_id {value!r} is not a new event of this episode; use one of {list(self.refs)}")

    def recall(self, args: dict[str, Any]) -> Any:
        scope = args.get("scope")
        if isinstance(scope, str):
            scope = [scope]
        if scope is not None and not (isinstance(scope, list) and all(isinstance(s, str) for s in scope)):
            raise ToolError('\'scope\' must be a list of strings such as ["facts"] or ["entities"]')
        max_results = args.get("max_results", 10)
        if not isinstance(max_results, int) or isinstance(max_results, bool):
            raise ToolError("'max_results' must be an integer")
        try:
            return self.tools.recall(
                _str(args, "query") or "",
                scope=scope,
                entity=_str(args, "entity"),
                time_after=_time(args, "time_after"),
                time_before=_time(args, "time_before"),
                platform=_str(args, "platform"),
                max_results=max_results,
                budget=_str(args, "budget") or "mid",
            )
        except ImportError:
            # The recall engine is optional for writing: say so instead of failing the episode.
            raise ToolError("recall is not available here; go on without the dedup check") from None

    def insert_fact(self, args: dict[str, Any]) -> Any:
        event = self.source_event(_str(args, "source_event_id"))
        metadata = args.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise ToolError("'metadata' must be an object")
        as_of, defaulted = self._as_of(args.get("as_of"), event)
        result = self.tools.insert_fact(
            _str(args, "text") or "",
            as_of,
            ingested_at=event.as_of,
            source_event_id=event.id,
            metadata=metadata,
        )
        result = {**result, "as_of": as_of}
        if defaulted:
            result["note"] = "as_of was not a time; used the event's time"
        return result

    @staticmethod
    def _as_of(value: Any, event: Event) -> tuple[int, bool]:
        """Unix ms from ms, seconds or ISO text; the event's time when missing or unreadable."""
        if value in (None, "") or isinstance(value, bool):
            return event.as_of, False
        if _small_number(value):
            # A bare number below 1e9 is a year or a count ("2024"), not unix seconds of 1970.
            return event.as_of, True
        try:
            return parse_timestamp(value), False
        except InvalidRecord:
            # Small models write "yesterday" or "2024"; the event's time is the honest default.
            return event.as_of, True

    def create_entity(self, args: dict[str, Any]) -> Any:
        kind = (_str(args, "type") or "").lower().replace(" ", "_").replace("-", "_")
        return self.tools.create_entity(_str(args, "name") or "", kind, source=_str(args, "source") or "inferred")

    def link_fact_entity(self, args: dict[str, Any]) -> Any:
        return self.tools.link_fact_entity(_str(args, "fact_id") or "", _str(args, "entity_id") or "")

    def insert_causal_link(self, args: dict[str, Any]) -> Any:
        return self.tools.insert_causal_link(
            _str(args, "from_fact_id") or "", _str(args, "to_fact_id") or "", _num(args, "strength")
        )

    def propose_merge(self, args: dict[str, Any]) -> Any:
        return self.tools.propose_merge(
            _str(args, "entity_a_id") or "",
            _str(args, "entity_b_id") or "",
            _num(args, "confidence"),
            _str(args, "reason") or "",
        )

    def finish(self, args: dict[str, Any]) -> Any:
        self.finished = True
        self.summary = _str(args, "summary") or ""
        return {"status": "finished"}


# -- the writer ----------------------------------------------------------------------------------
class LLMWriter:
    """An `EpisodeWriter` that lets a chat model with tools do the extraction (seed 002)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "not-needed",
        *,
        timeout_s: float = 60,
        max_steps: int = 12,
        max_retries: int = 2,
        client: openai.OpenAI | None = None,
        max_tool_errors: int = MAX_TOOL_ERRORS,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        role_prompt: str | None = None,
    ) -> None:
        if max_steps < 1 or max_retries < 0:
            raise ValueError("max_steps must be >= 1 and max_retries >= 0")
        self.model = model
        self.name = f"llm:{model}"
        self.timeout_s = timeout_s
        self.max_steps = max_steps
        self.max_retries = max_retries
        self.max_tool_errors = max_tool_errors
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.role_prompt = role_prompt or load_role_prompt()
        # Retries are ours (with a rollback in between), so the client must not retry on its own.
        self.client = client or openai_client(base_url, api_key, timeout_s)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> LLMWriter:
        """The writer for NEXUS_LLM_BASE_URL / NEXUS_LLM_MODEL / OPENAI_API_KEY / NEXUS_LLM_TIMEOUT_S."""
        base_url, model, api_key, timeout_s = llm_settings(settings, "the LLM writer")
        return cls(base_url, model, api_key, timeout_s=timeout_s, **kwargs)

    def write(self, tools: WriterTools, episode: EpisodeInput) -> WriteResult:
        """Run attempts until one finishes; each failed attempt is rolled back before the next."""
        run = _Run()
        user_message = render_episode(tools, episode)
        for attempt in range(self.max_retries + 1):
            try:
                with _undone_on_error(tools):
                    summary = self._attempt(tools, episode, user_message, run, attempt)
            except _AttemptFailed as exc:
                run.failures.append(f"attempt {attempt + 1}: {exc.reason}")
                log.info("%s episode %s: %s", self.name, episode.episode_id, run.failures[-1])
                if exc.fatal:
                    break
                continue
            notes = summary + (f" (after {'; '.join(run.failures)})" if run.failures else "")
            return WriteResult(run.prompt_tokens, run.completion_tokens, run.tool_calls, notes)
        raise self._failure(run)

    def _failure(self, run: _Run) -> WriterFailure:
        failure = WriterFailure(f"{self.name} gave up after {len(run.failures)} attempt(s): {' | '.join(run.failures)}")
        # The runner may record what the failed attempts cost (see report: run.py change).
        failure.prompt_tokens = run.prompt_tokens  # type: ignore[attr-defined]
        failure.completion_tokens = run.completion_tokens  # type: ignore[attr-defined]
        return failure

    def _attempt(self, tools: WriterTools, episode: EpisodeInput, user_message: str, run: _Run, attempt: int) -> str:
        """One pass of the tool loop; returns finish's summary or raises _AttemptFailed."""
        model_tools = ModelTools(tools, episode)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(self.role_prompt, tools)},
            {"role": "user", "content": user_message},
        ]
        temperature = self.temperature if attempt == 0 else max(self.temperature, RETRY_TEMPERATURE)
        for _step in range(self.max_steps):
            message = self._complete(messages, run, temperature)
            if message.tool_calls:
                self._run_tool_calls(message, messages, model_tools, run)
            else:
                self._run_content_calls(message.content or "", messages, model_tools, run)
            if model_tools.finished:
                return model_tools.summary
        raise _AttemptFailed(f"no finish within max_steps={self.max_steps}")

    def _complete(self, messages: list[dict[str, Any]], run: _Run, temperature: float) -> Any:
        """One chat completion; API trouble, refusals and empty answers end the attempt."""
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                tools=OPENAI_TOOLS,  # type: ignore[arg-type]
                tool_choice="auto",
                temperature=temperature,
                max_tokens=self.max_tokens,
                timeout=self.timeout_s,
            )
        except openai.APITimeoutError as exc:
            raise _AttemptFailed(f"timeout: no answer within {self.timeout_s}s") from exc
        except openai.APIStatusError as exc:
            raise _AttemptFailed(
                f"API error {exc.status_code}: {_clip(str(exc.message), 300)}", fatal=exc.status_code in FATAL_STATUS
            ) from exc
        except openai.APIError as exc:
            raise _AttemptFailed(f"API error: {_clip(str(exc), 300)}") from exc
        usage = getattr(response, "usage", None)
        if usage is not None:
            run.prompt_tokens += usage.prompt_tokens or 0
            run.completion_tokens += usage.completion_tokens or 0
        choices = getattr(response, "choices", None)
        if not choices or choices[0].message is None:
            raise _AttemptFailed("malformed response: no choices")
        choice = choices[0]
        refusal = getattr(choice.message, "refusal", None)
        if refusal or choice.finish_reason == "content_filter":
            raise _AttemptFailed(f"refused: {_clip(str(refusal or choice.finish_reason), 300)}")
        return choice.message

    def _run_tool_calls(self, message: Any, messages: list[dict[str, Any]], model_tools: ModelTools, run: _Run) -> None:
        """Native tool calls: echo them, answer each with a `tool` message."""
        calls = [
            _Call(c.function.name, c.function.arguments, c.id or f"call_{len(messages)}_{i}")
            for i, c in enumerate(message.tool_calls)
        ]
        messages.append(
            {
                "role": "assistant",
                "content": message.content or None,
                "tool_calls": [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments or "{}"},
                    }
                    for c in calls
                ],
            }
        )
        for call in calls:
            result = self._execute(call, model_tools, run)
            messages.append({"role": "tool", "tool_call_id": call.call_id, "content": result})

    def _run_content_calls(
        self, content: str, messages: list[dict[str, Any]], model_tools: ModelTools, run: _Run
    ) -> None:
        """Fallback: tool calls written as JSON in the text; results go back as a user message."""
        calls = calls_in_content(content)
        if not calls:
            raise _AttemptFailed(f"malformed output: no tool call in {_clip(content.strip(), 200)!r}")
        messages.append({"role": "assistant", "content": content})
        # A server that did not parse tool calls may not render `tool` messages either: plain text is safe.
        results = [f"{c.name} -> {self._execute(c, model_tools, run)}" for c in calls]
        messages.append({"role": "user", "content": "Tool results:\n" + "\n".join(results)})

    def _execute(self, call: _Call, model_tools: ModelTools, run: _Run) -> str:
        """Run one call and return its result as JSON text; errors go back to the model."""
        run.tool_calls += 1
        try:
            result = model_tools.call(call.name, parse_arguments(call.arguments))
        except (ToolError, TypeError, ValueError) as exc:
            return self._tool_error(call, str(exc) or type(exc).__name__, run)
        return _clip(json.dumps(result, ensure_ascii=False, default=str), MAX_RESULT_CHARS)

    def _tool_error(self, call: _Call, message: str, run: _Run) -> str:
        run.tool_errors += 1
        run.last_error = f"{call.name}: {message}"
        log.debug("%s tool error %d: %s", self.name, run.tool_errors, run.last_error)
        if run.tool_errors > self.max_tool_errors:
            raise _AttemptFailed(
                f"too many tool errors ({run.tool_errors}); last: {_clip(run.last_error, 300)}", fatal=True
            )
        return json.dumps({"error": message}, ensure_ascii=False)


@contextmanager
def _undone_on_error(tools: WriterTools) -> Iterator[None]:
    """A nested transaction that also puts the tools' counters back when the block fails."""
    facts, mentions = list(tools.facts_written), dict(tools.entity_mentions)
    try:
        with db.transaction(tools.conn):
            yield
    except BaseException:
        _restore(tools, facts, mentions)
        raise


def _restore(tools: WriterTools, facts: list[str], mentions: dict[str, int]) -> None:
    """Put the tools' in-memory counters back in step with a rolled-back block."""
    tools.facts_written[:] = facts
    tools.entity_mentions.clear()
    tools.entity_mentions.update(mentions)
