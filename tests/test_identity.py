"""Delivery entities, merge rules (auto only for exact email/phone), merge propagation and rollback."""

from __future__ import annotations

import pytest

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.events.ledger import RawRecord, ingest, parse_event
from nexus_memory.identity import store as identity
from nexus_memory.identity.handles import delivery_key, names_another_handle


def _deliver(stores: Stores, sender: str, platform: str = "imessage", session: str | None = None) -> str:
    data = {
        "platform": platform,
        "sender_id": sender,
        "content": f"hi from {sender}",
        "as_of": 1_700_000_000,
        "session_id": session,
    }
    ingest(stores, [RawRecord("t", 1, data, "")])
    row = stores.conn.execute("SELECT entity_id FROM contacts WHERE handle = ?", (sender,)).fetchone()
    return row[0]


def test_unknown_sender_becomes_a_delivery_entity_with_a_contact(stores: Stores) -> None:
    entity_id = _deliver(stores, "+1 (555) 010-0111")
    entity = identity.get_entity(stores.conn, entity_id)
    assert entity is not None and entity.source == "delivery" and entity.type == "phone"
    assert identity.find_entities(stores.conn, "+15550100111")[0].id == entity_id
    assert _deliver(stores, "+1 (555) 010-0111") == entity_id  # second message: same entity


def test_names_alone_never_auto_merge(stores: Stores) -> None:
    a = identity.create_entity(stores.conn, "Priya", "person")
    b = _deliver(stores, "priyak#2211", platform="discord")
    result = identity.propose_merge(stores.conn, a, b, 1.0, "same first name")
    assert result["status"] == "pending"
    assert identity.get_entity(stores.conn, b).merged_into is None  # type: ignore[union-attr]


def test_exact_email_match_auto_merges_and_propagates_to_sessions(stores: Stores) -> None:
    person = identity.create_entity(stores.conn, "Priya Kapoor", "person")
    identity.add_alias(stores.conn, person, "priya.k@example.com", "email")
    handle = _deliver(stores, "priya.k@example.com", platform="gmail", session="gmail-thread-1")
    result = identity.propose_merge(stores.conn, person, handle, 0.995, "same email address")
    assert result["status"] == "auto_merged"
    assert identity.canonical_id(stores.conn, handle) == person
    assert identity.sessions_for(stores.conn, person) == ["gmail-thread-1"]


def test_low_confidence_email_match_waits_for_a_person(stores: Stores) -> None:
    person = identity.create_entity(stores.conn, "Priya Kapoor", "person")
    identity.add_alias(stores.conn, person, "priya.k@example.com", "email")
    handle = _deliver(stores, "priya.k@example.com", platform="gmail")
    assert identity.propose_merge(stores.conn, person, handle, 0.9, "same email")["status"] == "pending"
    (candidate,) = identity.list_candidates(stores.conn)
    assert identity.resolve_candidate(stores.conn, candidate["id"], accept=True) == "accepted"
    assert identity.canonical_id(stores.conn, handle) == person


