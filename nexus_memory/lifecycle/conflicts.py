"""Conflicts: a fact contradicting another one about the same entity, the earlier one superseded.

Every fact written since the last run (lifecycle_runs watermark, by facts.rowid) is compared with the
other visible facts about the entity it is about. Offline, a conflict is what a rule can tell honestly
(statements.py): the same subject entity, the same kind of current-state statement ("lives in", "works
at", a favorite), a different value, and different times; the earlier fact is the one superseded,
whichever arrived first. Two people, two facts of one message, past or planned states, and facts stated
at the same moment are never conflicts. With an LLM configured, the model is asked instead, once per
new fact, about that entity's latest facts (one `LLMClient.structured_call`).

Resolution: the earlier fact keeps confidence 0.3 and records which fact supersedes it (fact_state),
the pair goes into fact_conflicts, and what rests on both is marked stale so the observation can say
how things changed. Nothing is hidden: the old fact stays true for its time.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import day_of, now_ms
from nexus_memory.core.stores import Stores
from nexus_memory.facts import state
from nexus_memory.facts.state import hidden_sql
from nexus_memory.identity.store import normalize
from nexus_memory.lifecycle import reconsolidate, runs
from nexus_memory.lifecycle.statements import Statement, read_statement
from nexus_memory.llm.client import Budget, LLMClient, LLMError, Usage

CANDIDATES_PER_ENTITY = 200  # earlier facts about an entity compared offline
LLM_CANDIDATES = 20  # facts about an entity shown to the model
LLM_FACTS_PER_RUN = 500  # one call each: a large backlog is worked off over several nights
BATCH = 1_000


@dataclass(frozen=True)
class Fact:
    id: str
    text: str
    as_of: int
    source_event_id: str | None


@dataclass(frozen=True)
class Conflict:
    """`old` (the earlier fact) is superseded by `new` about `entity_id`."""

    old: str
    new: str
    entity_id: str
    statement: str


@dataclass
class ConflictReport:
    facts_checked: int = 0
    conflicts_found: int = 0
    detector: str = "offline"
    failures: list[str] = field(default_factory=list)  # one line per fact the model could not judge
    observations_stale: int = 0
    mental_models_stale: int = 0
    watermark: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def detect_conflicts(
    stores: Stores, *, now: int | None = None, use_llm: bool | None = None, limit: int | None = None
) -> ConflictReport:
    """Check the facts written since the last run; resolve what conflicts. Rerunnable: a fact the model
    failed on holds the watermark back, so the next run looks at it again (resolving is idempotent)."""
    started = time.perf_counter()
    now = now_ms() if now is None else now
    conn, settings = stores.conn, stores.settings
    llm = settings.llm_enabled if use_llm is None else use_llm
    client = LLMClient.for_operation(settings, "consolidation") if llm else None
    report = ConflictReport(detector=f"llm:{client.model}" if client else "offline")
    limit = LLM_FACTS_PER_RUN if client and limit is None else limit
    watermark = runs.last_watermark(conn, "conflicts")
    report.watermark = watermark
    held_back: int | None = None
    while limit is None or report.facts_checked < limit:
        rows = conn.execute(
            f"""SELECT f.rowid, f.id, f.text, f.as_of, f.source_event_id FROM facts f
                WHERE f.rowid > ? AND NOT {hidden_sql("f")} ORDER BY f.rowid LIMIT ?""",
            (report.watermark, BATCH if limit is None else min(BATCH, limit - report.facts_checked)),
        ).fetchall()
        if not rows:
            break
        for row in rows:
            fact = Fact(row[1], row[2], row[3], row[4])
            try:
                found = _judge_llm(conn, client, fact) if client else find_conflicts(conn, fact)
            except LLMError as exc:
                report.failures.append(f"{fact.id}: {exc}")
                held_back = row[0] - 1 if held_back is None else held_back
                found = []
            if found:
                with db.transaction(conn):
                    for conflict in found:
                        report.conflicts_found += resolve(conn, conflict, report.detector, now, report)
            report.facts_checked += 1
            report.watermark = row[0]
    report.seconds = round(time.perf_counter() - started, 3)
    with db.transaction(conn):
        final = report.watermark if held_back is None else held_back
        runs.record_run(conn, "conflicts", now, now_ms(), report.as_dict(), watermark=final)
    return report


def resolve(conn: db.Connection, conflict: Conflict, detector: str, now: int, report: ConflictReport) -> int:
    """Record the conflict, lower the earlier fact, mark what rests on both stale; returns 1 when it was new."""
    inserted = conn.execute(
        """INSERT OR IGNORE INTO fact_conflicts (old_fact_id, new_fact_id, entity_id, detector, statement, created_at)
           VALUES (?, ?, ?, ?, ?, ?)""",
        (conflict.old, conflict.new, conflict.entity_id, detector, conflict.statement, now),
    ).rowcount
    state.lower_confidence(conn, conflict.old, conflict.new, now)
    marks = reconsolidate.mark_stale(conn, [conflict.old, conflict.new])
    report.observations_stale += marks.observations
    report.mental_models_stale += marks.mental_models
    return inserted


def find_conflicts(conn: db.Connection, fact: Fact) -> list[Conflict]:
    """The offline rule (module docstring)."""
    statement = read_statement(fact.text)
    if statement is None:
        return []
    subject = _subject_entity(conn, fact.id, statement)
    if subject is None:
        return []
    found = []
    for other in _entity_facts(conn, subject, fact, CANDIDATES_PER_ENTITY):
        if other.as_of == fact.as_of or (other.source_event_id and other.source_event_id == fact.source_event_id):
            continue
        theirs = read_statement(other.text)
        if theirs is None or not theirs.same_slot(statement) or not theirs.differs(statement):
            continue
        if _subject_entity(conn, other.id, theirs) != subject:
            continue
        old, new = (other, fact) if other.as_of < fact.as_of else (fact, other)
        found.append(Conflict(old.id, new.id, subject, statement.kind))
    return found


def _subject_entity(conn: db.Connection, fact_id: str, statement: Statement) -> str | None:
    """The linked entity the statement's subject names (by name or alias), if exactly one."""
    key = normalize(statement.subject)
    rows = conn.execute(
        """SELECT DISTINCT fe.entity_id FROM fact_entities fe JOIN entities e ON e.id = fe.entity_id
           WHERE fe.fact_id = ? AND (e.normalized = ?
                 OR EXISTS (SELECT 1 FROM aliases a WHERE a.entity_id = e.id AND a.normalized = ?))""",
        (fact_id, key, key),
    ).fetchall()
    return rows[0][0] if len(rows) == 1 else None


