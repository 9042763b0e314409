"""The agent tools that write facts: remember_fact, correct_fact, confirm_fact, and forget.

Facts are immutable (docs/layers.md), which shapes them. Both writes insert through facts.insert, with the
writer's checks (a fact of at most 2000 characters) and its messages:
  - both take the time the fact is about, when it names one (about_start, about_end: ISO dates, months, years or
    date-times, facts/about.py); the time it was said is the call's. Without one, the time the text names is
    read as the offline writer reads it (writer/extractor/dates.py `read_dates`: relative phrases against the
    call's time and the verb's tense, and explicit dates); a text that names none stores none;
  - remember_fact inserts a fact with platform 'memory_tool' and metadata {"source": "user"}; one a
    visible fact already says (nearly the same words, within a day) is not inserted: the answer is that
    fact's id, text and entities with "duplicate": true, and nothing is written or set off;
  - correct_fact inserts the replacement (always: it is near the fact it corrects by nature) with metadata
    {"supersedes": <old id>} and hides the old one beside it (fact_state, lifecycle/corrections.py):
    recall never returns it again, and what was built on it is marked stale;
  - confirm_fact protects a fact from decay (rate 0, confidence 1; lifecycle/corrections.py);
  - forget without confirm=true only says what would be removed, and which other handles may be the same
    person (include_candidates takes them along); with it, removes it everywhere (lifecycle/forget). The
    CLI's `forget` goes through the same call.
A fact either write tool stores gets, once committed, what the pipeline gives the facts it writes
(agents/writes.py `fact_side_effects`): entity co-occurrences, merge candidates for new names that overlap
known ones, and its vector, so it is found by meaning right away. Those are reported in the result
(`side_effects`); one that fails is reported there in one line and the fact stands (a fact left
without a vector is embedded by the pipeline's next embeddings run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nexus_memory.agents.tools.common import FACT_ID, MAX_NAME, MAX_TEXT, CallContext
from nexus_memory.agents.writes import fact_side_effects, last_entity_rowid
from nexus_memory.core import db
from nexus_memory.core.ids import now_ms
from nexus_memory.core.tooling import Tool, ToolError, object_schema
from nexus_memory.facts.about import MAX_ABOUT_CHARS, about_span
from nexus_memory.facts.insert import MAX_FACT_CHARS, Dedup, insert_fact
from nexus_memory.identity import store as identity
from nexus_memory.lifecycle import corrections
from nexus_memory.lifecycle.forget import TARGET_KINDS, ForgetError, Target, forget_or_preview
from nexus_memory.recall.engine import TOOL_PLATFORM
from nexus_memory.recall.query_entities import match_query_entities
from nexus_memory.writer.extractor.dates import read_dates


@dataclass(frozen=True)
class _Written:
    """A fact a write tool stored, or the stored near-duplicate that kept it out (`duplicate`: nothing written)."""

    fact_id: str
    text: str  # as stored
    entities: list[str]  # names of the entities it is linked to
    duplicate: bool


def _insert_fact(
    call: CallContext,
    text: str,
    metadata: dict[str, Any],
    names: Sequence[str],
    extra_entity_ids: Sequence[str] = (),
    *,
    dedup: Dedup,
    about: tuple[int, int] | None = None,
) -> _Written:
    """Insert a tool-written fact (facts.insert: the writer's checks and duplicate rule), said now and about
    `about` (None: the time its text names, if any), linked to named entities (created if new) and to entities
    the text names; or return the stored near-duplicate as it is."""
    conn, now = call.conn, now_ms()
    if about is None:  # an explicit about wins; else the one the text names, as the offline writer reads it
        about = read_dates(text, now).about
    inserted = insert_fact(
        conn,
        text,
        now,
        about=about,
        metadata=metadata,
        ingested_at=now,
        platform=TOOL_PLATFORM,
        session_id=call.session_id,
        dedup=dedup,
    )
    fact_id, duplicate = inserted["fact_id"], inserted["status"] == "duplicate"
    stored = _fact_row(conn, fact_id)["text"]
    if duplicate:
        entity_ids = [r[0] for r in conn.execute("SELECT entity_id FROM fact_entities WHERE fact_id = ?", (fact_id,))]
    else:
        entity_ids = [*extra_entity_ids]
        entity_ids += [
            identity.resolve_or_create(conn, n.strip(), "unknown", source="user", seen_at=now)
            for n in names
            if n.strip()
        ]
        entity_ids += match_query_entities(conn, stored)  # entities the text names that we already know
        entity_ids = list(dict.fromkeys(entity_ids))
        conn.executemany(
            "INSERT OR IGNORE INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, ?)",
            [(fact_id, e, now) for e in entity_ids],
        )
    names_of = _entity_names(conn, entity_ids)
    return _Written(fact_id, stored, [names_of[e] for e in entity_ids if e in names_of], duplicate)


def _entity_names(conn: db.Connection, entity_ids: list[str]) -> dict[str, str]:
    if not entity_ids:
        return {}
    rows = conn.execute(
        f"SELECT id, name FROM entities WHERE id IN ({db.placeholders(entity_ids)})", entity_ids
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def _fact_row(conn: db.Connection, fact_id: str) -> Any:
    row = conn.execute("SELECT id, text, as_of, platform, access_count FROM facts WHERE id = ?", (fact_id,)).fetchone()
    if row is None:
        raise ToolError(f"no fact with id {fact_id!r}")
    return row


def _about(about_start: str | None, about_end: str | None) -> tuple[int, int] | None:
    """The span a write tool's about_start / about_end name (facts/about.py), or None when neither is given."""
    if about_start is None:
        if about_end is not None:
            raise ToolError("about_end needs about_start (give both for a span, about_start alone for one time)")
        return None
    return about_span(about_start, about_end)


# The about-time as both write tools declare it.
ABOUT_PARAMETERS: dict[str, Any] = {
    "about_start": {
        "type": "string",
        "maxLength": MAX_ABOUT_CHARS,
        "description": "When what the fact says happens or holds, if it names a time (not when it was said, which "
        "is now): an ISO date (2025-03-14), month (2025-03), year (2025) or date-time; a span as "
        "2025-03-18/2025-03-25 or with about_end.",
    },
    "about_end": {
        "type": "string",
        "maxLength": MAX_ABOUT_CHARS,
        "description": "The end of that span, in the same forms (its whole day, month or year counts).",
    },
}


def _remember_fact(
    call: CallContext,
    text: str,
    entities: list[str] | None = None,
    about_start: str | None = None,
    about_end: str | None = None,
) -> dict[str, Any]:
    about = _about(about_start, about_end)
    entities_before = last_entity_rowid(call.stores)
    with call.stores.transaction():
        written = _insert_fact(call, text, {"source": "user"}, entities or [], dedup="visible facts", about=about)
    result = {"fact_id": written.fact_id, "text": written.text, "entities": written.entities}
    if written.duplicate:  # nothing was written, so nothing is set off
        return {**result, "duplicate": True}
    return {**result, "side_effects": fact_side_effects(call.stores, written.fact_id, entities_before, call.embedder)}


REMEMBER_FACT = Tool(
    "remember_fact",
    "Save one fact the user wants remembered, as a short standalone sentence. A fact already stored (nearly "
    "the same words, within a day) is not saved again: the answer is that fact, with duplicate=true.",
    object_schema(
        {
            "text": {
                "type": "string",
                "minLength": 1,
                "description": f"The fact (at most {MAX_FACT_CHARS} characters), e.g. 'Sarah's birthday is on 4 July'.",
            },
            "entities": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
                "maxItems": 50,
                "description": "Names of the people/places/things the fact is about.",
            },
            **ABOUT_PARAMETERS,
        },
        ["text"],
    ),
    _remember_fact,
)