def test_merge_rolls_back_when_session_propagation_fails(stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    winner = identity.create_entity(stores.conn, "Marcus", "person")
    loser = _deliver(stores, "marcus#0042", platform="discord", session="discord-dm-1")

    def broken(*_args: object) -> int:
        raise db.OperationalError("injected: session alias table unavailable")

    monkeypatch.setattr(identity, "propagate_merge_to_sessions", broken)
    with pytest.raises(db.OperationalError, match="injected"):
        identity.merge_entities(stores.conn, winner, loser)
    assert identity.get_entity(stores.conn, loser).merged_into is None  # type: ignore[union-attr]
    assert stores.conn.execute("SELECT count(*) FROM aliases WHERE entity_id = ?", (winner,)).fetchone()[0] == 0
    assert stores.conn.execute("SELECT entity_id FROM contacts WHERE handle = 'marcus#0042'").fetchone()[0] == loser


# --- delivered handles: lossless keys, look-alikes, display names ------------------------------------


@pytest.mark.parametrize(
    ("kind", "handle", "key"),
    [
        ("email", "Priya.K@Example.COM", "Priya.K@example.com"),  # only the ASCII domain folds
        ("email", "priya@B\u00dcCHER.example", "priya@b\u00dccher.example"),  # non-ASCII letters stay
        ("phone", "+1 (555) 010-0111", "+15550100111"),
        ("phone", "555.010.0111", "5550100111"),
        ("phone", "+\uff11\uff15\uff15\uff15\uff10\uff11\uff10\uff10\uff11\uff11\uff11", "+１５５５０１００１１１"),
        ("discord_handle", "PriyaK#2211", "PriyaK#2211"),
        ("discord_handle", "priya\u212a#2211", "priya\u212a#2211"),
    ],
)
def test_delivery_keys_are_lossless(kind: str, handle: str, key: str) -> None:
    assert delivery_key(kind, handle) == key


def test_normalize_never_folds_a_look_alike_into_the_name_it_imitates() -> None:
    assert identity.normalize("Priya  KAPOOR") == "priya kapoor"
    assert identity.normalize("Jos\u00c9") == "jos\u00e9"
    assert identity.normalize("priya\u212a#2211") != identity.normalize("priyak#2211")
    assert identity.normalize("\uff30riya") != identity.normalize("Priya")
    assert identity.normalize("+1 (555) 010-0111") == "+15550100111"


@pytest.mark.parametrize(
    ("shown", "handle", "names_it"),
    [
        ("Anna New", "anna@northwind.example", True),
        ("anna@northwind.example", "anna@northwind.example", True),
        ("anna.new@northwind.example", "mallory@evil.example", False),
        ("+1 555 010 0111", "+447700900123", False),
        ("@priya", "mallory#6666", False),
        ("priyak#2211", "mallory#6666", False),
        ("Priya 2", "mallory#6666", True),
    ],
)
def test_a_display_name_shaped_like_another_handle_is_not_a_name(shown: str, handle: str, names_it: bool) -> None:
    assert names_another_handle(shown, handle) is not names_it


def test_speaker_name_changes_only_when_a_person_accepts_a_merge(stores: Stores) -> None:
    record = {"platform": "discord", "sender_id": "mallory#6666", "content": "hi", "as_of": 1_700_000_000}
    ingest(stores, [RawRecord("t", 1, record, "")])
    event = parse_event(record)
    handle = _deliver(stores, "mallory#6666", platform="discord")
    person = identity.create_entity(stores.conn, "Priya Kapoor", "person")
    identity.propose_merge(stores.conn, person, handle, 0.95, "introduced themselves as Priya Kapoor")
    assert identity.speaker_name(stores.conn, event) == "mallory#6666"
    (candidate,) = identity.list_candidates(stores.conn)
    identity.resolve_candidate(stores.conn, candidate["id"], accept=True)
    assert identity.speaker_name(stores.conn, event) == "Priya Kapoor"


def _statements(stores: Stores) -> list[str]:
    """The SQL statements the connection runs from now on (a trace callback)."""
    seen: list[str] = []
    stores.conn.set_trace_callback(seen.append)
    return seen


def test_lookups_remembered_ask_sql_once_and_see_the_blocks_own_writes(stores: Stores) -> None:
    conn = stores.conn
    ann = identity.create_entity(conn, "Ann Lee", "person")
    with db.transaction(conn), identity.lookups_remembered(conn):
        assert [e.id for e in identity.find_entities(conn, "ann lee")] == [ann]
        seen = _statements(stores)
        assert [e.id for e in identity.find_entities(conn, "Ann  Lee")] == [ann]
        assert identity.find_entities(conn, "ann lee", type="organization") == []
        assert seen == []  # remembered: no SQL
        assert identity.find_entities(conn, "Annie") == []
        identity.add_alias(conn, ann, "Annie", "nickname")  # an answer the block remembered changes
        assert [e.id for e in identity.find_entities(conn, "annie")] == [ann]
        bob = identity.create_entity(conn, "Bob", "person")
        assert identity.get_entity(conn, bob) is not None and identity.canonical_id(conn, bob) == bob
        identity.merge_entities(conn, ann, bob)  # a merge: every answer is asked again
        assert identity.canonical_id(conn, bob) == ann
        assert [e.id for e in identity.find_entities(conn, "bob")] == [ann]
    conn.set_trace_callback(None)
    assert identity.canonical_id(conn, bob) == ann  # outside the block: SQL, as always


def test_lookups_remembered_see_a_nested_rollback_undo_a_write(stores: Stores) -> None:
    """The LLM writer rolls a failed attempt back inside the episode: what it created is gone again."""
    conn = stores.conn
    with db.transaction(conn), identity.lookups_remembered(conn):
        assert identity.find_entities(conn, "Kestrel") == []
        with pytest.raises(RuntimeError), db.transaction(conn):
            kestrel = identity.create_entity(conn, "Kestrel", "project")
            assert [e.id for e in identity.find_entities(conn, "kestrel")] == [kestrel]
            assert identity.get_entity(conn, kestrel) is not None
            raise RuntimeError("attempt failed")
        assert identity.find_entities(conn, "kestrel") == []
        assert identity.get_entity(conn, kestrel) is None


def test_lookups_remembered_last_into_the_next_block_until_the_store_changes(stores: Stores) -> None:
    conn = stores.conn
    ann = identity.create_entity(conn, "Ann Lee", "person")
    with db.transaction(conn), identity.lookups_remembered(conn):
        assert [e.id for e in identity.find_entities(conn, "ann lee")] == [ann]
    with db.transaction(conn), identity.lookups_remembered(conn):
        seen = _statements(stores)
        assert [e.id for e in identity.find_entities(conn, "ann lee")] == [ann]
        assert not [s for s in seen if "entities" in s]  # the next episode asks nothing again
        conn.set_trace_callback(None)
    # Another connection (another process) names someone else Ann Lee: the next block sees it.
    with Stores(stores.settings) as other, db.transaction(other.conn):
        bob = identity.create_entity(other.conn, "Ann Lee", "person")
    with db.transaction(conn), identity.lookups_remembered(conn):
        assert [e.id for e in identity.find_entities(conn, "ann lee")] == sorted([ann, bob])
    # A write on this connection outside any block: seen too.
    identity.merge_entities(conn, ann, bob)
    with db.transaction(conn), identity.lookups_remembered(conn):
        assert [e.id for e in identity.find_entities(conn, "ann lee")] == [ann]
        assert identity.canonical_id(conn, bob) == ann


def test_a_rolled_back_episode_leaves_no_remembered_entity(stores: Stores) -> None:
    conn = stores.conn
    with pytest.raises(RuntimeError), db.transaction(conn), identity.lookups_remembered(conn):
        kestrel = identity.create_entity(conn, "Kestrel", "project")
        assert [e.id for e in identity.find_entities(conn, "kestrel")] == [kestrel]
        raise RuntimeError("the episode failed")
    with db.transaction(conn), identity.lookups_remembered(conn):
        assert identity.find_entities(conn, "kestrel") == []
        assert identity.get_entity(conn, kestrel) is None


def test_answers_kept_inside_a_batch_that_rolls_back_are_dropped(stores: Stores) -> None:
    """The pipeline commits several episodes together: an episode's answers about the one before it are
    gone with a rollback of the batch, once the batch says so (identity.forget_remembered)."""
    conn = stores.conn
    with pytest.raises(RuntimeError), db.transaction(conn):
        with identity.lookups_remembered(conn):
            kestrel = identity.create_entity(conn, "Kestrel", "project")
        with identity.lookups_remembered(conn):  # the next episode of the batch remembers it
            assert [e.id for e in identity.find_entities(conn, "kestrel")] == [kestrel]
        raise RuntimeError("the batch failed")
    identity.forget_remembered(conn)
    with db.transaction(conn), identity.lookups_remembered(conn):
        assert identity.find_entities(conn, "kestrel") == []
        assert identity.get_entity(conn, kestrel) is None
