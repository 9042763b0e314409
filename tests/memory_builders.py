"""Hand-made facts for consolidation and mental-model tests: entities, dated facts with source events, vectors."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from nexus_memory.core.ids import stable_id
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.model import get_embedder
from nexus_memory.embeddings.step import embed_pending
from nexus_memory.events.ledger import RawRecord, append_event, ingest, parse_event
from nexus_memory.identity import store as identity


def ms(day: str) -> int:
    """Unix ms of 'YYYY-MM-DD' (noon UTC)."""
    return int(datetime.fromisoformat(f"{day}T12:00:00").replace(tzinfo=UTC).timestamp() * 1000)


def say(stores: Stores, event_id: str, sender: str, content: str, as_of: int, session: str = "s1") -> str:
    """One iMessage in thread t1 from `sender` (its lower-cased name is the handle); returns the event id."""
    event = parse_event(
        {
            "platform": "imessage",
            "sender_id": sender.lower(),
            "sender_name": sender,
            "content": content,
            "as_of": as_of,
            "id": event_id,
            "thread_id": "t1",
            "session_id": session,
        }
    )
    with stores.transaction():
        append_event(stores, event)
    return event.id


def person(stores: Stores, name: str, *, handle: str | None = None) -> str:
    """A person entity (and an email alias when `handle` is given)."""
    with stores.transaction():
        entity_id = identity.create_entity(stores.conn, name, "person", entity_id=stable_id("ent", name, handle))
        if handle:
            identity.add_alias(stores.conn, entity_id, handle, "email")
    return entity_id


def fact(stores: Stores, text: str, day: str, *entity_ids: str, platform: str = "imessage") -> str:
    """A fact with a source event (its text as a message), linked to `entity_ids`; returns its id."""
    as_of = ms(day)
    event_id = f"{platform}:{stable_id('m', text, day)}"
    record = {
        "id": event_id.split(":", 1)[1],
        "platform": platform,
        "sender_id": "+15550000",
        "thread_id": "t",
        "content": text,
        "as_of": as_of,
    }
    ingest(stores, [RawRecord("test", 1, record, json.dumps(record))])
    fact_id = stable_id("fact", text, day)
    with stores.transaction():
        stores.conn.execute(
            """INSERT INTO facts (id, text, as_of, ingested_at, source_event_id, created_at, platform)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            (fact_id, text, as_of, as_of, event_id, as_of, platform),
        )
        stores.conn.executemany(
            "INSERT INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, ?)",
            [(fact_id, e, as_of) for e in entity_ids],
        )
    return fact_id


def embed(stores: Stores) -> None:
    """Vectors for every fact (the embeddings step), with the real default model."""
    embed_pending(stores, get_embedder(), target_types=("fact",))


def count(stores: Stores, table: str, where: str = "1") -> int:
    return stores.conn.execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()[0]


def current_observations(stores: Stores) -> list[dict]:
    """Current observation versions: id, root, entity, text, stale flag and fact ids."""
    rows = stores.conn.execute(
        """SELECT r.id, r.root_id, r.entity_id, r.output_text, r.is_stale, r.parent_id FROM analysis_runs r
           WHERE r.analysis_type_id = 'observation_v1' AND r.status = 'completed'
             AND NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = r.id) ORDER BY r.id"""
    ).fetchall()
    out = []
    for row in rows:
        facts = [
            r[0]
            for r in stores.conn.execute(
                "SELECT fact_id FROM observation_facts WHERE analysis_run_id = ?", (row["id"],)
            )
        ]
        out.append({**dict(row), "fact_ids": set(facts)})
    return out