def _correct_fact(
    call: CallContext,
    fact_id: str,
    new_text: str,
    reason: str | None = None,
    about_start: str | None = None,
    about_end: str | None = None,
) -> dict[str, Any]:
    about = _about(about_start, about_end)
    conn, rate = call.conn, call.stores.settings.decay_rate
    entities_before = last_entity_rowid(call.stores)
    with call.stores.transaction():
        old = _fact_row(conn, fact_id)
        corrections.check_correctable(conn, fact_id, rate)
        old_entities = [r[0] for r in conn.execute("SELECT entity_id FROM fact_entities WHERE fact_id = ?", (fact_id,))]
        metadata = {"source": "user", "supersedes": fact_id, "original_platform": old["platform"]}
        if reason:
            metadata["reason"] = reason
        # A correction is always written: it is near the fact it corrects by nature (facts.insert).
        written = _insert_fact(call, new_text, metadata, [], old_entities, dedup="off", about=about)
        stale = corrections.supersede(conn, fact_id, written.fact_id, now_ms())
    return {
        "fact_id": written.fact_id,
        "supersedes": fact_id,
        "old_text": old["text"],
        "text": written.text,
        "entities": written.entities,
        **stale,
        "side_effects": fact_side_effects(call.stores, written.fact_id, entities_before, call.embedder),
    }


