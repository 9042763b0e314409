"""The unified entity store (identity.db): entities, aliases, merge candidates, merges.

Rules that live here (see docs/decisions.md, "Writer and identity"):
- a message from an unknown handle creates a sparse delivery-sourced entity and a routable contact;
- a delivered handle resolves only through handles that were themselves delivered (its contact row, or
  the same handle in another lossless spelling, `handles.delivery_key`), never through a display name,
  a name said in conversation or a claimed handle: those can at most become a merge candidate;
- contact info mentioned in conversation becomes an entity, never a contact;
- only exact email/phone matches above 0.99 merge automatically ("prefer duplicates over false merges");
- until a person accepts a merge, a sender is named by its own handle or display name (`speaker_name`);
- a merge updates session aliases in the same transaction, or does not happen;
- a merge a person rejected is never proposed again: not in either order, and not after either side
  merged with something else (`rejection_between`); a review also leaves a line in the writer's notes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms, stable_id, ulid
from nexus_memory.identity import merge_journal, writer_notes
from nexus_memory.identity.entity import Entity
from nexus_memory.identity.handles import (
    EMAIL_RE,
    PHONE_RE,
    delivery_key,
    handle_type,
    look_alike_key,
    names_another_handle,
    shows_other_letters,
)


class Event(Protocol):
    """What identity reads of a delivered message; a ledger event (`nexus_memory.events.ledger.Event`) is one."""

    @property
    def id(self) -> str: ...
    @property
    def platform(self) -> str: ...
    @property
    def sender_id(self) -> str: ...
    @property
    def sender_name(self) -> str | None: ...
    @property
    def as_of(self) -> int: ...
    @property
    def direction(self) -> str: ...
    @property
    def session_id(self) -> str | None: ...


AUTO_MERGE_THRESHOLD = 0.99
AUTO_MERGE_TYPES = ("email", "phone")
# A delivered handle said in conversation before it was delivered: a merge candidate, never the same entity.
SAME_HANDLE_CONFIDENCE = 0.9
# Two of the owner's handles showing one display name: likely one person, for a person to accept.
OWNER_HANDLES_CONFIDENCE = 0.9


class MergeError(RuntimeError):
    """A merge that cannot be applied (missing entity, self-merge, failed propagation)."""


@functools.lru_cache(maxsize=65536)  # the same few names are looked up for every message; per character is slow
def normalize(name: str) -> str:
    """Lookup key for a name or handle: lower case, folded whitespace, phones reduced to digits.

    Only letters that are their own compatibility form are lower-cased: a KELVIN SIGN, a full-width
    letter or a ligature stays as it is, so a look-alike never shares a key with the name it imitates.
    """
    text = "".join(_fold_case(char) for char in " ".join(name.strip().split()))
    if PHONE_RE.match(text) and not EMAIL_RE.match(text):
        digits = re.sub(r"\D", "", text)
        return "+" + digits if text.startswith("+") else digits
    return text


def _fold_case(char: str) -> str:
    return char.lower() if unicodedata.normalize("NFKC", char) == char else char


_T = TypeVar("_T")
Question = tuple[str, ...]  # what `_read` remembers an answer to: ("entity", id), ("named", key), ...


class _Remembered:
    """The answers remembered on one connection by `lookups_remembered` blocks, and the questions a write
    in the current block made unsafe to remember: a nested transaction that rolls that write back would
    change their answer again."""

    def __init__(self, conn: db.Connection) -> None:
        self.conn = conn  # held, so that the id it is kept under is not another connection's
        self.schema = "identity" if any(r[1] == "identity" for r in conn.execute("PRAGMA database_list")) else "main"
        self.answers: dict[Question, Any] = {}
        self.unsafe: set[Question] = set()
        self.off = False  # after a merge, which can change any answer
        self.version: tuple[int, int] | None = None  # what `_version` said when the last block ended


REMEMBERED_ANSWERS = 200_000  # at most, on one connection (a 100k-event backfill has ~20k entities)
_remembered: dict[int, _Remembered] = {}  # the blocks open now, by id(conn): a connection takes no attributes
_kept: list[_Remembered] = []  # the last block's answers, for the next block on the same connection


def _version(memo: _Remembered) -> tuple[int, int]:
    """Changes to the identity store since: another connection's commit, or any write on this one."""
    return db.store_state(memo.conn, memo.schema)


