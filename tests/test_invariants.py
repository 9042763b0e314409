"""The store's integrity checks: each invariant holds on a built store, and each way of breaking it is counted."""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg
import pytest
from test_dagster import EVENTS, _checks, _event, _ingest, _run_job

from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.pipeline import invariants
from nexus_memory_assets.pipeline import run_pipeline

DAYS = {"imessage": ["2025-03-03"], "gmail": ["2025-03-04"]}


@pytest.fixture
def built(settings: Settings) -> Settings:
    """Three events on two platforms through every layer."""
    _ingest(settings, EVENTS)
    assert run_pipeline(settings, instance=dg.DagsterInstance.ephemeral()).ok
    return settings


def _per_partition(stores: Stores, count: Callable[[Stores, str, list[str]], int]) -> int:
    return sum(count(stores, platform, days) for platform, days in DAYS.items())


def _all_counts(stores: Stores) -> dict[str, int]:
    return {
        "fts_missing": _per_partition(stores, invariants.facts_missing_from_keyword_index),
        "fts_off": invariants.keyword_index_rows_off(stores),
        "vectors_missing": _per_partition(stores, invariants.vectors_missing_from_index),
        "index_extra": invariants.index_rows_without_vector(stores),
        "members_missing": _per_partition(stores, invariants.episode_events_without_event),
        "overlaps": _per_partition(stores, invariants.overlapping_episodes),
        "merges": len(invariants.merges_without_candidate(stores)),
        **invariants.orphan_links(stores),
    }


def test_a_built_store_breaks_no_invariant(built: Settings) -> None:
    with Stores(built) as stores:
        assert stores.counts()["facts"] > 0 and stores.counts()["embeddings"] > 0
        assert set(_all_counts(stores).values()) == {0}


def test_keyword_index_out_of_step_with_facts(built: Settings) -> None:
    with Stores(built) as stores:
        rowid, text = stores.conn.execute("SELECT rowid, text FROM facts LIMIT 1").fetchone()
        stores.conn.execute("INSERT INTO facts_fts(facts_fts, rowid, text) VALUES ('delete', ?, ?)", (rowid, text))
        counts = _all_counts(stores)
        assert (counts["fts_missing"], counts["fts_off"]) == (1, 1)
        stores.conn.execute("INSERT INTO facts_fts(facts_fts) VALUES ('rebuild')")  # the fix the check names
        assert set(_all_counts(stores).values()) == {0}


def test_vector_index_out_of_step_with_canonical_vectors(built: Settings) -> None:
    with Stores(built) as stores:
        first, second = [r[0] for r in stores.conn.execute("SELECT rowid FROM embeddings ORDER BY rowid LIMIT 2")]
        stores.conn.execute("DELETE FROM vec_embeddings WHERE rowid = ?", (first,))  # a vector the index lost
        stores.conn.execute("DELETE FROM embeddings WHERE rowid = ?", (second,))  # an index row with no vector
        counts = _all_counts(stores)
        assert (counts["vectors_missing"], counts["index_extra"]) == (1, 1)
        # Vectors of another model are not the index's business.
        stores.conn.execute("UPDATE embeddings SET model = 'another-model' WHERE rowid = ?", (first,))
        assert _all_counts(stores)["vectors_missing"] == 0


def test_orphaned_links(built: Settings) -> None:
    with Stores(built) as stores:
        conn = stores.conn
        fact_id = conn.execute("SELECT id FROM facts LIMIT 1").fetchone()[0]
        episode_id = conn.execute("SELECT id FROM episodes WHERE partition_key = '2025-03-03|imessage'").fetchone()[0]
        conn.execute(
            "INSERT INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, 'no-such-entity', 0)", (fact_id,)
        )
        conn.execute("INSERT INTO episode_events (episode_id, event_id, position) VALUES (?, 'gone', 9)", (episode_id,))
        # Links of rows deleted with the foreign keys off (a crash in the middle of a hand repair, another tool).
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("INSERT INTO episode_events (episode_id, event_id, position) VALUES ('no-episode', '1', 0)")
        conn.execute("INSERT INTO observation_facts (analysis_run_id, fact_id) VALUES ('no-run', ?)", (fact_id,))
        counts = _all_counts(stores)
        assert counts["members_missing"] == 1
        assert (counts["episode_events"], counts["fact_entities"], counts["observation_facts"]) == (1, 1, 1)


