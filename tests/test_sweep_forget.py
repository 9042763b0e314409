"""Forget an event, then ingest the same file again: the event is back in the ledger and, like every
event the ledger accepts, it is grouped into an episode, written into facts, and leaves no work behind.
(A forget edits the episode versions that held it in place, and each keeps the name its old members gave it.)"""

from __future__ import annotations

import json

import pytest
from test_identity_attacks import DAY_1, message, run

from nexus_memory.core.stores import Stores
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.lifecycle.forget import Target, forget

SENDER = "+15550100111"
LINES = [
    message("sms", SENDER, DAY_1, "I adopted a dog named Rex last week.", id="m1", time="09:00:00"),
    message("sms", SENDER, DAY_1, "I started a new job at Northwind today.", id="m2", time="09:05:00"),
    message("sms", SENDER, DAY_1, "My sister Ellen is moving to Lisbon.", id="m3", time="09:10:00"),
]


def facts_from(stores: Stores, event_id: str) -> list[str]:
    return [r[0] for r in stores.conn.execute("SELECT text FROM facts WHERE source_event_id = ?", (event_id,))]


def in_an_episode(stores: Stores, event_id: str) -> bool:
    return stores.conn.execute("SELECT 1 FROM episode_events WHERE event_id = ?", (event_id,)).fetchone() is not None


def not_written(stores: Stores) -> list[str]:
    """Events the writer has not been through (the pipeline's work left, short of the vectors)."""
    rows = stores.conn.execute(
        "SELECT id FROM events e WHERE NOT EXISTS (SELECT 1 FROM memory_processing_log l WHERE l.event_id = e.id)"
    )
    return [r[0] for r in rows]


@pytest.mark.parametrize("forgotten", ["sms:m1", "sms:m2", "sms:m3"])
def test_a_forgotten_event_ingested_again_is_processed_again(stores: Stores, forgotten: str) -> None:
    run(stores, LINES)
    before = {e: facts_from(stores, e) for e in ("sms:m1", "sms:m2", "sms:m3")}
    assert all(before.values()), before

    forget(stores, Target("event", forgotten))
    assert facts_from(stores, forgotten) == []
    run(stores, LINES)  # the same file again: two duplicates and the forgotten event

    assert in_an_episode(stores, forgotten)
    assert facts_from(stores, forgotten) == before[forgotten]
    for other in {"sms:m1", "sms:m2", "sms:m3"} - {forgotten}:
        assert facts_from(stores, other) == before[other]  # written once, not again
    assert not_written(stores) == []


def test_forget_and_ingest_again_twice_still_processes_the_event(stores: Stores) -> None:
    run(stores, LINES)
    for _ in range(2):
        forget(stores, Target("event", "sms:m1"))
        run(stores, LINES)
        assert in_an_episode(stores, "sms:m1") and facts_from(stores, "sms:m1")
    assert not_written(stores) == []


def test_a_rebuild_after_the_event_came_back_adds_nothing(stores: Stores) -> None:
    run(stores, LINES)
    forget(stores, Target("event", "sms:m2"))
    run(stores, LINES)
    episodes = [tuple(r) for r in stores.conn.execute("SELECT id, event_count FROM episodes ORDER BY id")]
    summary = ingest(stores, [RawRecord("again", i, r, json.dumps(r)) for i, r in enumerate(LINES, 1)])
    assert summary.duplicates == 3
    run(stores, LINES)
    assert [tuple(r) for r in stores.conn.execute("SELECT id, event_count FROM episodes ORDER BY id")] == episodes
