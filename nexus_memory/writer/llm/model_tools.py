"""The writer's tools as a model calls them: declared with `tooling`, read leniently, run by `ModelTools`.

The seven tools (the six writer tools plus `finish`) are `Tool`s in one `ToolRegistry`, validated
against their JSON schemas like the agent tools. Small local models are the common caller, so the
registry first reads their arguments kindly (`lenient`: numbers given as text, times in several
formats, null for "not given"); what is still wrong after that is a `ToolError` the model can fix.
`ModelTools` turns the arguments (refs like e1) into calls on `WriterTools`, so both modes of the LLM
writer (the tool loop and the structured document) write through one implementation of dedup, entity
resolution and merges. In the tool loop its `insert_fact` first asks `check` (validation's
`EpisodeView.check`) whether the episode says the fact; a fact it drops is answered, not stored.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.textcheck import show
from nexus_memory.core.tooling import Tool, ToolError, ToolRegistry, object_schema
from nexus_memory.events.ledger import Event, InvalidRecord, parse_timestamp
from nexus_memory.facts.about import time_range
from nexus_memory.recall.arguments import recall_tool_schema
from nexus_memory.writer.base import EpisodeInput
from nexus_memory.writer.llm.episode import event_refs
from nexus_memory.writer.tools import (
    WRITER_DEFAULT_MAX_RESULTS,
    WRITER_DEFAULT_SCOPE,
    WRITER_MAX_RESULTS,
    WRITER_SCOPES,
    WriterTools,
)

# -- lenient reading of a small model's arguments --------------------------------------------------
# unix ms, unix seconds or ISO 8601 text
_TIMES = frozenset({"as_of", "about_start", "about_end", "time_after", "time_before"})
# Asked for in the schemas but defaulted here: a finish without a summary still ends the episode,
# and a fact from a one-event episode can only come from that event (ModelTools.source_event).
_DEFAULTS: dict[str, dict[str, Any]] = {"finish": {"summary": ""}, "insert_fact": {"source_event_id": ""}}


def lenient(tool: Tool, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A model's arguments read kindly, before the shared validation; also returns notes for the model.

    null is "not given"; a number where text is expected is its text; a number written as text is the
    number; one string where a list is expected is a list of it; a time is unix ms, and one that cannot
    be read (a year, "yesterday") is left out with a note, so the tool's default applies. Anything else
    goes to validation as it came.
    """
    properties = tool.parameters["properties"]
    out: dict[str, Any] = dict(_DEFAULTS.get(tool.name, {}))
    notes: list[str] = []
    for key, value in arguments.items():
        if value is None:
            continue
        if key in _TIMES and key in properties:
            value = _time(value, key)
            if value is None:
                notes.append(f"{key} {show(arguments[key])} is not a time (unix ms or ISO 8601), so it was left out")
                continue
        elif key in properties:
            value = _coerced(properties[key].get("type"), value)
        out[key] = value
    start = arguments.get("about_start")
    if "about_start" in out and isinstance(start, str) and arguments.get("about_end") is None:
        out["about_end"] = _time(start, "about_end")  # one ISO day or month alone is the whole of it
    return out, notes


def _time(value: Any, key: str) -> int | None:
    """Unix ms from unix ms, unix seconds or ISO text; None for anything else. An about-time may also be an ISO
    month or day: about_start is its first ms, about_end its last (an about_end of "2025-03-25" takes in that day)."""
    text = str(value).strip() if isinstance(value, int | float | str) and not isinstance(value, bool) else ""
    if text.lstrip("-").replace(".", "", 1).isdigit() and abs(float(text)) < 1e9:
        return None  # a bare number below 1e9 is a year or a count ("2024"), not unix seconds of 1970
    if key in ("about_start", "about_end") and isinstance(value, str):
        try:
            return time_range(text)[1 if key == "about_end" else 0]
        except (ValueError, OverflowError):
            pass  # not ISO 8601: parse_timestamp says
    try:
        return parse_timestamp(value)
    except InvalidRecord:
        return None


def _coerced(kind: Any, value: Any) -> Any:
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if kind == "string" and isinstance(value, str):
        return value.strip()
    if kind in ("number", "integer") and isinstance(value, str):
        try:
            number = int(value) if kind == "integer" else float(value)
        except ValueError:
            return value  # validation says what is wrong
        return number if math.isfinite(number) else value
    if kind == "array" and isinstance(value, str):
        return [value]
    return value


