"""The writer's tools as a model calls them: JSON schemas, argument checks, and `ModelTools`.

`ModelTools` turns a model's arguments (refs like e1, times as ISO text or unix ms, loose types)
into calls on `WriterTools`, so both modes of the LLM writer (the tool loop and the structured
document) write through one implementation of validation, dedup, entity resolution and merges.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from nexus_memory import db
from nexus_memory.events import Event, InvalidRecord, parse_timestamp
from nexus_memory.writer.base import EpisodeInput
from nexus_memory.writer.llm.episode import event_refs
from nexus_memory.writer.tools import ToolError, WriterTools

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
        with undone_on_error(self.tools):
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


@contextmanager
def undone_on_error(tools: WriterTools) -> Iterator[None]:
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
