"""Forgetting an event, a fact, a sender and an entity: every derived row goes, no byte of the text is left
in any file under the data directory, the deletion log holds ids and counts only, and a forget that fails
part-way leaves every store as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lifecycle_world import (
    add_mental_model,
    add_observation,
    build,
    dump,
    facts_with,
    files_holding,
    message,
    write_dossier,
)
from test_recall import FakeEmbedder

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.vectors.ivf import ann_root, current_generation
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.lifecycle import reconsolidate
from nexus_memory.lifecycle.forget import ForgetError, Target, forget, preview
from nexus_memory.lifecycle.forget import run as forget_run
from nexus_memory.recall import recall

KEY = "Dana hid the spare key under the qzxvbk planter."
VAULT = "The vault code is wqpxtrk and nobody knows."


@pytest.fixture
def world(stores: Stores) -> Stores:
    build(
        stores,
        [
            message(1, "dana@example.com", "Hi, I'm Dana.", sender_name="Dana"),
            message(2, "dana@example.com", KEY, sender_name="Dana"),
            message(3, "ben@example.com", "Ben here. I moved to Lisbon last month.", sender_name="Ben"),
            message(4, "ben@example.com", "I will send the report to Zorblax by Friday.", sender_name="Ben"),
            message(5, "dana@example.com", "Zorblax loves hiking in the Alps.", sender_name="Dana"),
            message(6, "spy@example.com", VAULT, sender_name="Spy"),
            message(7, "spy@example.com", "Tell nobody that wqpxtrk opens the vault.", sender_name="Spy"),
            message(8, "ben@example.com", "The weather in Lisbon is lovely.", sender_name="Ben"),
            message(9, "spy@example.com", "The vault code wqpxtrk opens the vault.", sender_name="Spy"),
        ],
    )
    # The real consolidation first: observations, emergent mental models and their dossiers hold the text.
    consolidated = reconsolidate.run_consolidation(stores)
    assert consolidated["observations"] >= 1 and consolidated["models_created"], consolidated
    # Copies of the secrets in every other place the text can reach: a record rejected earlier (bad time),
    # an observation and a mental model with their dossier.
    for n, content in enumerate((KEY, VAULT, "Zorblax again"), 20):
        bad = {"platform": "chat", "sender_id": "x", "content": content, "as_of": "not a time"}
        ingest(stores, [RawRecord("old.jsonl", n, bad, json.dumps(bad))])
    secrets = [facts_with(stores, w)[0] for w in ("qzxvbk", "wqpxtrk", "zorblax")]
    lisbon = facts_with(stores, "Lisbon")[0]
    add_observation(stores, [*secrets, lisbon], "Dana: key under the qzxvbk planter; vault wqpxtrk; Zorblax hikes")
    model = add_mental_model(stores, "Dana", "Dana keeps the qzxvbk key, knows wqpxtrk and Zorblax")
    write_dossier(stores, model, "# Dana\nqzxvbk, wqpxtrk, Zorblax\n")
    return stores


TARGETS = {
    "event": (lambda s: "chat:m2", "qzxvbk"),
    "fact": (lambda s: facts_with(s, "qzxvbk")[0], "qzxvbk"),
    "sender": (lambda s: "spy@example.com", "wqpxtrk"),
    "entity": (lambda s: "Zorblax", "zorblax"),
}


@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_forget_leaves_no_trace_in_any_file(world: Stores, kind: str) -> None:
    value_of, marker = TARGETS[kind]
    data_dir = world.data_dir
    assert files_holding(data_dir, marker), "the marker must be on disk before the forget"
    generation = current_generation(ann_root(data_dir, "fake-bow") / "fact")
    lisbon_before = facts_with(world, "Lisbon")

    result = forget(world, Target(kind, value_of(world)), requested_by="test", reason="privacy")

    assert result.status == "scrubbed", result.scrub
    assert files_holding(data_dir, marker) == []
    assert result.removed["events"]["events"] >= 1 and result.removed["memory"]["facts"] >= 1
    assert result.removed["events"]["event_rejects"] >= 1
    assert result.removed["memory"]["observations"] >= 1 and result.removed["memory"]["mental_models"] >= 1
    assert result.scrub["dossiers_removed"] >= 1
    assert (
        result.scrub["index_files_rewritten"] == ["fact", "entity"] or "fact" in result.scrub["index_files_rewritten"]
    )
    assert current_generation(ann_root(data_dir, "fake-bow") / "fact") != generation
    # What was not forgotten is still remembered, and recall still answers from it.
    assert facts_with(world, "Lisbon") == lisbon_before
    found = recall(world, "weather in Lisbon", scope=["facts"], embedder=FakeEmbedder()).results
    assert any("Lisbon" in r.text for r in found)
    log = world.conn.execute("SELECT * FROM deletion_log").fetchone()
    assert (log["target_kind"], log["requested_by"], log["reason"], log["status"]) == (
        kind,
        "test",
        "privacy",
        "scrubbed",
    )
    assert json.loads(log["counts"]) == result.removed


def test_forgetting_a_fact_takes_its_message_and_keeps_the_rest(world: Stores) -> None:
    fact_id = facts_with(world, "qzxvbk")[0]
    plan = preview(world, Target("fact", fact_id))
    assert plan["would_remove"] == {"events": 1, "facts": 1, "entities": 0}
    writer_episodes = (
        "SELECT e.id, e.event_count, p.status FROM episodes e JOIN episode_processing p ON p.episode_id = e.id"
    )
    (episode_before,) = world.conn.execute(writer_episodes).fetchall()
    result = forget(world, Target("fact", fact_id))
    assert world.conn.execute("SELECT count(*) FROM events WHERE id = 'chat:m2'").fetchone()[0] == 0
    assert world.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 8
    # The episode keeps its id and its writer outcome, without the event.
    (episode,) = world.conn.execute(writer_episodes).fetchall()
    assert (episode[0], episode[1], episode[2]) == (episode_before[0], 8, "ok")
    assert result.derived["episodes_edited"] == 1 and "episodes" not in result.removed["memory"]
    assert "chat:m2" not in [r[0] for r in world.conn.execute("SELECT event_id FROM episode_events")]
    # Its times and token estimate are those of the events it keeps, as the episode builder counts them.
    from nexus_memory.core.tokens import estimate_tokens

    row = world.conn.execute(
        "SELECT start_time, end_time, token_estimate FROM episodes WHERE id = ?", (episode[0],)
    ).fetchone()
    kept = world.conn.execute(
        """SELECT ev.as_of, ev.content FROM episode_events ee JOIN events ev ON ev.id = ee.event_id
           WHERE ee.episode_id = ? ORDER BY ee.position""",
        (episode[0],),
    ).fetchall()
    assert (row[0], row[1]) == (kept[0][0], kept[-1][0])
    assert row[2] == sum(estimate_tokens(r[1]) for r in kept)


def test_every_episode_version_loses_the_event_in_place_and_a_rebuild_adds_nothing(stores: Stores) -> None:
    build(stores, [message(1, "dana@example.com", KEY, sender_name="Dana")])
    # A late import extends the episode: a second version (m1, m2, m3) whose parent is the first (m1 alone).
    ingest(stores, [message(n, "ben@example.com", f"Ben says hello number {n}.", sender_name="Ben") for n in (2, 3)])
    (day,) = stores.conn.execute("SELECT DISTINCT day FROM events").fetchone()
    build_episodes(stores, day, "chat")
    first, second = stores.conn.execute("SELECT id, parent_id FROM episodes ORDER BY event_count").fetchall()
    assert second[1] == first[0]

    result = forget(stores, Target("event", "chat:m1"))

    # The first version held only m1 and goes; the second keeps its id and starts at m2 now, with no parent.
    rows = stores.conn.execute(
        "SELECT id, parent_id, event_count, first_event_id, last_event_id, start_time FROM episodes"
    ).fetchall()
    m2_time = stores.conn.execute("SELECT as_of FROM events WHERE id = 'chat:m2'").fetchone()[0]
    assert [tuple(r) for r in rows] == [(second[0], None, 2, "chat:m2", "chat:m3", m2_time)]
    assert result.removed["memory"]["episodes"] == 1 and result.derived["episodes_edited"] == 1
    # Rebuilding the partition finds the edited version holding its events: nothing is created.
    stats = build_episodes(stores, day, "chat")
    assert (stats.created, stats.extended, stats.unchanged) == (0, 0, 1)
    assert stores.conn.execute("SELECT count(*) FROM episodes").fetchone()[0] == 1


def test_forgetting_an_entity_removes_it_and_what_names_it(world: Stores) -> None:
    forget(world, Target("entity", "zorblax"))
    conn = world.conn
    assert conn.execute("SELECT count(*) FROM entities WHERE normalized = 'zorblax'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM events WHERE content LIKE '%Zorblax%'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM derived_events").fetchone()[0] == 0  # Ben's action item named it
    # Co-occurrence counts never point at a deleted entity.
    assert not conn.execute(
        "SELECT 1 FROM entity_cooccurrences WHERE entity_a NOT IN (SELECT id FROM entities) "
        "OR entity_b NOT IN (SELECT id FROM entities)"
    ).fetchall()


def test_a_forget_that_fails_part_way_leaves_every_store_as_it_was(
    world: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = dump(world)
    files_before = sorted(p.name for p in Path(world.data_dir, "ann").rglob("*"))

    def broken(*_args: object, **_kwargs: object) -> dict[str, int]:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(forget_run.vectors, "delete_vectors", broken)  # after memory and identity rows went
    with pytest.raises(RuntimeError, match="disk on fire"):
        forget(world, Target("sender", "spy@example.com"))
    assert dump(world) == before
    assert sorted(p.name for p in Path(world.data_dir, "ann").rglob("*")) == files_before
    assert world.conn.execute("SELECT count(*) FROM deletion_log").fetchone()[0] == 0


def test_the_ledger_stays_append_only_outside_a_forget(world: Stores) -> None:
    with pytest.raises(db.IntegrityError, match="append-only"), world.transaction():
        world.conn.execute("DELETE FROM events WHERE id = 'chat:m1'")
    assert world.conn.execute("SELECT count(*) FROM forget_authorizations").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        ("event", "chat:nope", "no event"),
        ("fact", "nope", "no fact"),
        ("sender", "nobody@example.com", "no events from that sender"),
        ("entity", "Nobody At All", "no entity"),
        ("planet", "x", "must be one of"),
        ("fact", "  ", "non-empty"),
        ("entity", "Zorb\udcffx", "Unicode"),
        ("sender", "x" * 5, "no events"),
    ],
)
def test_unknown_targets_are_refused_and_nothing_changes(world: Stores, kind: str, value: str, message: str) -> None:
    before = dump(world)
    with pytest.raises(ForgetError, match=message):
        forget(world, Target(kind, value))
    assert dump(world) == before


def test_a_store_written_before_secure_delete_is_vacuumed_once(world: Stores) -> None:
    # An older memory.db: content deleted without secure_delete is still in its free pages.
    old = db.sqlite.connect(str(world.path("memory")))
    old.execute("PRAGMA secure_delete = OFF")
    old.execute("CREATE TABLE scratch (text TEXT)")
    old.executemany("INSERT INTO scratch VALUES (?)", [(f"oldsecret zzyqv {i} " * 20,) for i in range(200)])
    old.commit()
    old.execute("DROP TABLE scratch")
    old.commit()
    old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    old.close()
    world.conn.execute("UPDATE memory_scrub_state SET clean_since = NULL")
    assert files_holding(world.data_dir, "zzyqv") == ["memory.db"]

    result = forget(world, Target("event", "chat:m2"))
    assert result.scrub["vacuumed"] == ["main"]
    assert files_holding(world.data_dir, "zzyqv") == []
    assert world.conn.execute("SELECT clean_since FROM memory_scrub_state").fetchone()[0] is not None
    assert forget(world, Target("event", "chat:m3")).scrub["vacuumed"] == []  # once


# One person under two handles the identity store never merged: a phone and an email address.
PHONE, EMAIL = "+447700900123", "carla.m@example.com"
KITTEN = "Hi, it's Carla. I adopted a kitten named Qwibble."
LOCKER = "Carla here from email. My locker code is zzkrtv."


@pytest.fixture
def two_handles(stores: Stores) -> Stores:
    build(
        stores,
        [
            message(1, PHONE, KITTEN, sender_name="Carla Mendes", platform="sms"),
            message(2, EMAIL, LOCKER, sender_name="Carla Mendes", platform="email"),
            message(
                3, "ben@example.com", "Ben here. I moved to Lisbon last month.", sender_name="Ben", platform="email"
            ),
        ],
    )
    return stores


def test_an_entity_preview_lists_the_other_handles_and_takes_them_along_when_asked(two_handles: Stores) -> None:
    shown = preview(two_handles, Target("entity", "Carla Mendes"))
    assert EMAIL in [h.split(":", 1)[1] for c in shown["candidates"] for h in c["handles"]]
    email_entity = next(c for c in shown["candidates"] if f"email:{EMAIL}" in c["handles"])
    assert "Carla Mendes" in email_entity["why"] and not email_entity["included"]
    assert email_entity["entity_id"] not in shown["entity_ids"]

    result = forget(two_handles, Target("entity", "Carla Mendes", include_candidates=True))

    assert result.status == "scrubbed", result.scrub
    conn = two_handles.conn
    assert conn.execute("SELECT count(*) FROM events WHERE sender_id IN (?, ?)", (PHONE, EMAIL)).fetchone()[0] == 0
    for table, column in (("entities", "name"), ("aliases", "alias"), ("contacts", "handle")):
        assert not conn.execute(f"SELECT 1 FROM {table} WHERE {column} IN (?, ?)", (PHONE, EMAIL)).fetchall(), table
    for marker in (PHONE, EMAIL, "Carla Mendes", "qwibble", "zzkrtv"):
        assert files_holding(two_handles.data_dir, marker) == [], marker
    assert facts_with(two_handles, "Lisbon")  # Ben stays


def test_a_sender_takes_its_handle_rows_when_its_messages_are_gone_already(two_handles: Stores) -> None:
    # Forgetting the person without the candidates takes the phone and the messages shown under the name ...
    forget(two_handles, Target("entity", "Carla Mendes"))
    conn = two_handles.conn
    assert conn.execute("SELECT count(*) FROM events WHERE sender_id = ?", (EMAIL,)).fetchone()[0] == 0
    assert files_holding(two_handles.data_dir, PHONE) == []
    # ... and leaves the email handle's entity, alias and contact, which the sender forget then removes.
    assert files_holding(two_handles.data_dir, EMAIL) == ["identity.db"]
    assert preview(two_handles, Target("sender", EMAIL))["would_remove"]["entities"] == 1

    result = forget(two_handles, Target("sender", EMAIL))

    assert result.status == "scrubbed", result.scrub
    assert {"entities", "aliases", "contacts"} <= set(result.removed["identity"])
    assert files_holding(two_handles.data_dir, EMAIL) == []
    with pytest.raises(ForgetError, match="no events from that sender"):
        forget(two_handles, Target("sender", EMAIL))


def test_a_sender_of_an_entity_that_stays_takes_only_that_handle(two_handles: Stores) -> None:
    from nexus_memory.identity.store import find_entities, merge_entities

    conn = two_handles.conn
    (phone,) = [e.id for e in find_entities(conn, PHONE)]
    (email,) = [e.id for e in find_entities(conn, EMAIL)]
    with two_handles.transaction():
        merge_entities(conn, phone, email)  # one person now: the phone's entity holds both contacts

    forget(two_handles, Target("sender", EMAIL))

    assert conn.execute("SELECT handle FROM contacts WHERE entity_id = ?", (phone,)).fetchall()[0][0] == PHONE
    assert conn.execute("SELECT count(*) FROM entities WHERE id = ?", (phone,)).fetchone()[0] == 1
    assert files_holding(two_handles.data_dir, EMAIL) == []
    assert files_holding(two_handles.data_dir, "zzkrtv") == []


def test_the_cli_preview_names_the_other_handles(
    two_handles: Stores, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from nexus_memory import cli

    monkeypatch.setenv("NEXUS_DATA_DIR", str(two_handles.data_dir))
    assert cli.main(["forget", "--entity", "Carla Mendes"]) == 0
    out = capsys.readouterr().out
    assert f"(email:{EMAIL}): sent messages shown as 'Carla Mendes'" in out and "add --include-candidates" in out
    assert cli.main(["forget", "--entity", "Carla Mendes", "--include-candidates", "--yes"]) == 0
    assert files_holding(two_handles.data_dir, EMAIL) == []