@contextlib.contextmanager
def lookups_remembered(conn: db.Connection) -> Iterator[None]:
    """Inside, this module's reads on `conn` (entities, names, contacts) are asked of SQL once each.

    For the writer, one block per episode: it looks the same few senders and names up for every message
    and fact, and again in the next episode of the thread (~40 statements an episode). The answers stay
    for the next block on the same connection unless the identity store changed in between (another
    connection committed, or this one wrote anything: `_version`). Inside a block, a write here that
    changes an answer (an entity, alias or contact added) makes that question one asked of SQL each time
    until the block ends, and a merge all of them (`_changed`): a later read sees the write, and sees it
    undone when a nested transaction rolls it back. Identity rows must not be written inside a block
    other than through this module (the writer's tools write through it).
    """
    key = id(conn)
    if key in _remembered:  # nested: the outer block owns it
        yield
        return
    memo = _kept[0] if _kept and _kept[0].conn is conn else _Remembered(conn)
    if memo.off or memo.version != _version(memo) or len(memo.answers) > REMEMBERED_ANSWERS:
        memo = _Remembered(conn)
    memo.unsafe.clear()  # the last block's writes are committed or rolled back: its answers hold either way
    _remembered[key] = memo
    try:
        yield
    finally:
        del _remembered[key]
        memo.version = _version(memo)
        _kept[:] = [memo]


def forget_remembered(conn: db.Connection) -> None:
    """Drop the answers kept on `conn` for its next `lookups_remembered` block: a transaction around several
    blocks rolled back, so answers read after a block's writes may name rows that are gone again."""
    _kept[:] = [memo for memo in _kept if memo.conn is not conn]


def _changed(conn: db.Connection, *questions: Question) -> None:
    """An identity write on `conn` that changes the answer to `questions` (to every question when none
    are named): they are no longer remembered inside `lookups_remembered`."""
    memo = _remembered.get(id(conn))
    if memo is None:
        return
    if not questions:
        memo.off = True
        memo.answers.clear()
    for question in questions:
        memo.unsafe.add(question)
        memo.answers.pop(question, None)


def _read(conn: db.Connection, question: Question, read: Callable[[], _T]) -> _T:
    """`read()`, or its remembered answer inside `lookups_remembered` (answers are never mutated)."""
    memo = _remembered.get(id(conn))
    if memo is None or memo.off or question in memo.unsafe:
        return read()
    if question not in memo.answers:
        memo.answers[question] = read()
    return memo.answers[question]  # type: ignore[no-any-return]


def _row_entity(row: Any) -> Entity:
    return Entity(row["id"], row["name"], row["type"], row["source"], row["merged_into"])


def get_entity(conn: db.Connection, entity_id: str) -> Entity | None:
    return _read(conn, ("entity", entity_id), lambda: _entity_row(conn, entity_id))


def _entity_row(conn: db.Connection, entity_id: str) -> Entity | None:
    row = conn.execute("SELECT * FROM entities WHERE id = ?", (entity_id,)).fetchone()
    return _row_entity(row) if row else None


def canonical_id(conn: db.Connection, entity_id: str) -> str:
    """Follow merged_into to the surviving entity."""
    return _read(conn, ("canonical", entity_id), lambda: _follow_merges(conn, entity_id))


def _follow_merges(conn: db.Connection, entity_id: str) -> str:
    seen = set()
    while entity_id not in seen:
        seen.add(entity_id)
        row = conn.execute("SELECT merged_into FROM entities WHERE id = ?", (entity_id,)).fetchone()
        if not row or not row[0]:
            return entity_id
        entity_id = row[0]
    return entity_id


