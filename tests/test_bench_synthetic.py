"""The benchmarks' synthetic stores: the shared writers, and the forget and analytics benchmarks on small stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nexus_memory.bench import analytics as bench_analytics
from nexus_memory.bench import forget as bench_forget
from nexus_memory.bench.synthetic import (
    SyntheticEntity,
    SyntheticFact,
    random_unit_vectors,
    write_entities,
    write_fact_vectors,
    write_facts,
    write_links,
    zipf_ranks,
)
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.vectors.index import VectorIndex
from nexus_memory.embeddings.vectors.vec0 import index_state


def test_writers_fill_facts_entities_links_and_indexed_vectors(stores: Stores) -> None:
    conn = stores.conn
    write_entities(conn, [SyntheticEntity("e1", "Priya  Kapoor", "person", "inferred")], at=5)
    facts = [
        SyntheticFact("f1", "Priya moved to Lisbon", 1_000, 2_000, 3_000, "imessage", "t1", source_event_id="ev1"),
        SyntheticFact("f2", "Priya likes tea", 4_000, 4_000, 0, metadata='{"episode_id": "ep"}'),
    ]
    write_facts(conn, facts)
    write_links(conn, [("f1", "e1", 1_000), ("f2", "e1", 4_000), ("f1", "e1", 1_000)])
    vectors = random_unit_vectors(np.random.default_rng(0), 2, 8)
    write_fact_vectors(stores, "bench-model", facts, vectors)

    entity = conn.execute("SELECT normalized, created_at, updated_at FROM entities").fetchone()
    assert tuple(entity) == ("priya kapoor", 5, 5)
    rows = conn.execute(
        "SELECT id, as_of, ingested_at, created_at, platform, thread_id, source_event_id, metadata FROM facts "
        "ORDER BY id"
    ).fetchall()
    assert [tuple(r) for r in rows] == [
        ("f1", 1_000, 2_000, 3_000, "imessage", "t1", "ev1", None),
        ("f2", 4_000, 4_000, 0, None, None, None, '{"episode_id": "ep"}'),
    ]
    assert conn.execute("SELECT count(*) FROM fact_entities").fetchone()[0] == 2  # the repeated pair once
    # The index is claimed for the model, and each vector is indexed with its fact's metadata.
    assert index_state(conn) == ("bench-model", 8)
    indexed = conn.execute("SELECT target_id, platform, as_of, thread_id FROM vec_embeddings ORDER BY rowid")
    assert [tuple(r) for r in indexed] == [("f1", "imessage", 1_000, "t1"), ("f2", "", 4_000, "")]
    found = VectorIndex(stores, "bench-model", 8).search(vectors[1], 1)
    assert found[0][0] == "f2"


def test_random_unit_vectors_and_zipf_ranks() -> None:
    vectors = random_unit_vectors(np.random.default_rng(1), 50, 16)
    assert vectors.dtype == np.float32 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    ranks = zipf_ranks(np.random.default_rng(1), 10_000, 20)
    assert ranks.min() == 0 and ranks.max() == 19
    counts = np.bincount(ranks, minlength=20)
    assert counts[0] > counts[1] > counts[5]  # the head is the most frequent


def test_forget_bench_small_store(tmp_path: Path) -> None:
    result = bench_forget.run(1_500, directory=tmp_path)
    assert result["facts"] == 1_500 and result["decay"]["checked"] == 1_500
    for kind in ("fact", "event", "sender", "entity", "fact_first_time_with_vacuum"):
        removed = result[f"forget_{kind}"]["rows_removed"]
        assert removed["memory"] > 0 and removed["embeddings"] > 0, kind
    assert result["forget_fact_first_time_with_vacuum"]["vacuumed"] == ["main", "events", "identity"]
    assert result["forget_fact"]["vacuumed"] == []
    assert list(tmp_path.iterdir()) == []  # the temporary store is gone


def test_analytics_bench_builds_then_reuses_its_store(tmp_path: Path) -> None:
    result = bench_analytics.run(tmp_path / "store", events=600, progress=lambda line: None)
    store = result["store"]
    assert store["events"] == 600 and store["episodes"] > 0
    assert store["facts"] == store["embeddings"] > 0 and store["observations"] > 0
    assert set(result["build_s"]) == {"ingest", "episodes", "writer_output", "vectors"}
    assert set(result["sections"]) == set(bench_analytics.SECTIONS)
    again = bench_analytics.run(tmp_path / "store", events=600, progress=lambda line: None)
    assert "build_s" not in again and again["store"] == store