# -- what validation says of one fact ---------------------------------------------------------------
@dataclass(frozen=True)
class CheckedFact:
    """A fact validation keeps: the text to store, the event that says it, its time, and what was fixed."""

    text: str
    event: Event
    as_of: int  # when it was said: its event's time
    fixes: tuple[str, ...] = ()  # 'fact:recited', 'fact:speaker_rewritten'
    replaced: str = ""  # the participant the fact named in the sender's place, when it was given back
    about: tuple[int, int] | None = None  # first and last ms of the time it is about (validation.model_about)


class FactDropped(Exception):
    """Validation does not store this fact; `reason` is its drop key after 'fact:'."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


# (text, event, entity names, the model's about-time) -> the fact as it may be stored (validation's check)
FactCheck = Callable[[str, Event, tuple[str, ...], tuple[int, int] | None], CheckedFact]
# What the tool loop's model reads beside a dropped fact.
DROPPED_HINT = "store only what the new events say, citing the event that says it; go on, or call finish"


# -- the tools as the model sees them ------------------------------------------------------------
class ModelTools:
    """Runs a model's tool calls for one episode on `WriterTools`."""

    def __init__(self, tools: WriterTools, episode: EpisodeInput) -> None:
        self.tools = tools
        self.events = {e.id: e for e in episode.events}
        self.refs = dict(zip(event_refs(episode), episode.events, strict=True))
        self.finished = False
        self.summary = ""
        self.check: FactCheck | None = None  # the tool loop sets it: each insert_fact is judged before it is stored
        self.dropped: Counter[str] = Counter()  # facts `check` refused, by 'fact:<reason>'
        self.fixed: Counter[str] = Counter()  # facts `check` corrected, by 'fact:<fix>'

    def call(self, name: str, args: dict[str, Any] | str | None) -> Any:
        """Run one call; ToolError (bad name, arguments or request) leaves nothing behind."""
        # Some tools write several rows; a failure half-way must not leave the first ones.
        with undone_on_error(self.tools):
            return WRITER_TOOLS.call(name, args, self)

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

    def recall(self, query: str, **filters: Any) -> Any:
        """`WriterTools.recall`; the filters are those of the schema, already validated."""
        try:
            return self.tools.recall(query, **filters)
        except ImportError:
            # The recall engine is optional for writing: say so instead of failing the episode.
            raise ToolError("recall is not available here; go on without the dedup check") from None

    def insert_fact(
        self,
        text: str,
        source_event_id: str,
        as_of: int | None = None,
        metadata: dict[str, Any] | None = None,
        about_start: int | None = None,
        about_end: int | None = None,
    ) -> Any:
        """Two times (docs/stores.md): `as_of` when it was said (default: the event's time), and the time it is
        about: the model's about_start..about_end where validation accepts it (`model_about`), else validation's
        reading of the text's dates."""
        event = self.source_event(source_event_id)
        about = None if about_start is None else (about_start, max(about_start, about_end or about_start))
        if self.check is not None:
            try:
                checked = self.check(text, event, (), about)
            except FactDropped as exc:
                # Not a tool error: the call was right, the fact is not what the episode says.
                self.dropped[f"fact:{exc.reason}"] += 1
                return {"status": "dropped", "reason": exc.reason, "detail": exc.detail, "hint": DROPPED_HINT}
            self.fixed.update(checked.fixes)
            text, event = checked.text, checked.event
            as_of = checked.as_of if as_of is None else as_of
            about = checked.about
        when = event.as_of if as_of is None else as_of  # no (readable) time: the event's
        result = self.tools.insert_fact(
            text, when, ingested_at=event.as_of, source_event_id=event.id, metadata=metadata, about=about
        )
        return {**result, "as_of": when}

    def create_entity(self, name: str, type: str, source: str = "inferred") -> Any:
        kind = type.lower().replace(" ", "_").replace("-", "_")
        return self.tools.create_entity(name, kind, source=source)

    def link_fact_entity(self, fact_id: str, entity_id: str) -> Any:
        return self.tools.link_fact_entity(fact_id, entity_id)

    def insert_causal_link(self, from_fact_id: str, to_fact_id: str, strength: float) -> Any:
        return self.tools.insert_causal_link(from_fact_id, to_fact_id, strength)

    def propose_merge(self, entity_a_id: str, entity_b_id: str, confidence: float, reason: str) -> Any:
        return self.tools.propose_merge(entity_a_id, entity_b_id, confidence, reason)

    def finish(self, summary: str) -> Any:
        self.finished = True
        self.summary = summary
        return {"status": "finished"}