def find_entities(conn: db.Connection, name: str, *, type: str | None = None) -> list[Entity]:
    """Live entities whose name or alias normalises to `name` (merged ones resolve to their winner)."""
    key = normalize(name)
    found = _read(conn, ("named", key), lambda: _named_entities(conn, key))
    return [e for e in found if type is None or e.type == type]


def _named_entities(conn: db.Connection, key: str) -> tuple[Entity, ...]:
    rows = conn.execute(
        """SELECT id FROM entities WHERE normalized = ?
           UNION SELECT entity_id FROM aliases WHERE normalized = ?""",
        (key, key),
    ).fetchall()
    found: dict[str, Entity] = {}
    for (entity_id,) in rows:
        entity = get_entity(conn, canonical_id(conn, entity_id))
        if entity:
            found[entity.id] = entity
    return tuple(sorted(found.values(), key=lambda e: e.id))


def known_by_merge(conn: db.Connection, name: str) -> list[Entity]:
    """Live entities a merge made known by `name`: the name or an alias of an entity merged into them.

    A merge is a person's accept (or an exact email/phone match), so the name names the winner whatever
    type the caller guesses for it: the writer must not make a second entity for it.
    """
    key = normalize(name)
    rows = conn.execute(
        """SELECT id FROM entities WHERE normalized = ? AND merged_into IS NOT NULL
           UNION SELECT a.entity_id FROM aliases a JOIN entities e ON e.id = a.entity_id
           WHERE a.normalized = ? AND e.merged_into IS NOT NULL""",
        (key, key),
    ).fetchall()
    found = {canonical_id(conn, r[0]) for r in rows}
    return [e for e in (get_entity(conn, i) for i in sorted(found)) if e is not None]


