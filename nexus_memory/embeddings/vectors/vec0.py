"""The SQLite side of the vector index: which model it serves, the vec0 table and exact KNN over it,
and the canonical rows (with the metadata both indexes filter on) that every index is built from.

`vec_embeddings` (sqlite-vec vec0, cosine, metadata columns platform / as_of / thread_id) answers
exact KNN with the filters evaluated inside the scan. It serves small stores and is the fallback
of the IVF index (ivf.py); at 1M rows a scan takes ~700 ms here, too slow for recall.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from nexus_memory.core import db

NULL_TIME = np.iinfo(np.int64).min  # as_of of a NULL value (never matches a time filter)
NULL_TIME_SQL = int(NULL_TIME)


class IndexModelMismatch(RuntimeError):
    """The search index was built for another embedding model or dimension than the one in use."""


# --- metadata of indexed rows -------------------------------------------------------------------


@dataclass(frozen=True)
class Filter:
    """Constraints on an indexed row's platform / as_of / thread; a None field does not constrain.
    Time bounds are inclusive."""

    platform: str | None = None
    time_after: int | None = None
    time_before: int | None = None
    thread_id: str | None = None

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.platform, self.time_after, self.time_before, self.thread_id))


# Where platform / as_of / thread_id come from, per target type. Entities and mental models have
# no platform or thread; their as_of is when they were last seen / updated.
_META_JOINS: dict[str, tuple[str, str]] = {
    "fact": ("LEFT JOIN facts s ON s.id = e.target_id", "s.platform, s.as_of, s.thread_id"),
    "observation": (
        "LEFT JOIN analysis_runs s ON s.id = e.target_id LEFT JOIN episodes ep ON ep.id = s.episode_id",
        "ep.platform, COALESCE(ep.end_time, s.created_at), ep.thread_id",
    ),
    "entity": ("LEFT JOIN entities s ON s.id = e.target_id", "NULL, s.last_seen, NULL"),
    "mental_model": ("LEFT JOIN mental_models s ON s.id = e.target_id", "NULL, s.updated_at, NULL"),
}


def indexed_rows_sql(target_type: str) -> str:
    """SELECT rowid, target_id, embedding, platform, as_of, thread_id of one model and type.

    Parameters: (model, target_type, min_rowid). `NOT INDEXED` makes SQLite walk the rowid range
    instead of the model index, so a catch-up read of a few new rows stays a few-row read.
    """
    join, cols = _META_JOINS.get(target_type, ("", "NULL, NULL, NULL"))
    return (
        f"SELECT e.rowid, e.target_id, e.embedding, {cols} "
        f"FROM embeddings e NOT INDEXED {join} "
        "WHERE e.rowid > ? AND e.model = ? AND e.target_type = ? ORDER BY e.rowid"
    )


# --- vector_index_state and the vec0 table ------------------------------------------------------


def index_state(conn: db.Connection) -> tuple[str, int] | None:
    """(model, dimension) the search index serves, or None before first use."""
    row = conn.execute("SELECT model, dimension FROM vector_index_state WHERE id = 1").fetchone()
    return (row[0], int(row[1])) if row else None


def mismatch_message(have: tuple[str, int], want: tuple[str, int]) -> str:
    return (
        f"The vector index was built for model {have[0]!r} ({have[1]} dims) but {want[0]!r} "
        f"({want[1]} dims) is configured. Run `nexus-memory rebuild-index` to rebuild it for the "
        "configured model, or set NEXUS_EMBEDDING_MODEL back."
    )


def create_vec_table(conn: db.Connection, dimension: int) -> None:
    """(Re)create the empty vec0 table for vectors of `dimension`; see schema/embeddings.sql."""
    conn.execute("DROP TABLE IF EXISTS vec_embeddings")
    conn.execute(
        f"""CREATE VIRTUAL TABLE embeddings.vec_embeddings USING vec0(
            target_type TEXT partition key,
            embedding float[{int(dimension)}] distance_metric=cosine,
            platform TEXT,
            as_of INTEGER,
            thread_id TEXT,
            +target_id TEXT
        )"""
    )


def insert_vec_rows(conn: db.Connection, rows: Iterator[tuple[Any, ...]] | list[tuple[Any, ...]]) -> None:
    """Bulk insert (rowid, target_type, embedding blob, platform, as_of, thread_id, target_id).

    vec0 metadata columns reject NULL, so a missing platform/thread is stored as '' and a missing
    as_of as NULL_TIME (time filters exclude it explicitly, see `knn`).
    """
    conn.executemany(
        "INSERT INTO vec_embeddings(rowid, target_type, embedding, platform, as_of, thread_id, target_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            (
                r[0],
                r[1],
                r[2],
                "" if r[3] is None else r[3],
                NULL_TIME_SQL if r[4] is None else r[4],
                "" if r[5] is None else r[5],
                r[6],
            )
            for r in rows
        ),
    )


def knn(conn: db.Connection, query: np.ndarray, k: int, target_type: str, flt: Filter) -> list[tuple[str, float]]:
    """Exact KNN through sqlite-vec, with the filters inside the KNN: (target_id, cosine), best first."""
    sql = [
        "SELECT target_id, distance FROM vec_embeddings WHERE embedding MATCH ? AND k = ?",
        "AND target_type = ?",
    ]
    args: list[Any] = [np.ascontiguousarray(query, dtype=np.float32).tobytes(), int(k), target_type]
    if flt.time_after is not None or flt.time_before is not None:
        sql.append("AND as_of != ?")  # rows without as_of never match a time filter
        args.append(NULL_TIME_SQL)
    for clause, value in (
        ("platform = ?", flt.platform),
        ("as_of >= ?", flt.time_after),
        ("as_of <= ?", flt.time_before),
        ("thread_id = ?", flt.thread_id),
    ):
        if value is not None:
            sql.append(f"AND {clause}")
            args.append(value)
    rows = conn.execute(" ".join(sql) + " ORDER BY distance", args).fetchall()
    return [(r[0], 1.0 - float(r[1])) for r in rows]


def to_blob(vector: np.ndarray) -> bytes:
    """Little-endian float32 bytes, the format of `embeddings.embedding` and vec0."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()
