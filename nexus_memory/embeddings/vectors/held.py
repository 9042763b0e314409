"""Small vector types held in memory per connection and searched in numpy, with vec0's exact answer.

On a small store (the demo's 273 facts) a warm recall's vec0 KNN for 116 rows took ~1.7 ms, most of it one
auxiliary-column read per row found; the same search over vectors held in memory takes ~0.3 ms.
`search` gives what `vec0.knn` gives, to the bit: the distance is computed as sqlite-vec computes it
(`distance_cosine_float`: float32 products summed in order, the norms' square roots and the division in
double, the result rounded to float32), and rows of equal distance come in vec0's order (earlier chunk
first, within a chunk the later slot first: its `min_idx` and `merge_sorted_lists`).

Only unfiltered searches are answered here: vec0 filters on the metadata it copied when the row was
indexed, which only a per-row read of vec0 gives back (~8 ms for 273 rows, more than it saves).

A type is held from its second search on a connection (`for_search`), when it has at most HELD_MAX_ROWS
rows, within HELD_TOTAL_ROWS for the process and HELD_CONNECTIONS connections; what is held is dropped when
the embeddings store changes (another connection's commit, any write of this one: `_state`), except across
recall's own access-count write (`kept`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from nexus_memory.core import db

HELD_MAX_ROWS = 5_000  # rows of one (model, type) held at most: 7.7 MB at 384 dimensions
HELD_TOTAL_ROWS = 10_000  # rows held by the process at most, all connections together (older ones dropped first)
HELD_CONNECTIONS = 4  # connections whose vectors are held at once (the oldest is dropped)
# Rows whose float32 BLAS cosine is within this of the k-th are rescored exactly: each way of summing 384
# products of unit vectors is within 384 x 2^-24 (2.3e-5) of the true value, so none of the k nearest is missed.
CANDIDATE_MARGIN = 1e-3


@dataclass(frozen=True)
class HeldType:
    """One (model, type)'s vec0 rows: ids, float32 vectors, their norms as sqlite-vec sums them, and where
    each sits in vec0's chunks (its order for equal distances)."""

    ids: list[str]
    vectors: np.ndarray  # (n, dimension) float32
    squares: np.ndarray  # (n,) float64 of the float32 in-order sum of squares (sqlite-vec's aMag)
    norms: np.ndarray  # (n,) float64 square roots of `squares`, for the BLAS pre-selection
    chunk: np.ndarray  # (n,) int64 vec0 chunk id
    offset: np.ndarray  # (n,) int64 slot in that chunk
    position: dict[str, int]  # target id -> row


# id(conn) -> (conn, _state when loaded, (model, type) -> what is held: None when too large or unreadable,
# SEARCHED_ONCE until its second search).
_HELD: dict[int, tuple[db.Connection, tuple[int, int], dict[tuple[str, str], HeldType | str | None]]] = {}
SEARCHED_ONCE = "searched once"
_LOCK = threading.Lock()  # connections in other threads change _HELD too


def _state(conn: db.Connection) -> tuple[int, int]:
    """What moves when the embeddings store may have changed: other connections' commits, this one's writes."""
    return db.store_state(conn, "embeddings")


def held(conn: db.Connection, model: str, target_type: str, *, load: bool = True) -> HeldType | None:
    """The held rows of (model, target_type) on `conn`, read now when `load` and not held yet; None when the
    type is too large, cannot be read, or the connection is inside a transaction (what it reads may roll back)."""
    types = _types(conn, create=load)
    if types is None:
        return None
    key = (model, target_type)
    if load and types.get(key, SEARCHED_ONCE) is SEARCHED_ONCE:
        types[key] = _read(conn, model, target_type)
    found = types.get(key)
    return found if isinstance(found, HeldType) else None


def for_search(conn: db.Connection, model: str, target_type: str) -> HeldType | None:
    """`held` for a search: read at the type's second search on `conn` while the store is unchanged, so that a
    process that searches once (a cold CLI command) keeps vec0's search (~2.6 ms there, ~4 ms to read them)."""
    types = _types(conn, create=True)
    if types is None:
        return None
    if (model, target_type) not in types:
        types[(model, target_type)] = SEARCHED_ONCE
        return None
    return held(conn, model, target_type)


def _types(conn: db.Connection, *, create: bool) -> dict[tuple[str, str], HeldType | str | None] | None:
    """What `conn` holds while the store is as it was when it was read; a new, empty entry with `create` (never
    inside a transaction); else None."""
    entry = _HELD.get(id(conn))
    if entry is None and not create:
        return None
    state = _state(conn)
    if entry is not None and entry[0] is conn and entry[1] == state:
        return entry[2]
    if not create or conn.in_transaction:
        return None
    with _LOCK:
        _HELD.pop(id(conn), None)
        while len(_HELD) >= HELD_CONNECTIONS:
            del _HELD[next(iter(_HELD))]
        entry = _HELD[id(conn)] = (conn, state, {})
    return entry[2]