def create_entity(
    conn: db.Connection,
    name: str,
    type: str,
    *,
    source: str = "inferred",
    normalized: str | None = None,
    is_user: bool = False,
    seen_at: int | None = None,
    entity_id: str | None = None,
) -> str:
    """Insert a new entity and return its id (the writer tool `create_entity`)."""
    if not name.strip():
        raise ValueError("entity name must not be empty")
    now = now_ms()
    entity_id = entity_id or ulid(now)
    key = normalized or normalize(name)
    conn.execute(
        """INSERT INTO entities (id, name, normalized, type, source, is_user, first_seen, last_seen,
               created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (entity_id, name.strip(), key, type, source, is_user, seen_at, seen_at, now, now),
    )
    _changed(conn, ("entity", entity_id), ("canonical", entity_id), ("is user", entity_id), ("named", key))
    return entity_id


def add_alias(conn: db.Connection, entity_id: str, alias: str, alias_type: str, platform: str | None = None) -> bool:
    """Give the entity another name; True when it did not have it yet."""
    key = normalize(alias)
    cursor = conn.execute(
        """INSERT OR IGNORE INTO aliases (entity_id, alias, normalized, alias_type, platform, created_at)
           VALUES (?, ?, ?, ?, ?, ?)""",
        (entity_id, alias, key, alias_type, platform, now_ms()),
    )
    if cursor.rowcount != 1:
        return False
    _changed(conn, ("named", key))
    return True


def resolve_or_create(
    conn: db.Connection, name: str, type: str, *, source: str = "inferred", seen_at: int | None = None
) -> str:
    """The existing entity for `name` (preferring the same type), else a new one."""
    matches = find_entities(conn, name)
    same_type = [e for e in matches if e.type == type]
    if same_type or matches:
        entity = (same_type or matches)[0]
        conn.execute(
            """UPDATE entities SET mention_count = mention_count + 1,
                   last_seen = max(coalesce(last_seen, 0), coalesce(?, 0)) WHERE id = ?""",
            (seen_at, entity.id),
        )
        return entity.id
    return create_entity(conn, name, type, source=source, seen_at=seen_at)


def count_cooccurrence(conn: db.Connection, entity_a: str, entity_b: str, seen_at: int) -> None:
    """Count one more fact that names both entities (entity_cooccurrences keeps the pair sorted)."""
    count_cooccurrences(conn, [(entity_a, entity_b)], seen_at)


def count_cooccurrences(conn: db.Connection, pairs: list[tuple[str, str]], seen_at: int) -> None:
    """`count_cooccurrence` for each pair (of different entities), in one statement."""
    conn.executemany(
        """INSERT INTO entity_cooccurrences (entity_a, entity_b, count, last_seen) VALUES (?, ?, 1, ?)
           ON CONFLICT (entity_a, entity_b) DO UPDATE SET count = count + 1,
               last_seen = max(last_seen, excluded.last_seen)""",
        [(*sorted(pair), seen_at) for pair in pairs],
    )


def register_delivery(conn: db.Connection, event: Event) -> str:
    """Delivery-sourced entity + routable contact for the sender of a real message; returns its live id.

    The handle resolves only through delivered handles: its own contact row, else the delivery entity
    of the same handle in another lossless spelling on this platform. A display name, an alias said in
    conversation or a claimed handle never decides whose entity this is.
    """
    contact = _contact(conn, event.platform, event.sender_id)
    if contact is not None:
        entity_id = canonical_id(conn, contact)
    else:
        found = delivered_entity(conn, event.platform, event.sender_id)
        if found is not None:
            entity_id = found
        else:
            kind = handle_type(event.platform, event.sender_id)
            entity_id = create_entity(
                conn,
                event.sender_id,
                kind,
                source="delivery",
                seen_at=event.as_of,
                is_user=event.direction == "outbound",
                entity_id=_delivery_id(event.platform, event.sender_id),
            )
            _propose_same_handle(conn, entity_id, event)
        conn.execute(
            "INSERT INTO contacts (platform, handle, entity_id, first_seen) VALUES (?, ?, ?, ?)",
            (event.platform, event.sender_id, entity_id, event.as_of),
        )
        _changed(conn, ("contact", event.platform, event.sender_id), ("has contact", entity_id))
        add_alias(conn, entity_id, event.sender_id, "handle", event.platform)
    display = display_name(conn, event, entity_id)
    named_now = (
        display is not None
        and normalize(display) != normalize(event.sender_id)
        and add_alias(conn, entity_id, display, "display_name", event.platform)
    )
    if named_now and is_user(conn, entity_id):
        _propose_owner_handles(conn, entity_id, display, event)
    if event.session_id:
        conn.execute(
            "INSERT OR IGNORE INTO sessions (id, entity_id, platform, created_at) VALUES (?, ?, ?, ?)",
            (event.session_id, entity_id, event.platform, now_ms()),
        )
    return entity_id


def _propose_owner_handles(conn: db.Connection, entity_id: str, display: str, event: Event) -> None:
    """The owner's handles that show one name are likely one person: a merge for a person to accept
    (they share the name meanwhile, `display_name`), never an automatic one."""
    for other in find_entities(conn, display):
        if other.id != entity_id and is_user(conn, other.id):
            propose_merge(
                conn,
                other.id,
                entity_id,
                OWNER_HANDLES_CONFIDENCE,
                f"{event.sender_id} on {event.platform} and {other.name} are both the owner's (outbound) "
                f"and shown as {display}",
            )


def delivered_entity(conn: db.Connection, platform: str, handle: str) -> str | None:
    """The live entity a delivered handle is: its contact's, else the delivery entity of the same handle
    in another lossless spelling on this platform; None when this memory never had a message from it."""
    contact = _contact(conn, platform, handle)
    if contact is not None:
        return canonical_id(conn, contact)
    delivery_id = _delivery_id(platform, handle)
    return canonical_id(conn, delivery_id) if get_entity(conn, delivery_id) is not None else None


def _contact(conn: db.Connection, platform: str, handle: str) -> str | None:
    """The entity id a delivered handle's contact row names (merged or not), or None when it has none."""

    def read() -> str | None:
        row = conn.execute(
            "SELECT entity_id FROM contacts WHERE platform = ? AND handle = ?", (platform, handle)
        ).fetchone()
        return row[0] if row else None

    return _read(conn, ("contact", platform, handle), read)


def _has_contact(conn: db.Connection, entity_id: str) -> bool:
    """True when some delivered handle's contact row names this entity."""
    return _read(
        conn,
        ("has contact", entity_id),
        lambda: conn.execute("SELECT 1 FROM contacts WHERE entity_id = ?", (entity_id,)).fetchone() is not None,
    )


def _delivery_id(platform: str, handle: str) -> str:
    return stable_id("ent", "delivery", platform, delivery_key(handle_type(platform, handle), handle))


def _propose_same_handle(conn: db.Connection, entity_id: str, event: Event) -> None:
    """Link a new delivery entity to entities that are the same handle string, for a person to review.

    Those are a handle said in conversation ("my email is ...") or the same handle delivered on another
    platform. Only entities named by the handle count: a display name showing it proves nothing.
    """
    entity = get_entity(conn, entity_id)
    assert entity is not None
    rows = conn.execute(
        "SELECT id, source FROM entities WHERE normalized = ? AND type = ? AND id != ?",
        (normalize(event.sender_id), entity.type, entity_id),
    ).fetchall()
    for other_id, source in rows:
        other = canonical_id(conn, other_id)
        if other == entity_id:
            continue
        # The older delivered entity survives an accepted merge; a conversational one merges into this.
        winner, loser = (other, entity_id) if source == "delivery" else (entity_id, other)
        propose_merge(
            conn,
            winner,
            loser,
            SAME_HANDLE_CONFIDENCE,
            f"{event.sender_id} delivered a message on {event.platform} (event {event.id}) and was known before",
        )


def display_name(conn: db.Connection, event: Event, entity_id: str) -> str | None:
    """The event's sender_name when it may name this sender, else None.

    Not when it is shaped like or holds another handle (an email address, a phone number, '@name'), not
    when it shows other letters than it holds (`shows_other_letters`), and not when another sender
    that has a routable contact is already known by it or by what it looks like: a name first shown by
    one sender never names another one, unless both are the owner's own handles (is_user: each sent
    outbound messages, which only the owner's accounts do).
    """
    name = event.sender_name
    if not name or names_another_handle(name, event.sender_id) or shows_other_letters(name):
        return None
    if name == event.sender_id:
        return name  # a sender may always be named by its own handle
    own = canonical_id(conn, entity_id)
    own_is_user = is_user(conn, own)
    # What the name looks like counts too: 'Priya K\u0430poor' (a Cyrillic a) reads as Priya Kapoor.
    looks = look_alike_key(name)
    for other in [*find_entities(conn, name), *(find_entities(conn, looks) if looks != name else ())]:
        if other.id == own or (own_is_user and is_user(conn, other.id)):
            continue  # the owner's own handles (their outbound messages) share the owner's name
        if _has_contact(conn, other.id):
            return None
    return name


def contact_name(conn: db.Connection, platform: str, handle: str) -> tuple[str, str] | None:
    """(entity id, name) of a delivered handle that is not speaking (the one a message is addressed to):
    the person it was accepted to be, else the display name it delivered under on this platform (checked
    then, `display_name`); None when it never delivered a message or has no name but its handle."""
    entity_id = delivered_entity(conn, platform, handle)
    entity = get_entity(conn, entity_id) if entity_id else None
    if entity is None:
        return None
    if entity.type == "person":
        return entity.id, entity.name
    row = conn.execute(
        """SELECT alias FROM aliases WHERE entity_id = ? AND alias_type = 'display_name' AND platform = ?
           ORDER BY created_at, alias LIMIT 1""",
        (entity.id, platform),
    ).fetchone()
    return (entity.id, row[0]) if row else None


def is_user(conn: db.Connection, entity_id: str) -> bool:
    """The entity is the owner of this memory: it sent outbound messages (the platform vouches for that)."""

    def read() -> bool:
        row = conn.execute("SELECT is_user FROM entities WHERE id = ?", (entity_id,)).fetchone()
        return bool(row and row[0])

    return _read(conn, ("is user", entity_id), read)


def speaker_name(conn: db.Connection, event: Event) -> str:
    """The name facts use for the sender of `event`.

    The person a person accepted this sender to be (a merge into a 'person' entity), else the
    display name (`display_name`), else the raw handle. An unreviewed merge candidate or an
    introduction never renames the sender: until someone accepts it, words stay with the handle.
    """
    contact = _contact(conn, event.platform, event.sender_id)
    if contact is None:  # not delivered yet: nothing to look up, only the shape of the name to judge
        name = event.sender_name
        usable = name and not names_another_handle(name, event.sender_id) and not shows_other_letters(name)
        return name if usable else event.sender_id
    entity = get_entity(conn, canonical_id(conn, contact))
    if entity is not None and entity.type == "person":
        return entity.name
    return display_name(conn, event, contact) or event.sender_id


def propose_merge(
    conn: db.Connection, entity_a_id: str, entity_b_id: str, confidence: float, reason: str
) -> dict[str, Any]:
    """Record that b may be the same as a; apply it only for exact email/phone matches > 0.99."""
    if not 0.0 <= confidence <= 1.0:
        raise ValueError("confidence must be between 0 and 1")
    a, b = get_entity(conn, canonical_id(conn, entity_a_id)), get_entity(conn, canonical_id(conn, entity_b_id))
    if a is None or b is None:
        raise MergeError(f"unknown entity: {entity_a_id if a is None else entity_b_id}")
    if a.id == b.id:
        return {"status": "already_merged", "winner": a.id}
    rejected = rejection_between(conn, a.id, b.id)
    if rejected is not None:
        return {
            "status": "rejected",
            "candidate_id": rejected["id"],
            "winner": a.id,
            "loser": b.id,
            "reason": f"a person rejected merging these entities (candidate {rejected['id']}); not proposed again",
        }
    auto = confidence > AUTO_MERGE_THRESHOLD and _exact_contact_match(conn, a, b)
    candidate_id = stable_id("mc", a.id, b.id)
    with db.transaction(conn):
        conn.execute(
            """INSERT INTO merge_candidates (id, entity_a_id, entity_b_id, confidence, reason,
                   auto_eligible, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (entity_a_id, entity_b_id) DO UPDATE SET
                   confidence = max(confidence, excluded.confidence), reason = excluded.reason""",
            (candidate_id, a.id, b.id, confidence, reason, auto, now_ms()),
        )
        if auto:
            merge_entities(conn, a.id, b.id)
            conn.execute(
                "UPDATE merge_candidates SET status = 'auto_merged', resolved_at = ? WHERE id = ?",
                (now_ms(), candidate_id),
            )
    return {"status": "auto_merged" if auto else "pending", "candidate_id": candidate_id, "winner": a.id, "loser": b.id}


def _exact_contact_match(conn: db.Connection, a: Entity, b: Entity) -> bool:
    """True when a and b share an email or phone exactly (names alone never auto-merge)."""

    def contact_keys(entity: Entity) -> set[str]:
        keys = {normalize(entity.name)} if entity.type in AUTO_MERGE_TYPES else set()
        rows = conn.execute(
            "SELECT normalized FROM aliases WHERE entity_id = ? AND alias_type IN ('email', 'phone')",
            (entity.id,),
        ).fetchall()
        return keys | {r[0] for r in rows}

    return bool(contact_keys(a) & contact_keys(b))


def merge_entities(conn: db.Connection, winner_id: str, loser_id: str) -> None:
    """Merge loser into winner: merged_into, aliases, fact links, session aliases, in one transaction."""
    if winner_id == loser_id:
        raise MergeError("cannot merge an entity into itself")
    winner, loser = get_entity(conn, winner_id), get_entity(conn, loser_id)
    if winner is None or loser is None:
        raise MergeError(f"unknown entity: {winner_id if winner is None else loser_id}")
    if winner.merged_into or loser.merged_into:
        raise MergeError("both entities must be live (not already merged)")
    now = now_ms()
    _changed(conn)
    with db.transaction(conn):
        merge_journal.record(conn, winner_id, loser_id, normalize(loser.name))  # so a person can undo it
        conn.execute("UPDATE entities SET merged_into = ?, updated_at = ? WHERE id = ?", (winner_id, now, loser_id))
        alias_type = (
            loser.type if loser.type in ("email", "phone") else "handle" if loser.type.endswith("_handle") else "name"
        )
        add_alias(conn, winner_id, loser.name, alias_type)
        conn.execute(
            """INSERT OR IGNORE INTO aliases (entity_id, alias, normalized, alias_type, platform, created_at)
               SELECT ?, alias, normalized, alias_type, platform, ? FROM aliases WHERE entity_id = ?""",
            (winner_id, now, loser_id),
        )
        conn.execute(
            """INSERT OR IGNORE INTO fact_entities (fact_id, entity_id, as_of)
               SELECT fact_id, ?, as_of FROM fact_entities WHERE entity_id = ?""",
            (winner_id, loser_id),
        )
        conn.execute("DELETE FROM fact_entities WHERE entity_id = ?", (loser_id,))
        conn.execute("UPDATE contacts SET entity_id = ? WHERE entity_id = ?", (winner_id, loser_id))
        conn.execute(
            "UPDATE entities SET mention_count = mention_count + ? WHERE id = ?",
            (conn.execute("SELECT mention_count FROM entities WHERE id = ?", (loser_id,)).fetchone()[0], winner_id),
        )
        propagate_merge_to_sessions(conn, winner_id, loser_id)


def propagate_merge_to_sessions(conn: db.Connection, winner_id: str, loser_id: str) -> int:
    """Make every session of loser (and of its aliases) reachable through winner. Returns the count."""
    cur = conn.execute(
        """INSERT OR IGNORE INTO session_aliases (session_id, entity_id, via_merge_of, created_at)
           SELECT id, ?, ?, ? FROM sessions WHERE entity_id = ?
           UNION SELECT session_id, ?, ?, ? FROM session_aliases WHERE entity_id = ?""",
        (winner_id, loser_id, now_ms(), loser_id, winner_id, loser_id, now_ms(), loser_id),
    )
    return cur.rowcount


def sessions_for(conn: db.Connection, entity_id: str) -> list[str]:
    """Session ids that route to this entity directly or through merge aliases."""
    entity_id = canonical_id(conn, entity_id)
    rows = conn.execute(
        """SELECT id FROM sessions WHERE entity_id = ?
           UNION SELECT session_id FROM session_aliases WHERE entity_id = ? ORDER BY 1""",
        (entity_id, entity_id),
    ).fetchall()
    return [r[0] for r in rows]


def list_candidates(conn: db.Connection, status: str = "pending") -> list[dict[str, Any]]:
    rows = conn.execute(
        """SELECT mc.*, a.name AS a_name, a.type AS a_type, b.name AS b_name, b.type AS b_type
           FROM merge_candidates mc JOIN entities a ON a.id = mc.entity_a_id
           JOIN entities b ON b.id = mc.entity_b_id WHERE mc.status = ? ORDER BY mc.created_at""",
        (status,),
    ).fetchall()
    return [dict(r) for r in rows]


def resolve_candidate(conn: db.Connection, candidate_id: str, accept: bool) -> str:
    """Accept (merge) or reject a pending merge candidate; returns the new status.

    The review is learned from in the same transaction: the writer's notes get a line saying who is
    (not) whom, and other pending candidates this review answers are closed (`_close_answered`).
    """
    row = conn.execute("SELECT * FROM merge_candidates WHERE id = ?", (candidate_id,)).fetchone()
    if row is None:
        raise MergeError(f"no merge candidate {candidate_id}")
    if row["status"] != "pending":
        raise MergeError(f"merge candidate {candidate_id} is already {row['status']}")
    status = "accepted" if accept else "rejected"
    winner, loser = canonical_id(conn, row["entity_a_id"]), canonical_id(conn, row["entity_b_id"])
    with db.transaction(conn):
        if accept:
            if winner == loser:
                raise MergeError(f"merge candidate {candidate_id}: both sides are already one entity")
            if rejection_between(conn, winner, loser) is not None:
                raise MergeError(
                    f"merge candidate {candidate_id}: a person already rejected merging these entities "
                    "(one side was merged with the other's rejected match since); reject it instead"
                )
        writer_notes.record_review(conn, get_entity(conn, winner), get_entity(conn, loser), status, row["reason"])
        if accept:
            merge_entities(conn, winner, loser)
        conn.execute(
            "UPDATE merge_candidates SET status = ?, resolved_at = ? WHERE id = ?", (status, now_ms(), candidate_id)
        )
        _close_answered(conn, winner if accept else None, [winner, loser])
    return status


# The entities merged into `root` (any depth) and root itself, each with the root it belongs to.
_MEMBERS_SQL = """
    WITH RECURSIVE members(id, root) AS (
        SELECT value, value FROM json_each(?)
        UNION SELECT e.id, m.root FROM entities e JOIN members m ON e.merged_into = m.id
    )"""


def rejection_between(conn: db.Connection, a_id: str, b_id: str) -> dict[str, Any] | None:
    """The rejected merge candidate that says live entities a and b are different, or None.

    A person who rejected "x is y" said that whatever x belongs to is not whatever y belongs to, so a
    rejection between any entity merged into a (or a itself) and any merged into b counts, in either order.
    """
    row = conn.execute(
        _MEMBERS_SQL
        + """
        SELECT mc.* FROM merge_candidates mc
        JOIN members x ON x.id = mc.entity_a_id JOIN members y ON y.id = mc.entity_b_id
        WHERE mc.status = 'rejected' AND x.root != y.root ORDER BY mc.resolved_at LIMIT 1""",
        (json.dumps([a_id, b_id]),),
    ).fetchone()
    return dict(row) if row else None


def _close_answered(conn: db.Connection, merged: str | None, entity_ids: list[str]) -> None:
    """Close the pending candidates touching these entities' groups that a review has answered.

    Those whose sides are now one entity (`merged`, after an accept) are accepted; those between
    groups a person said are different are rejected. Neither is left for a person to review again.
    """
    roots = [canonical_id(conn, e) for e in entity_ids]
    rows = conn.execute(
        _MEMBERS_SQL
        + """
        SELECT DISTINCT mc.id, mc.entity_a_id, mc.entity_b_id FROM merge_candidates mc
        JOIN members m ON m.id IN (mc.entity_a_id, mc.entity_b_id) WHERE mc.status = 'pending'""",
        (json.dumps(sorted(set(roots))),),
    ).fetchall()
    for candidate_id, a_id, b_id in rows:
        a, b = canonical_id(conn, a_id), canonical_id(conn, b_id)
        status = "accepted" if a == b and merged is not None else None
        if a != b and rejection_between(conn, a, b) is not None:
            status = "rejected"
        if status:
            conn.execute(
                "UPDATE merge_candidates SET status = ?, resolved_at = ? WHERE id = ?", (status, now_ms(), candidate_id)
            )