CORRECT_FACT = Tool(
    "correct_fact",
    "Replace a wrong fact with the corrected one. The old fact stops being recalled.",
    object_schema(
        {
            "fact_id": FACT_ID,
            "new_text": {
                "type": "string",
                "minLength": 1,
                "description": f"The corrected fact (at most {MAX_FACT_CHARS} characters).",
            },
            "reason": {"type": "string", "maxLength": MAX_TEXT, "description": "Why it was wrong (optional)."},
            **ABOUT_PARAMETERS,
        },
        ["fact_id", "new_text"],
    ),
    _correct_fact,
)


def _confirm_fact(call: CallContext, fact_id: str) -> dict[str, Any]:
    result = corrections.confirm(call.conn, fact_id, now_ms(), call.stores.settings.decay_rate)
    return {"text": _fact_row(call.conn, fact_id)["text"], **result}


CONFIRM_FACT = Tool(
    "confirm_fact",
    "The user confirmed a fact is correct: it is protected and never fades from memory.",
    object_schema({"fact_id": FACT_ID}, ["fact_id"]),
    _confirm_fact,
)


def _forget(
    call: CallContext,
    target: str,
    value: str,
    reason: str | None = None,
    confirm: bool = False,
    include_candidates: bool = False,
) -> dict[str, Any]:
    requested_by = f"agent:{call.session_id}" if call.session_id else "agent"
    return forget_or_preview(
        call.stores,
        Target(target, value, include_candidates=include_candidates),
        confirm=confirm,
        requested_by=requested_by,
        reason=reason,
    )


FORGET = Tool(
    "forget",
    "Forget something everywhere, for good: one event (message), one fact, everything a sender said, or "
    "everything about an entity. First call without confirm to see what would go; call again with "
    "confirm=true only after the user agreed.",
    object_schema(
        {
            "target": {"type": "string", "enum": list(TARGET_KINDS), "description": "What kind of thing to forget."},
            "value": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_NAME,
                "description": "The event id, fact id, sender handle, or entity name or id.",
            },
            "reason": {"type": "string", "maxLength": MAX_TEXT, "description": "Why (kept in the deletion log)."},
            "confirm": {"type": "boolean", "description": "true: really forget (default false: only preview)."},
            "include_candidates": {
                "type": "boolean",
                "description": "An entity: also forget the other handles the preview lists as maybe the same "
                "person (default false).",
            },
        },
        ["target", "value"],
    ),
    _forget,
)

TOOLS = (REMEMBER_FACT, CORRECT_FACT, CONFIRM_FACT, FORGET)
# What the lifecycle refuses: a fact that cannot be corrected or confirmed, a target that cannot be forgotten.
REFUSALS: tuple[type[Exception], ...] = (corrections.LifecycleError, ForgetError)
