"""Undoing a merge: links, aliases, contacts and session aliases go back in one transaction, and the pair
is never proposed or merged again."""

from __future__ import annotations

import pytest
from lifecycle_world import build, message

from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.lifecycle.unmerge import UnmergeError, unmerge

IDENTITY_TABLES = {
    "fact_entities": "SELECT fact_id, entity_id, as_of FROM fact_entities",
    "aliases": "SELECT entity_id, normalized, alias_type FROM aliases",
    "contacts": "SELECT platform, handle, entity_id FROM contacts",
    "session_aliases": "SELECT session_id, entity_id FROM session_aliases",
    "entities": "SELECT id, name, merged_into, mention_count FROM entities",
}


def snapshot(stores: Stores) -> dict[str, list[tuple]]:
    return {name: sorted(tuple(r) for r in stores.conn.execute(sql)) for name, sql in IDENTITY_TABLES.items()}


def contact(stores: Stores, handle: str) -> str:
    return stores.conn.execute("SELECT entity_id FROM contacts WHERE handle = ?", (handle,)).fetchone()[0]


@pytest.fixture
def world(stores: Stores) -> Stores:
    build(
        stores,
        [
            message(1, "alice@example.com", "I moved to Lisbon.", sender_name="Alice", session="s1"),
            message(2, "+15550100222", "I play the cello with Marta.", sender_name="Ally", session="s2", thread="t2"),
            message(3, "+15550100222", "I adopted a cat named Miso.", sender_name="Ally", session="s2", thread="t2"),
        ],
    )
    return stores


def test_unmerge_puts_everything_back(world: Stores) -> None:
    alice, ally = contact(world, "alice@example.com"), contact(world, "+15550100222")
    before = snapshot(world)
    proposed = identity.propose_merge(world.conn, alice, ally, 0.8, "same person?")
    identity.resolve_candidate(world.conn, proposed["candidate_id"], accept=True)
    merged = snapshot(world)
    assert merged != before and identity.canonical_id(world.conn, ally) == alice
    assert "s2" in identity.sessions_for(world.conn, alice)

    result = unmerge(world.conn, proposed["candidate_id"])
    assert (result["entity"], result["separated_from"], result["facts"]) == (ally, alice, 2)
    assert result["contacts"] == 1 and result["session_aliases"] == 1
    assert snapshot(world) == before
    assert identity.sessions_for(world.conn, alice) == ["s1"]
    status = world.conn.execute("SELECT status FROM merge_candidates WHERE id = ?", (proposed["candidate_id"],))
    assert status.fetchone()[0] == "rejected"
    # Never proposed again, and never merged automatically, whichever way round.
    assert identity.propose_merge(world.conn, ally, alice, 1.0, "again")["status"] == "rejected"
    assert identity.list_candidates(world.conn) == []
    with pytest.raises(UnmergeError, match="rejected, not merged"):
        unmerge(world.conn, proposed["candidate_id"])


def test_unmerge_refuses_what_it_cannot_undo(world: Stores) -> None:
    alice, ally = contact(world, "alice@example.com"), contact(world, "+15550100222")
    with pytest.raises(UnmergeError, match="no merge candidate"):
        unmerge(world.conn, "mc_nope")
    proposed = identity.propose_merge(world.conn, alice, ally, 0.8, "same person?")
    with pytest.raises(UnmergeError, match="pending, not merged"):
        unmerge(world.conn, proposed["candidate_id"])
    identity.resolve_candidate(world.conn, proposed["candidate_id"], accept=True)
    world.conn.execute("DELETE FROM merge_journal")  # as if merged before merges were journaled
    with pytest.raises(UnmergeError, match="before merges were journaled"):
        unmerge(world.conn, proposed["candidate_id"])
    assert identity.canonical_id(world.conn, ally) == alice  # nothing changed
