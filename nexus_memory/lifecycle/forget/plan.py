"""What one forget request removes: the events, facts and entities it reaches, worked out before anything is deleted.

Forgetting works on evidence, because the ledger is immutable and every fact rests on an event:
  - an event: the event, and every fact extracted from it;
  - a fact: the fact, the event it was extracted from (which says the same thing, and would give it back
    on the next extraction), and the other facts of that event;
  - a sender: every event whose sender is that handle, and their facts; and the handle's identity rows,
    even when none of its events are left: an entity that is nothing but this handle goes whole, and on
    an entity that stays (the owner, one with other handles or with entities merged into it) the
    handle's contacts and aliases go;
  - an entity (name, alias or id): the entity and every entity merged into it; the facts linked to them
    or naming them; the events those facts came from, the events that name them, and the messages they
    sent or received through their handles; and the facts of all those events.
    Other handles may be the same person without being merged (a phone and an email address): the plan
    lists them (`candidates`: either side of a pending merge candidate, or a handle whose messages were
    shown under one of the entity's display names), and `include_candidates` takes them along.
Entities that existed only because of the forgotten facts (no other fact, contact or session) go too.
`texts` holds the forgotten text in memory only, to find copies of it elsewhere (rejected records,
mental models, dossiers); it is never written anywhere.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from nexus_memory.core import db
from nexus_memory.core.textcheck import show, unicode_problem
from nexus_memory.identity.handles import looks_like_handle
from nexus_memory.identity.store import canonical_id, delivered_entity, normalize

TARGET_KINDS = ("event", "fact", "sender", "entity")
MIN_NAME_CHARS = 3  # shorter names and aliases ('Al', 'J') are not searched for in text: they match too much


class ForgetError(ValueError):
    """A forget request that cannot be carried out as asked (unknown or ambiguous target)."""


@dataclass(frozen=True)
class Target:
    """What a person asked to forget."""

    kind: str  # 'event' | 'fact' | 'sender' | 'entity'
    value: str
    include_candidates: bool = False  # an entity: take along the other handles that may be the same person

    def __post_init__(self) -> None:
        if self.kind not in TARGET_KINDS:
            raise ForgetError(f"forget target must be one of {list(TARGET_KINDS)}, not {show(self.kind)}")
        if not isinstance(self.value, str) or not self.value.strip():
            raise ForgetError(f"forget --{self.kind} needs a non-empty value")
        if problem := unicode_problem(self.value):
            raise ForgetError(f"forget --{self.kind}: the value {problem}")
        if self.include_candidates and self.kind != "entity":
            raise ForgetError("include candidates goes with an entity: the other handles of one person")


@dataclass(frozen=True)
class Candidate:
    """Another entity that may be the same person as the one forgotten, and why."""

    entity_id: str
    name: str
    handles: list[str]  # 'platform:handle' of its contacts
    why: str


@dataclass
class ForgetPlan:
    """The ids one forget removes (and, in memory only, the text they held)."""

    target: Target
    logged_target: str  # what the deletion log names: an id, or for a sender the sha256 of the handle
    event_ids: list[str] = field(default_factory=list)
    fact_ids: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)  # forgotten whole (target family and orphans)
    candidates: list[Candidate] = field(default_factory=list)  # an entity's other handles that may be the person
    handles: list[str] = field(default_factory=list)  # a sender's handle, where its rows sit on entities that stay
    texts: list[str] = field(default_factory=list)  # forgotten text (never stored)
    names: list[str] = field(default_factory=list)  # the entity target's names, matched as whole words
    rare_words: list[str] = field(default_factory=list)  # words no remaining fact uses (set once facts are gone)

    def summary(self) -> dict[str, int]:
        return {"events": len(self.event_ids), "facts": len(self.fact_ids), "entities": len(self.entity_ids)}


def make_plan(conn: db.Connection, target: Target) -> ForgetPlan:
    """Resolve the target and close over what rests on it (module docstring)."""
    value = target.value.strip()
    plan = ForgetPlan(target, value)
    events: set[str] = set()
    facts: set[str] = set()
    if target.kind == "event":
        if not _exists(conn, "events", value) and not _facts_of_events(conn, [value]):
            raise ForgetError(f"no event with id {show(value)}")
        events.add(value)
    elif target.kind == "fact":
        row = conn.execute("SELECT source_event_id FROM facts WHERE id = ?", (value,)).fetchone()
        if row is None:
            raise ForgetError(f"no fact with id {show(value)}")
        facts.add(value)
        if row[0]:
            events.add(row[0])
    elif target.kind == "sender":
        plan.logged_target = "sha256:" + hashlib.sha256(value.lower().encode()).hexdigest()
        events.update(r[0] for r in conn.execute("SELECT id FROM events WHERE lower(sender_id) = lower(?)", (value,)))
        plan.entity_ids, kept_rows = _handle_identity(conn, value)
        if not events and not plan.entity_ids and not kept_rows:
            raise ForgetError("no events from that sender, and no contact, alias or entity of it")
        plan.handles = [value] if kept_rows else []
        plan.texts.append(value)
    else:
        family = _family(conn, _entity_named(conn, value))
        plan.logged_target = family[0]
        plan.candidates = _candidates(conn, family)
        if target.include_candidates:
            for candidate in plan.candidates:
                family += [e for e in _family(conn, candidate.entity_id) if e not in family]
        plan.entity_ids = family
        plan.names = _names_of(conn, family)
        facts.update(_facts_linked(conn, family))
        facts.update(_facts_naming(conn, plan.names))
        events.update(_source_events(conn, facts))
        events.update(_events_of_handles(conn, family))
        events.update(_events_naming(conn, plan.names))
    facts.update(_facts_of_events(conn, sorted(events)))
    plan.event_ids = sorted(events)
    plan.fact_ids = sorted(facts)
    plan.entity_ids += [e for e in _orphans(conn, plan.fact_ids) if e not in plan.entity_ids]
    plan.texts += _texts(conn, plan.event_ids, plan.fact_ids)
    return plan


def _exists(conn: db.Connection, table: str, row_id: str) -> bool:
    return conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (row_id,)).fetchone() is not None


def _facts_of_events(conn: db.Connection, event_ids: Sequence[str]) -> list[str]:
    return db.column_in(conn, "SELECT id FROM facts WHERE source_event_id IN ({marks})", event_ids)


def _source_events(conn: db.Connection, fact_ids: Iterable[str]) -> list[str]:
    sql = "SELECT source_event_id FROM facts WHERE id IN ({marks}) AND source_event_id IS NOT NULL"
    return db.column_in(conn, sql, sorted(fact_ids))


def _entity_named(conn: db.Connection, value: str) -> str:
    """The one live entity an id, name or alias names."""
    from nexus_memory.recall.engine import resolve_entity

    matches = resolve_entity(conn, value)
    if not matches:
        raise ForgetError(f"no entity named {show(value)}")
    if len(matches) > 1:
        listed = ", ".join(
            f"{r[0]} ({r[1]}, {r[2]})"
            for r in conn.execute(
                f"SELECT id, name, type FROM entities WHERE id IN ({db.placeholders(matches)}) ORDER BY id", matches
            )
        )
        raise ForgetError(f"{show(value)} names {len(matches)} entities: {listed}; forget one by its id")
    return matches[0]


def _family(conn: db.Connection, entity_id: str) -> list[str]:
    """The entity, then every entity merged into it."""
    rows = conn.execute(
        """WITH RECURSIVE family(id) AS (
               SELECT ? UNION SELECT e.id FROM entities e JOIN family ON e.merged_into = family.id)
           SELECT id FROM family""",
        (entity_id,),
    ).fetchall()
    return [entity_id, *sorted(r[0] for r in rows if r[0] != entity_id)]


def _candidates(conn: db.Connection, family: Sequence[str]) -> list[Candidate]:
    """Live entities that may be the same person as `family` without being merged into it: the other side of a
    pending merge candidate, or the sender of messages shown under one of the family's display names (the
    identity store gives a display name to the first handle that shows it only, so the ledger is asked)."""
    members, marks = set(family), db.placeholders(family)
    why: dict[str, str] = {}
    pending = conn.execute(
        f"""SELECT entity_a_id, entity_b_id, confidence, reason FROM merge_candidates
            WHERE status = 'pending' AND (entity_a_id IN ({marks}) OR entity_b_id IN ({marks}))
            ORDER BY created_at""",
        [*family, *family],
    ).fetchall()
    for a, b, confidence, reason in pending:
        why.setdefault(canonical_id(conn, b if a in members else a), f"pending merge ({confidence:.2f}): {reason}")
    names = {
        normalize(r[0]): r[0]
        for r in conn.execute(
            f"""SELECT alias FROM aliases WHERE entity_id IN ({marks}) AND alias_type = 'display_name'
                UNION SELECT name FROM entities WHERE id IN ({marks}) AND source != 'delivery'""",
            [*family, *family],
        )
        if len(r[0]) >= MIN_NAME_CHARS and not looks_like_handle(r[0])
    }
    if names:
        senders = conn.execute(
            f"""SELECT DISTINCT platform, sender_id, sender_name FROM events
                WHERE lower(trim(sender_name)) IN ({db.placeholders(list(names))})""",
            [n.lower() for n in names],
        ).fetchall()
        for platform, handle, shown in senders:
            entity_id = delivered_entity(conn, platform, handle) if normalize(shown) in names else None
            if entity_id is not None:
                why.setdefault(entity_id, f"sent messages shown as {show(shown)} ({platform}:{handle})")
    found = []
    for entity_id, reason in why.items():
        row = conn.execute("SELECT name, is_user FROM entities WHERE id = ?", (entity_id,)).fetchone()
        if entity_id in members or row is None or row[1]:
            continue  # the owner's handles share names with everyone they wrote to: never a candidate
        handles = [
            f"{r[0]}:{r[1]}"
            for r in conn.execute("SELECT platform, handle FROM contacts WHERE entity_id = ?", (entity_id,))
        ]
        found.append(Candidate(entity_id, row[0], sorted(handles), reason))
    return found


def _handle_identity(conn: db.Connection, handle: str) -> tuple[list[str], bool]:
    """A sender handle's identity rows: the entities that are nothing but this handle (named by it, not the
    owner, no other handle, nothing merged into them), forgotten whole; and whether contacts or aliases of
    the handle sit on entities that stay."""
    key = normalize(handle)
    holders = conn.execute(
        """SELECT entity_id FROM contacts WHERE lower(handle) = lower(?) UNION SELECT entity_id FROM aliases
           WHERE normalized = ? UNION SELECT id FROM entities WHERE normalized = ?""",
        (handle, key, key),
    ).fetchall()
    whole, kept = [], False
    for (entity_id,) in holders:
        row = conn.execute(
            """SELECT e.normalized = ? AND NOT e.is_user
                      AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.entity_id = e.id AND lower(c.handle) != lower(?))
                      AND NOT EXISTS (SELECT 1 FROM entities m WHERE m.merged_into = e.id)
               FROM entities e WHERE e.id = ?""",
            (key, handle, entity_id),
        ).fetchone()
        if row is not None and row[0]:
            whole.append(entity_id)
        else:
            kept = True
    return sorted(whole), kept


def _names_of(conn: db.Connection, family: Sequence[str]) -> list[str]:
    marks = db.placeholders(family)
    rows = conn.execute(
        f"SELECT name FROM entities WHERE id IN ({marks}) UNION SELECT alias FROM aliases WHERE entity_id IN ({marks})",
        [*family, *family],
    ).fetchall()
    names = {" ".join(r[0].split()) for r in rows if r[0]}
    return sorted((n for n in names if len(n) >= MIN_NAME_CHARS), key=lambda n: (-len(n), n))


def _facts_linked(conn: db.Connection, family: Sequence[str]) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            f"SELECT DISTINCT fact_id FROM fact_entities WHERE entity_id IN ({db.placeholders(family)})", family
        )
    ]


def name_pattern(names: Sequence[str]) -> re.Pattern[str] | None:
    """Any of the names as a whole word, case-insensitive."""
    if not names:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in names) + r")(?!\w)", re.IGNORECASE)


def _facts_naming(conn: db.Connection, names: Sequence[str]) -> list[str]:
    """Facts whose text names the entity without being linked to it (keyword index, then a whole-word check)."""
    pattern = name_pattern(names)
    found: list[str] = []
    for name in names:
        terms = re.findall(r"\w+", name)
        if not terms or pattern is None:
            continue
        phrase = '"' + " ".join(terms) + '"'
        rows = conn.execute(
            "SELECT f.id, f.text FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid WHERE facts_fts MATCH ?",
            (phrase,),
        ).fetchall()
        found += [r[0] for r in rows if pattern.search(r[1])]
    return found


def _events_of_handles(conn: db.Connection, family: Sequence[str]) -> list[str]:
    """Messages the entity sent or received through one of its contact handles."""
    found: list[str] = []
    handles = conn.execute(
        f"SELECT platform, handle FROM contacts WHERE entity_id IN ({db.placeholders(family)})", family
    ).fetchall()
    for platform, handle in handles:
        found += [
            r[0]
            for r in conn.execute(
                "SELECT id FROM events WHERE platform = ? AND (sender_id = ? OR peer_id = ?)",
                (platform, handle, handle),
            )
        ]
    return found


def _events_naming(conn: db.Connection, names: Sequence[str]) -> list[str]:
    """Events whose text names the entity (one scan of the ledger, then a whole-word check)."""
    pattern = name_pattern(names)
    if pattern is None:
        return []
    where = " OR ".join(["instr(lower(content), ?) OR instr(lower(coalesce(sender_name, '')), ?)"] * len(names))
    args = [a for n in names for a in (n.lower(), n.lower())]
    rows = conn.execute(f"SELECT id, content, sender_name FROM events WHERE {where}", args).fetchall()
    return [r[0] for r in rows if pattern.search(r[1]) or (r[2] and pattern.search(r[2]))]


def _orphans(conn: db.Connection, fact_ids: Sequence[str]) -> list[str]:
    """Entities linked to the forgotten facts that nothing else keeps: no other fact, contact or session."""
    if not fact_ids:
        return []
    doomed = set(fact_ids)
    linked = db.column_in(conn, "SELECT DISTINCT entity_id FROM fact_entities WHERE fact_id IN ({marks})", fact_ids)
    orphans = []
    for entity_id in sorted(linked):
        row = conn.execute(
            """SELECT e.is_user OR e.source = 'delivery' OR e.merged_into IS NOT NULL
                      OR EXISTS (SELECT 1 FROM contacts c WHERE c.entity_id = e.id)
                      OR EXISTS (SELECT 1 FROM sessions s WHERE s.entity_id = e.id)
                      OR EXISTS (SELECT 1 FROM entities m WHERE m.merged_into = e.id)
               FROM entities e WHERE e.id = ?""",
            (entity_id,),
        ).fetchone()
        if row is None or row[0]:
            continue
        others = conn.execute(
            "SELECT fact_id FROM fact_entities WHERE entity_id = ? LIMIT ?", (entity_id, len(doomed) + 1)
        ).fetchall()
        if all(r[0] in doomed for r in others):
            orphans.append(entity_id)
    return orphans


def _texts(conn: db.Connection, event_ids: Sequence[str], fact_ids: Sequence[str]) -> list[str]:
    texts = db.column_in(conn, "SELECT content FROM events WHERE id IN ({marks})", event_ids)
    texts += db.column_in(conn, "SELECT text FROM facts WHERE id IN ({marks})", fact_ids)
    return [t for t in dict.fromkeys(texts) if t and t.strip()]