_S = {"type": "string"}
_N = {"type": "number"}
WRITER_TOOLS = ToolRegistry(
    [
        Tool(
            "recall",
            "Search memory for existing facts or entities (dedup checks, entity lookups).",
            recall_tool_schema(
                {
                    "query": {"description": "a few key words"},
                    "scope": {
                        "choices": WRITER_SCOPES,
                        "description": f"what to search, default {json.dumps(list(WRITER_DEFAULT_SCOPE))}; "
                        '["entities"] to find people and handles',
                    },
                    "entity": {},
                    # Read by `lenient` from unix ms, unix seconds or ISO text.
                    "time_after": {"type": ["integer", "string"], "description": "unix ms or ISO time"},
                    "time_before": {"type": ["integer", "string"], "description": "unix ms or ISO time"},
                    "platform": {},
                    "max_results": {
                        "minimum": 1,
                        "maximum": WRITER_MAX_RESULTS,
                        "description": f"How many results (default {WRITER_DEFAULT_MAX_RESULTS}).",
                    },
                    "budget": {},
                }
            ),
            ModelTools.recall,
        ),
        Tool(
            "insert_fact",
            "Store one atomic, durable fact as a plain sentence. Returns fact_id.",
            object_schema(
                {
                    "text": {**_S, "description": "the fact, one self-contained sentence with real names"},
                    "as_of": {
                        "type": "integer",
                        "description": "when it was said, unix ms; omit for the event's time",
                    },
                    # Read by `lenient` from unix ms or ISO text (a day or month: its first / last ms).
                    "about_start": {
                        "type": ["integer", "string"],
                        "description": "the time the fact is about, if it names one: an ISO day or month, or its "
                        "first unix ms",
                    },
                    "about_end": {
                        "type": ["integer", "string"],
                        "description": "the end of that span, in the same forms; omit for one day or moment",
                    },
                    "source_event_id": {**_S, "description": "ref (e1, e2, ...) or id of the new event it comes from"},
                    "metadata": {"type": "object", "description": "optional extra details"},
                },
                ["text", "source_event_id"],
            ),
            ModelTools.insert_fact,
        ),
        Tool(
            "create_entity",
            "Create an entity, or get the existing one with the same name and type. Returns entity_id.",
            object_schema(
                {
                    "name": _S,
                    "type": {**_S, "description": "person, organization, project, location, email, phone, ..."},
                    "source": {"type": "string", "enum": ["inferred", "user", "import"]},
                },
                ["name", "type"],
            ),
            ModelTools.create_entity,
        ),
        Tool(
            "link_fact_entity",
            "Link a fact to an entity it is about.",
            object_schema({"fact_id": _S, "entity_id": _S}, ["fact_id", "entity_id"]),
            ModelTools.link_fact_entity,
        ),
        Tool(
            "insert_causal_link",
            "Record that one fact caused another; only when the text says so explicitly.",
            object_schema(
                {
                    "from_fact_id": {**_S, "description": "the cause"},
                    "to_fact_id": {**_S, "description": "the effect"},
                    "strength": {**_N, "minimum": 0, "maximum": 1},
                },
                ["from_fact_id", "to_fact_id", "strength"],
            ),
            ModelTools.insert_causal_link,
        ),
        Tool(
            "propose_merge",
            "Propose that entity b is the same as entity a (b merges into a).",
            object_schema(
                {
                    "entity_a_id": _S,
                    "entity_b_id": _S,
                    "confidence": {**_N, "minimum": 0, "maximum": 1},
                    "reason": _S,
                },
                ["entity_a_id", "entity_b_id", "confidence", "reason"],
            ),
            ModelTools.propose_merge,
        ),
        Tool(
            "finish",
            "End the episode once everything worth remembering is stored (or nothing is).",
            object_schema({"summary": {**_S, "description": "one line: what was stored"}}, ["summary"]),
            ModelTools.finish,
        ),
    ],
    coerce=lenient,
)
OPENAI_TOOLS = WRITER_TOOLS.schemas()
TOOL_SCHEMAS: list[dict[str, Any]] = [tool["function"] for tool in OPENAI_TOOLS]
TOOL_NAMES = WRITER_TOOLS.names


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