def _entity_facts(conn: db.Connection, entity_id: str, fact: Fact, limit: int) -> list[Fact]:
    """Other visible facts about the entity, newest first."""
    rows = conn.execute(
        f"""SELECT f.id, f.text, f.as_of, f.source_event_id FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
            WHERE fe.entity_id = ? AND f.id != ? AND NOT {hidden_sql("f")} ORDER BY fe.as_of DESC LIMIT ?""",
        (entity_id, fact.id, limit),
    ).fetchall()
    return [Fact(*r) for r in rows]


_SCHEMA = {
    "type": "object",
    "properties": {
        "contradicted": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"fact_id": {"type": "string"}, "statement": {"type": "string"}},
                "required": ["fact_id", "statement"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["contradicted"],
    "additionalProperties": False,
}
_SYSTEM = (
    "You check a memory for contradictions. You get one NEW fact and numbered EARLIER facts about the same "
    "person or thing, each with its date. List the earlier facts the new fact shows are no longer true "
    "(the same attribute now has another value: moved, changed jobs, a new favorite). Do NOT list facts "
    "about other people, facts that can both be true, or past events that stay true. When unsure, list "
    'nothing. Answer JSON: {"contradicted": [{"fact_id": "...", "statement": "residence|employer|..."}]}.'
)


def _judge_llm(conn: db.Connection, client: LLMClient, fact: Fact) -> list[Conflict]:
    """Ask the model which facts about the new fact's entities it contradicts (ids checked, times ordered)."""
    entities = [r[0] for r in conn.execute("SELECT entity_id FROM fact_entities WHERE fact_id = ?", (fact.id,))]
    shown: dict[str, tuple[Fact, str]] = {}
    for entity_id in entities:
        for other in _entity_facts(conn, entity_id, fact, LLM_CANDIDATES):
            if other.source_event_id != fact.source_event_id or not fact.source_event_id:
                shown.setdefault(other.id, (other, entity_id))
    if not shown:
        return []
    lines = [f"NEW ({day_of(fact.as_of)}): {fact.text}", "EARLIER:"]
    lines += [f"- {f.id} ({day_of(f.as_of)}): {f.text}" for f, _ in shown.values()]
    messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(lines)}]

    def names_only_shown_facts(answer: dict[str, Any]) -> None:
        for item in answer["contradicted"]:
            if item["fact_id"] not in shown:
                raise ValueError(f"the answer names a fact it was not shown: {str(item)[:120]}")

    # No retry: a fact the model failed on holds the watermark back, so the next run asks again.
    result = client.structured_call(
        _SCHEMA, messages, Budget(), Usage(), name="conflicts", retries=0, check=names_only_shown_facts
    )
    found = []
    for item in result.data["contradicted"]:
        other, entity_id = shown[item["fact_id"]]
        if other.as_of == fact.as_of:
            continue
        old, new = (other, fact) if other.as_of < fact.as_of else (fact, other)
        found.append(Conflict(old.id, new.id, entity_id, str(item.get("statement") or "llm")[:40]))
    return found
