"""One embedding model's vectors: written to the canonical `embeddings` table and the vec0 index,
searched through the IVF index when large (ivf.py) and vec0 when small (vec0.py; unfiltered, its vectors held in
memory: held.py), kept fit by `maintain`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from nexus_memory.core import db
from nexus_memory.core.ids import stable_id
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.vectors import held
from nexus_memory.embeddings.vectors.ivf import (
    RESOLVE_SLACK,
    IvfIndex,
    ann_root,
    build_ivf,
    compact_ivf,
    current_generation,
    default_nprobe,
    generation_sizes,
    loaded_index,
)
from nexus_memory.embeddings.vectors.vec0 import (
    Filter,
    IndexModelMismatch,
    index_state,
    insert_vec_rows,
    knn,
    mismatch_message,
    to_blob,
)

ANN_THRESHOLD = 20_000  # rows of one (model, target_type) above which the IVF index is used
FOUND_CACHE_MAX = 4_096  # vectors of found rows one VectorIndex keeps for `vectors`

# (target_id, vector, platform, as_of, thread_id): one row to store and index.
Row = tuple[str, np.ndarray, str | None, int | None, str | None]
# An IVF scan's hits before naming: rowids, target ids (None: the generation keeps none), scores, vectors.
_Scanned = tuple[np.ndarray, list[str] | None, np.ndarray, np.ndarray | None]


class VectorIndex:
    """One model's vectors: stores them (canonical table + vec0), searches them (IVF when large, vec0
    when small) and keeps the IVF index fit (`maintain`)."""

    def __init__(
        self,
        stores: Stores,
        model: str,
        dimension: int,
        *,
        ann_threshold: int = ANN_THRESHOLD,
        nprobe: int | None = None,
    ) -> None:
        self.stores = stores
        self.conn = stores.conn
        self.model = model
        self.dimension = int(dimension)
        self.ann_threshold = ann_threshold
        self.nprobe = nprobe
        state = index_state(self.conn)
        if state is not None and state != (model, self.dimension):
            raise IndexModelMismatch(mismatch_message(state, (model, self.dimension)))
        # (target_type, target_id) -> vector of what this instance's searches found: recall's MMR asks for the
        # vectors of its candidates, mostly these, so they need no read of `embeddings` (see `vectors`).
        self._found: dict[tuple[str, str], np.ndarray] = {}
        # (target_type, k, filter) -> (index, its seen_rowid, query, scan) of a scan `search_ahead` ran.
        self._ahead: dict[tuple[str, int, Filter], tuple[IvfIndex, int, np.ndarray, _Scanned | None]] = {}

    def _root(self, target_type: str) -> Path:
        return ann_root(self.stores.data_dir, self.model) / target_type

    def holds(self, target_type: str) -> bool:
        """Whether any vector of this type is stored (under any model): a search of a type with none finds
        nothing, so recall skips it (a 1M-fact store with no observation yet: two empty searches a query)."""
        row = self.conn.execute("SELECT 1 FROM embeddings WHERE target_type = ? LIMIT 1", (target_type,))
        return row.fetchone() is not None

    def search(
        self,
        query: np.ndarray,
        k: int,
        *,
        target_type: str = "fact",
        platform: str | None = None,
        time_after: int | None = None,
        time_before: int | None = None,
        thread_id: str | None = None,
    ) -> list[tuple[str, float]]:
        """(target_id, cosine similarity) of the k nearest rows, best first.

        Filters (platform, inclusive as_of bounds, thread) are applied before the top-k cut.
        """
        if k <= 0:
            return []
        query = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        flt = Filter(platform, time_after, time_before, thread_id)
        index = loaded_index(self._root(target_type))
        if index is not None:
            with index.lock:
                index.catch_up(self.conn, self.model, target_type)
                ahead = self._ahead.pop((target_type, k, flt), None)
                # A scan run ahead counts while the index has read no row since, for the same query.
                if ahead is None or ahead[0] is not index or ahead[1] != index.seen_rowid:
                    found = self._scan(index, query, k, flt)
                else:
                    found = ahead[3] if np.array_equal(ahead[2], query) else self._scan(index, query, k, flt)
            if found is not None:
                rowids, ids, scores, vectors = found
                if ids is None:
                    return self._resolve(rowids, scores, k)
                return self._named(target_type, rowids, ids, scores, vectors, k)
        return self.exact(query, k, target_type=target_type, flt=flt)

    def _scan(self, index: IvfIndex, query: np.ndarray, k: int, flt: Filter) -> _Scanned | None:
        """The IVF part of `search`, with no SQL (the caller holds index.lock): the hits' rowids, ids (None
        when the generation keeps none), scores and vectors; None when the filter needs the exact fallback."""
        found = index.search(query, k + RESOLVE_SLACK, flt, self.nprobe or default_nprobe(index.nlist))
        if found is None:
            return None
        slots, scores = found
        ids = index.ids_at(slots)
        return index.rowids_at(slots), ids, scores, index.vectors_at(slots) if ids is not None else None

    def search_ahead(
        self, k: int, *, target_type: str = "fact", **filters: str | int | None
    ) -> Callable[[np.ndarray], None] | None:
        """Prepare a `search` with these arguments (`filters`: its platform, time_after, time_before and
        thread_id) whose IVF scan runs before it is asked for: returns what scans for a query vector, with no
        SQL (for the thread that embeds the query, while the caller's other SQL runs; numpy's scan releases
        the GIL), or None when this type has no IVF index. The `search` that follows then only names the
        rows found; it scans again if the index has read new rows meanwhile."""
        index = loaded_index(self._root(target_type))
        if index is None or k <= 0:
            return None
        flt = Filter(**filters)  # type: ignore[arg-type]
        with index.lock:
            index.catch_up(self.conn, self.model, target_type)  # SQL: here, on the caller's thread

        def scan(query: np.ndarray) -> None:
            query = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
            with index.lock:
                self._ahead[(target_type, k, flt)] = (index, index.seen_rowid, query, self._scan(index, query, k, flt))

        return scan

    def _named(
        self,
        target_type: str,
        rowids: np.ndarray,
        ids: list[str],
        scores: np.ndarray,
        vectors: np.ndarray | None,
        k: int,
    ) -> list[tuple[str, float]]:
        """The first k hits whose row is still there, with the id the index files name them by.

        The rows are checked in the small (target_type, target_id) index: its pages stay cached where the
        table's 1.5 KB rows, one page read each, do not (~1 ms of `_resolve` at 1M, more when memory is short).
        The first k are checked first; the slack behind them only when some of those are gone.
        """

        def live_of(batch: list[str]) -> set[tuple[str, int]]:
            live: set[tuple[str, int]] = set()
            for part in db.chunked(list(dict.fromkeys(batch))):
                rows = self.conn.execute(
                    f"SELECT target_id, rowid FROM embeddings INDEXED BY idx_embeddings_target "
                    f"WHERE target_type = ? AND target_id IN ({db.placeholders(part)})",
                    [target_type, *part],
                )
                live.update((r[0], r[1]) for r in rows)
            return live

        live = live_of(ids[:k])
        if sum(pair in live for pair in zip(ids[:k], rowids[:k].tolist(), strict=True)) < k:
            live |= live_of(ids[k:])
        out: list[tuple[str, float]] = []
        for position, (target_id, rowid, score) in enumerate(zip(ids, rowids.tolist(), scores.tolist(), strict=True)):
            if (target_id, rowid) in live:
                out.append((target_id, score))
                if vectors is not None:
                    self._remember(target_type, target_id, vectors[position])
                if len(out) == k:
                    break
        return out

    def _remember(self, target_type: str, target_id: str, vector: np.ndarray) -> None:
        if len(self._found) >= FOUND_CACHE_MAX:  # a long-lived instance (a benchmark's) stays small
            self._found.clear()
        self._found[(target_type, target_id)] = vector

    def exact(
        self, query: np.ndarray, k: int, *, target_type: str = "fact", flt: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Exact KNN through sqlite-vec, with the filters inside the KNN; unfiltered over a small type, the
        same answer from its vectors held in memory (held.py)."""
        flt = flt or Filter()
        if not flt.active:
            rows = held.for_search(self.conn, self.model, target_type)
            found = None if rows is None else held.search(rows, query, k)
            if found is not None:
                return found
        return knn(self.conn, query, k, target_type, flt)

    def _resolve(self, rowids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Map embeddings rowids to target ids; rows deleted since indexing drop out."""
        if not len(rowids):
            return []
        wanted = [int(r) for r in rowids]
        found = dict(
            self.conn.execute(
                f"SELECT rowid, target_id FROM embeddings WHERE rowid IN ({db.placeholders(wanted)})", wanted
            ).fetchall()
        )
        out = [(found[int(r)], float(s)) for r, s in zip(rowids, scores, strict=True) if int(r) in found]
        return out[:k]

    def vectors(self, target_type: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Canonical float32 vectors of these targets under this model (missing ids are absent).

        Those this instance's searches found come from the IVF files, or a small type's from its vectors held
        in memory (exact copies); the rest from SQL."""
        out: dict[str, np.ndarray] = {}
        missing = []
        rows = held.held(self.conn, self.model, target_type, load=False)
        for target_id in dict.fromkeys(ids):
            vector = self._found.get((target_type, target_id))
            if vector is None and rows is not None and (position := rows.position.get(target_id)) is not None:
                vector = rows.vectors[position]
            if vector is None:
                missing.append(target_id)
            else:
                out[target_id] = vector
        for part in db.chunked(missing):
            rows = self.conn.execute(
                f"SELECT target_id, embedding FROM embeddings WHERE model = ? AND target_type = ? "
                f"AND target_id IN ({db.placeholders(part)})",
                [self.model, target_type, *part],
            ).fetchall()
            out.update((r[0], np.frombuffer(r[1], dtype="<f4").astype(np.float32)) for r in rows)
        return out

    def add(self, target_type: str, rows: Sequence[Row], *, text_hashes: Mapping[str, str] | None = None) -> None:
        """Store and index (target_id, vec, platform, as_of, thread_id) rows, in one transaction.

        Writes the canonical `embeddings` row (skipped when one exists for this model), with the
        hash of the text it was made from when `text_hashes` (target_id -> hash) has it, and the
        vec0 row; the IVF index picks new rows up by rowid on its next search.
        """
        if not rows:
            return
        hashes = text_hashes or {}
        now = int(time.time() * 1000)
        with db.transaction(self.conn):
            ids = [r[0] for r in rows]
            existing = set(self._existing(target_type, ids))
            fresh = [r for r in rows if r[0] not in existing]
            if not fresh:
                return
            self.conn.executemany(
                "INSERT INTO embeddings(id, target_type, target_id, model, embedding, dimension, created_at, "
                "text_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        embedding_id(target_type, r[0], self.model),
                        target_type,
                        r[0],
                        self.model,
                        to_blob(r[1]),
                        self.dimension,
                        now,
                        hashes.get(r[0]),
                    )
                    for r in fresh
                ],
            )
            rowids = self._existing(target_type, [r[0] for r in fresh])
            insert_vec_rows(
                self.conn, [(rowids[r[0]], target_type, to_blob(r[1]), r[2], r[3], r[4], r[0]) for r in fresh]
            )

    def _existing(self, target_type: str, ids: Sequence[str]) -> dict[str, int]:
        """target_id -> embeddings.rowid for those of `ids` already embedded with this model."""
        out: dict[str, int] = {}
        for part in db.chunked(ids):
            out.update(
                self.conn.execute(
                    f"SELECT target_id, rowid FROM embeddings WHERE target_type = ? AND model = ? "
                    f"AND target_id IN ({db.placeholders(part)})",
                    [target_type, self.model, *part],
                ).fetchall()
            )
        return out

    def count(self, target_type: str) -> int:
        """Canonical rows of this model and type."""
        return self.conn.execute(
            "SELECT count(*) FROM embeddings WHERE model = ? AND target_type = ?", (self.model, target_type)
        ).fetchone()[0]

    def maintain(
        self,
        target_type: str,
        *,
        compact_fraction: float = 0.05,
        compact_min: int = 5_000,
        retrain_pruned: bool = False,
    ) -> str:
        """Keep the IVF index fit: build it past the threshold, fold in a large delta, retrain at 4x, and
        with `retrain_pruned` (the nightly maintenance) retrain an index that lost rows to a forget.

        Returns what it did: 'none', 'built', 'compacted' or 'rebuilt'. Meant for the embedding
        step and the nightly job (it can take a minute at 1M), never for the query path or a forget.
        """
        root = self._root(target_type)
        gen = current_generation(root)
        if gen is None:
            if self.count(target_type) < self.ann_threshold:
                return "none"
            build_ivf(self.conn, self.stores.data_dir, self.model, target_type, self.dimension)
            return "built"
        sizes = generation_sizes(gen)
        pending = self.conn.execute(
            "SELECT count(*) FROM embeddings NOT INDEXED WHERE rowid > ? AND model = ? AND target_type = ?",
            (sizes.covered_rowid, self.model, target_type),
        ).fetchone()[0]
        if sizes.indexed + pending > 4 * sizes.trained_n or (retrain_pruned and sizes.pruned):
            build_ivf(self.conn, self.stores.data_dir, self.model, target_type, self.dimension)
            return "rebuilt"
        if pending >= max(compact_min, compact_fraction * sizes.indexed):
            compact_ivf(self.conn, self.stores.data_dir, self.model, target_type)
            return "compacted"
        return "none"


def embedding_id(target_type: str, target_id: str, model: str) -> str:
    """Deterministic embeddings.id, so re-running a step never duplicates a row."""
    return stable_id("emb", target_type, target_id, model)
