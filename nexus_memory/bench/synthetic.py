"""The benchmarks' synthetic stores: entities, facts, their links and vectors, written in bulk.

Each benchmark decides what its store holds (texts, people, how facts spread over time, how vectors
cluster); these functions are the one way they write it. Rows go in with plain INSERTs, not through
the writer, which would check each fact against the store and make a large store take hours; the
vectors go through `VectorIndex.add`, as the embedding step stores them. Events come from each
benchmark's own source (the bundled sample here, `history.py`, or rows of its own).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.step import rebuild_index
from nexus_memory.embeddings.vectors.index import VectorIndex
from nexus_memory.embeddings.vectors.vec0 import index_state
from nexus_memory.identity.store import normalize

# The bundled sample conversation: three weeks of iMessage, Gmail, Discord and agent sessions.
SAMPLE_EVENTS = Path(__file__).resolve().parent.parent / "sample_data" / "events.jsonl"


def sample_records() -> list[dict[str, Any]]:
    """The events of `SAMPLE_EVENTS`, as JSON-ready records."""
    text = SAMPLE_EVENTS.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class SyntheticEntity(NamedTuple):
    """One row of `entities`; its lookup key is `normalize(name)`, as for every entity."""

    id: str
    name: str
    type: str
    source: str


class SyntheticFact(NamedTuple):
    """One row of `facts`, its fields in the order of `write_facts`'s columns."""

    id: str
    text: str
    as_of: int
    ingested_at: int
    created_at: int
    platform: str | None = None
    thread_id: str | None = None
    source_event_id: str | None = None
    metadata: str | None = None


def write_entities(conn: db.Connection, entities: Iterable[SyntheticEntity], *, at: int = 0) -> None:
    """Insert `entities`, created and updated at `at` (unix ms)."""
    conn.executemany(
        """INSERT INTO entities (id, name, normalized, type, source, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        ((e.id, e.name, normalize(e.name), e.type, e.source, at, at) for e in entities),
    )


def write_facts(conn: db.Connection, facts: Iterable[SyntheticFact]) -> None:
    conn.executemany(
        """INSERT INTO facts (id, text, as_of, ingested_at, created_at, platform, thread_id, source_event_id,
               metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        facts,
    )


def write_links(conn: db.Connection, links: Iterable[tuple[str, str, int]]) -> None:
    """Link facts to the entities they mention: (fact_id, entity_id, as_of); a repeated pair is kept once."""
    conn.executemany("INSERT OR IGNORE INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, ?)", links)


def write_fact_vectors(stores: Stores, model: str, facts: Sequence[SyntheticFact], vectors: np.ndarray) -> None:
    """Store and index one vector per fact (row i of `vectors` is `facts[i]`'s) under `model`.

    The first call on a fresh store claims the index for `model`, as the embedding step does on first use.
    """
    dimension = vectors.shape[1]
    if index_state(stores.conn) is None:
        rebuild_index(stores, model, dimension)
    VectorIndex(stores, model, dimension).add(
        "fact", [(f.id, v, f.platform, f.as_of, f.thread_id) for f, v in zip(facts, vectors, strict=True)]
    )


def random_unit_vectors(rng: np.random.Generator, count: int, dimension: int) -> np.ndarray:
    """`count` float32 vectors of length 1, spread evenly over the sphere."""
    vectors = rng.standard_normal((count, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def zipf_ranks(rng: np.random.Generator, size: int, count: int, exponent: float = 1.3) -> np.ndarray:
    """`size` indexes into `count` things, Zipf-distributed: 0 the most frequent; the long tail piles up on the last."""
    return np.minimum(rng.zipf(exponent, size=size), count) - 1