def _read(conn: db.Connection, model: str, target_type: str) -> HeldType | None:
    """The canonical vectors of vec0's rows of this type, with their chunk positions; None past HELD_MAX_ROWS
    or when vec0's position table is not there to read (another sqlite-vec layout)."""
    count = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM embeddings WHERE model = ? AND target_type = ? LIMIT ?)",
        (model, target_type, HELD_MAX_ROWS + 1),
    ).fetchone()[0]
    if count > HELD_MAX_ROWS or not _room_for(conn, count):
        return None
    try:
        rows = conn.execute(
            """SELECT e.target_id, e.embedding, p.chunk_id, p.chunk_offset
               FROM embeddings e JOIN embeddings.vec_embeddings_rowids p ON p.rowid = e.rowid
               WHERE e.model = ? AND e.target_type = ?""",
            (model, target_type),
        ).fetchall()
    except db.OperationalError:
        return None
    if not rows or len({len(r[1]) for r in rows}) != 1:
        return None
    vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").astype(np.float32).reshape(len(rows), -1)
    squares = _in_order_sum(vectors * vectors).astype(np.float64)
    ids = [r[0] for r in rows]
    return HeldType(
        ids=ids,
        vectors=vectors,
        squares=squares,
        norms=np.sqrt(squares),
        chunk=np.array([r[2] for r in rows], dtype=np.int64),
        offset=np.array([r[3] for r in rows], dtype=np.int64),
        position={target_id: i for i, target_id in enumerate(ids)},
    )


def _room_for(conn: db.Connection, rows: int) -> bool:
    """Whether `rows` more fit in HELD_TOTAL_ROWS, once other connections' vectors are dropped, oldest first."""

    def total() -> int:
        # list(): a snapshot taken under the GIL, as another thread may add a type to its own connection's entry
        held_now = [t for entry in list(_HELD.values()) for t in list(entry[2].values())]
        return sum(len(t.ids) for t in held_now if isinstance(t, HeldType))

    with _LOCK:
        for other in [key for key in _HELD if key != id(conn)]:
            if total() + rows <= HELD_TOTAL_ROWS:
                break
            del _HELD[other]
        return total() + rows <= HELD_TOTAL_ROWS


def _in_order_sum(products: np.ndarray) -> np.ndarray:
    """Each row's float32 sum taken left to right, as sqlite-vec's loop adds (numpy's sum adds pairwise)."""
    return np.cumsum(products, axis=-1, dtype=np.float32)[..., -1]


def search(rows: HeldType, query: np.ndarray, k: int) -> list[tuple[str, float]] | None:
    """(target_id, cosine) of the k nearest rows, best first, as `vec0.knn` without a filter returns them;
    None (ask vec0) when a distance is not a number (a zero vector)."""
    query = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
    if k <= 0 or query.size != rows.vectors.shape[1]:
        return None if k > 0 else []
    q_squares = float(_in_order_sum(query * query))
    # Pre-selection by BLAS: the k-th best cosine less the margin keeps every row that may rank in the k.
    rough = (rows.vectors @ query) / np.maximum(rows.norms * np.sqrt(q_squares), 1e-30)
    if k < len(rough):
        kth = np.partition(rough, len(rough) - k)[len(rough) - k]
        candidates = np.flatnonzero(rough >= kth - CANDIDATE_MARGIN)
    else:
        candidates = np.arange(len(rough))
    dot = _in_order_sum(rows.vectors[candidates] * query).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        distance = (1.0 - dot / (np.sqrt(rows.squares[candidates]) * np.sqrt(q_squares))).astype(np.float32)
    if np.isnan(distance).any():
        return None
    order = np.lexsort((-rows.offset[candidates], rows.chunk[candidates], distance))[:k]
    return [(rows.ids[candidates[i]], 1.0 - float(distance[i])) for i in order]


@contextlib.contextmanager
def kept(conn: db.Connection) -> Iterator[None]:
    """Around a write of `conn` that leaves the embeddings store as it was (recall's access counts): what is
    held before it stays held after it, unless another connection committed meanwhile."""
    entry = _HELD.get(id(conn))
    before = _state(conn) if entry is not None else None
    yield
    if entry is None or entry[0] is not conn or entry[1] != before or conn.in_transaction:
        return
    after = _state(conn)
    if after[0] == before[0] and _HELD.get(id(conn)) is entry:
        _HELD[id(conn)] = (conn, after, entry[2])