def test_overlapping_current_episodes_of_one_thread(built: Settings) -> None:
    with Stores(built) as stores:
        conn = stores.conn
        row = dict(conn.execute("SELECT * FROM episodes WHERE partition_key = '2025-03-03|imessage'").fetchone())
        assert _all_counts(stores)["overlaps"] == 0
        # A second current episode of the same thread and definition over the same minutes.
        clone = {**row, "id": "ep-clone", "start_time": row["start_time"] + 1, "end_time": row["end_time"] + 60_000}
        conn.execute(
            f"INSERT INTO episodes ({', '.join(clone)}) VALUES ({', '.join('?' * len(clone))})", list(clone.values())
        )
        assert _all_counts(stores)["overlaps"] == 2  # each of the two overlaps the other
        # A newer version of an episode is not an overlap: its parent stops being current.
        conn.execute("UPDATE episodes SET parent_id = ? WHERE id = 'ep-clone'", (row["id"],))
        assert _all_counts(stores)["overlaps"] == 0


def test_merges_need_a_candidate(built: Settings) -> None:
    with Stores(built) as stores:
        conn = stores.conn
        a, b, c, d = (identity.create_entity(conn, name, "person") for name in ("Ann", "Annie", "A. Lee", "Bo"))
        identity.merge_entities(conn, a, b)  # behind the candidates' back
        assert invariants.merges_without_candidate(stores) == [b]
        conn.execute("UPDATE entities SET merged_into = NULL WHERE id = ?", (b,))
        # Accepted candidates; the first names c, which by the time it is accepted is merged into d.
        first = identity.propose_merge(conn, a, c, 0.5, "same person")["candidate_id"]
        second = identity.propose_merge(conn, d, c, 0.5, "same initials")["candidate_id"]
        identity.resolve_candidate(conn, second, accept=True)  # c into d
        identity.resolve_candidate(conn, first, accept=True)  # c's survivor d into a
        merged = dict(conn.execute("SELECT id, merged_into FROM entities WHERE merged_into IS NOT NULL"))
        assert merged == {c: d, d: a}
        assert invariants.merges_without_candidate(stores) == []


def test_overlapping_episodes_block_the_writer(settings: Settings) -> None:
    _ingest(settings, [_event("a", "sms", "2025-03-03T10:00:00Z")])
    instance = dg.DagsterInstance.ephemeral()
    assert _checks(_run_job(settings, instance, "memory_pipeline", "sms", "2025-03-03"))[
        "episodes_do_not_overlap"
    ].passed
    with Stores(settings) as stores:
        row = dict(stores.conn.execute("SELECT * FROM episodes").fetchone())
        clone = {**row, "id": "ep-clone"}
        stores.conn.execute(
            f"INSERT INTO episodes ({', '.join(clone)}) VALUES ({', '.join('?' * len(clone))})", list(clone.values())
        )
    _ingest(settings, [_event("b", "sms", "2025-03-03T18:00:00Z", "Priya is moving to Berlin in May.")])
    result = _run_job(settings, instance, "memory_pipeline", "sms", "2025-03-03")
    check = _checks(result)["episodes_do_not_overlap"]
    assert not check.passed and check.blocking and check.metadata["overlapping_episodes"].value == 2
    assert not result.asset_materializations_for_node("facts")  # the writer did not run
    with Stores(settings) as stores:
        assert stores.conn.execute("SELECT count(*) FROM facts WHERE source_event_id = 'b'").fetchone()[0] == 0
