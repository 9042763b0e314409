"""Schema creation, upgrade of older stores, refusal of newer ones, and ledger immutability."""

from __future__ import annotations

import pytest

from nexus_memory.core import db
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.ledger import RawRecord, ingest


def test_every_store_has_its_tables(stores: Stores) -> None:
    names = {
        r[0]
        for r in stores.conn.execute(
            """SELECT name FROM sqlite_master UNION SELECT name FROM events.sqlite_master
           UNION SELECT name FROM identity.sqlite_master UNION SELECT name FROM embeddings.sqlite_master"""
        )
    }
    expected = {
        "events",
        "event_rejects",
        "derived_events",
        "facts",
        "facts_fts",
        "fact_entities",
        "causal_links",
        "observation_facts",
        "memory_processing_log",
        "episodes",
        "episode_definitions",
        "episode_events",
        "episode_entity_mentions",
        "analysis_types",
        "analysis_runs",
        "facets",
        "mental_models",
        "entities",
        "aliases",
        "entity_tags",
        "entity_cooccurrences",
        "merge_candidates",
        "session_aliases",
        "embeddings",
        "vec_embeddings",
    }
    assert expected <= names
    assert stores.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert stores.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert stores.versions == {name: len(db.MIGRATIONS[name]) for name in db.STORES}
    assert stores.versions["embeddings"] == 2  # text_hash
    columns = {r[1] for r in stores.conn.execute("PRAGMA embeddings.table_info(embeddings)")}
    assert "text_hash" in columns


def test_older_store_is_upgraded(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    Stores(settings).close()
    migration = "CREATE TABLE upgrade_probe (id INTEGER PRIMARY KEY)"
    monkeypatch.setitem(db.MIGRATIONS, "memory", [*db.MIGRATIONS["memory"], migration])
    with Stores(settings) as stores:
        assert stores.versions["memory"] == len(db.MIGRATIONS["memory"])  # the probe is the newest
        assert stores.conn.execute("SELECT count(*) FROM upgrade_probe").fetchone()[0] == 0


def test_newer_store_is_refused_with_a_clear_message(settings: Settings) -> None:
    Stores(settings).close()
    conn = db.connect(settings.store_path("identity"))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(db.SchemaError, match="newer than this Nexus Memory understands"):
        Stores(settings)


def test_events_are_immutable(stores: Stores) -> None:
    record = {"platform": "chat", "sender_id": "ann", "content": "hello", "as_of": 1_700_000_000}
    ingest(stores, [RawRecord("t", 1, record, "")])
    with pytest.raises(db.IntegrityError, match="immutable"):
        stores.conn.execute("UPDATE events SET content = 'changed'")
    with pytest.raises(db.IntegrityError, match="append-only"):
        stores.conn.execute("DELETE FROM events")


def _texts(stores: Stores) -> list[str]:
    return [r[0] for r in stores.conn.execute("SELECT text FROM facts ORDER BY text")]


def _add_fact(stores: Stores, text: str) -> None:
    stores.conn.execute(
        "INSERT INTO facts(id, text, as_of, ingested_at, created_at) VALUES (?, ?, 0, 0, 0)", (text, text)
    )


def test_a_failed_inner_transaction_rolls_back_only_itself(stores: Stores) -> None:
    with stores.transaction():
        _add_fact(stores, "outer before")
        with pytest.raises(ValueError), stores.transaction():
            _add_fact(stores, "inner")
            with stores.transaction():
                _add_fact(stores, "innermost")
            raise ValueError("inner part fails")
        _add_fact(stores, "outer after")
    assert _texts(stores) == ["outer after", "outer before"]
    assert not stores.conn.in_transaction


def test_inner_transactions_commit_only_with_the_outer_one(stores: Stores) -> None:
    with pytest.raises(RuntimeError), stores.transaction():
        with stores.transaction():
            _add_fact(stores, "inner, released")
        assert stores.conn.in_transaction  # releasing a savepoint commits nothing yet
        raise RuntimeError("outer fails")
    assert _texts(stores) == []
    with stores.transaction():
        with stores.transaction():
            _add_fact(stores, "inner")
        _add_fact(stores, "outer")
    assert _texts(stores) == ["inner", "outer"]
    assert not stores.conn.in_transaction
