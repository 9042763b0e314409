"""The IVF index: approximate nearest neighbours in numpy, derived from the canonical `embeddings` table.

Files under `<data_dir>/ann/<model-slug>/<target_type>/`: spherical k-means centroids trained on a
sample, vectors stored grouped by list as one contiguous float32 array (memory-mapped, so processes
share the page cache); a query probes the `nprobe` nearest lists and scores them exactly. It builds
in seconds to a few minutes at 1M (HNSW took 17 min here). Each vector's platform / as_of / thread code is
stored beside it, so filters are applied to the candidates *before* the top-k cut: selective filters
go exact over the matching rows, loose ones probe proportionally more lists.

Rows embedded after the IVF files were written (rowid above the index's `covered_rowid`) are read
from SQLite on the next search into an in-memory delta that is scanned exactly; `compact_ivf` folds
a large delta into the lists (nearest centroid) and `build_ivf` retrains (see VectorIndex.maintain).
Rows deleted from the table (a forget) leave the files through `prune_ivf`: their vectors are zeroed in
place and their slots marked DEAD, the centroids kept (trained on a superset, they still partition what
is left); compaction drops dead slots, and the nightly maintenance retrains an index that lost rows
(`pruned` in its meta).
Each build writes a new generation directory and then points CURRENT at it, so readers never see
a half-written index.

Each slot's target id is kept beside its vector (ids.npy, UTF-8, memory-mapped), so a search names its rows
and hands their vectors on without reading the 1.5 KB rows of `embeddings` (a page read each); a generation
written before ids were kept, or holding an id over MAX_ID_BYTES, has none and its rowids are resolved in SQL.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory.core import db
from nexus_memory.embeddings.vectors.vec0 import NULL_TIME, Filter, indexed_rows_sql

NULL_CODE = -1  # platform/thread code of a NULL value
DEAD = -1  # rowid of a list slot whose row was forgotten (prune_ivf): its vector is zeros, no search returns it
RESOLVE_SLACK = 16  # extra candidates fetched so rows deleted since indexing can be dropped
MAX_ID_BYTES = 64  # longest target id kept in ids.npy (fixed width: one long id would widen every slot)
_CHUNK = 65_536  # rows per chunk when reading, assigning and writing (bounds memory)


def model_slug(model: str) -> str:
    """A file-name-safe form of a model name ('BAAI/bge-small-en-v1.5' -> 'BAAI_bge-small-en-v1.5')."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"


def ann_root(data_dir: Path, model: str) -> Path:
    return Path(data_dir) / "ann" / model_slug(model)


def _mask(
    platform: np.ndarray, as_of: np.ndarray, thread: np.ndarray, codes: tuple[int | None, int | None], flt: Filter
) -> np.ndarray:
    """Boolean mask of rows matching `flt`, given the filter's platform/thread codes."""
    mask = np.ones(len(as_of), dtype=bool)
    if codes[0] is not None:
        mask &= platform == codes[0]
    if codes[1] is not None:
        mask &= thread == codes[1]
    if flt.time_after is not None or flt.time_before is not None:
        mask &= as_of != NULL_TIME
        if flt.time_after is not None:
            mask &= as_of >= flt.time_after
        if flt.time_before is not None:
            mask &= as_of <= flt.time_before
    return mask


# --- the IVF index --------------------------------------------------------------------------------


class _Vocab:
    """String <-> int32 code for platforms and threads, so filters compare integers."""

    def __init__(self, values: Sequence[str] = ()) -> None:
        self.values = list(values)
        self.codes = {v: i for i, v in enumerate(self.values)}

    def code(self, value: str | None) -> int:
        if value is None:
            return NULL_CODE
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(value)
        return code

    def lookup(self, value: str | None) -> int | None:
        """Code of an existing value; None for 'no constraint'; -2 for a value never seen."""
        if value is None:
            return None
        return self.codes.get(value, -2)


@dataclass
class _Delta:
    """Rows newer than the IVF files, scanned exactly; a growable buffer to avoid re-copying."""

    dimension: int
    size: int = 0
    vectors: np.ndarray = field(init=False)
    rowids: np.ndarray = field(init=False)
    platform: np.ndarray = field(init=False)
    as_of: np.ndarray = field(init=False)
    thread: np.ndarray = field(init=False)
    ids: list[bytes] = field(default_factory=list)  # target ids (UTF-8), in row order

    def __post_init__(self) -> None:
        self._allocate(1024)

    def _allocate(self, capacity: int) -> None:
        old = self.size
        fresh = {
            "vectors": np.empty((capacity, self.dimension), np.float32),
            "rowids": np.empty(capacity, np.int64),
            "platform": np.empty(capacity, np.int32),
            "as_of": np.empty(capacity, np.int64),
            "thread": np.empty(capacity, np.int32),
        }
        for name, array in fresh.items():
            if old:
                array[:old] = getattr(self, name)[:old]
            setattr(self, name, array)

    def append(
        self,
        vectors: np.ndarray,
        rowids: np.ndarray,
        platform: np.ndarray,
        as_of: np.ndarray,
        thread: np.ndarray,
        ids: np.ndarray,
    ) -> None:
        n = len(rowids)
        if self.size + n > len(self.rowids):
            self._allocate(max(2 * len(self.rowids), self.size + n))
        end = self.size + n
        self.vectors[self.size : end] = vectors
        self.rowids[self.size : end] = rowids
        self.platform[self.size : end] = platform
        self.as_of[self.size : end] = as_of
        self.thread[self.size : end] = thread
        self.ids.extend(ids)
        self.size = end


@dataclass
class _Columns:
    """Vectors and metadata read from SQLite (or gathered), in one order."""

    vectors: np.ndarray
    rowids: np.ndarray
    platform: np.ndarray
    as_of: np.ndarray
    thread: np.ndarray
    ids: np.ndarray | None = None  # target ids as UTF-8 bytes (object array); None where unknown


class IvfIndex:
    """One generation of IVF files for one (model, target_type), plus its in-memory delta."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        meta = json.loads((directory / "meta.json").read_text())
        self.meta = meta
        self.dimension = int(meta["dimension"])
        self.covered_rowid = int(meta["covered_rowid"])
        self.trained_n = int(meta["trained_n"])
        self.platforms = _Vocab(meta["platforms"])
        self.threads = _Vocab(meta["threads"])
        self.centroids = np.load(directory / "centroids.npy")
        self.offsets = np.load(directory / "offsets.npy")
        # mmap: the OS page cache holds the vectors once for every process that searches. A plain ndarray
        # view of it: np.memmap's own slicing costs ~10 us a call, and a search slices once per list.
        self.vectors = np.asarray(np.load(directory / "vectors.npy", mmap_mode="r"))
        self.rowids = np.load(directory / "rowids.npy")
        self.platform = np.load(directory / "platform.npy")
        self.as_of = np.load(directory / "as_of.npy")
        self.thread = np.load(directory / "thread.npy")
        ids = directory / "ids.npy"
        self.ids: np.ndarray | None = np.load(ids, mmap_mode="r") if ids.exists() else None
        dead = self.rowids == DEAD
        self.live = None if not dead.any() else ~dead  # None: every slot holds a row
        self.delta = _Delta(self.dimension)
        self.seen_rowid = self.covered_rowid
        # Shared by every VectorIndex of the process: catch-up mutates the delta and vocabularies.
        self.lock = threading.Lock()

    @property
    def size(self) -> int:
        return len(self.rowids)

    @property
    def nlist(self) -> int:
        return len(self.centroids)

    def catch_up(self, conn: db.Connection, model: str, target_type: str) -> int:
        """Read rows embedded since the last look into the delta; returns how many."""
        cols = read_columns(
            conn, model, target_type, self.dimension, self.platforms, self.threads, after_rowid=self.seen_rowid
        )
        if len(cols.rowids):
            assert cols.ids is not None  # read_columns always names its rows
            self.delta.append(cols.vectors, cols.rowids, cols.platform, cols.as_of, cols.thread, cols.ids)
            self.seen_rowid = int(cols.rowids[-1])
        return len(cols.rowids)

    def search(self, query: np.ndarray, fetch: int, flt: Filter, nprobe: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Top `fetch` (slots, scores) best first; None when the filter needs the exact fallback.

        A slot >= 0 is a position in the lists, -1 - i the delta's row i (see rowids_at, ids_at, vectors_at).
        """
        codes = (self.platforms.lookup(flt.platform), self.threads.lookup(flt.thread_id))
        d = self.delta.size
        delta_scores = _dot(self.delta.vectors[:d], query)
        delta_slots = -1 - np.arange(d, dtype=np.int64)
        if flt.active:
            dmask = _mask(self.delta.platform[:d], self.delta.as_of[:d], self.delta.thread[:d], codes, flt)
            delta_scores, delta_slots = delta_scores[dmask], delta_slots[dmask]
            main_mask = _mask(self.platform, self.as_of, self.thread, codes, flt)
            if self.live is not None:
                main_mask &= self.live
            matching = int(np.count_nonzero(main_mask))
            # A filter uncorrelated with the vectors leaves a fraction of each list: probe more
            # lists (sqrt of the selectivity keeps recall near the unfiltered one on our data).
            nprobe = min(self.nlist, math.ceil(nprobe * math.sqrt(self.size / max(matching, 1))))
            probe_rows = self.size * nprobe / self.nlist
            # Gathering a row costs about twice scanning one in a list: pick the cheaper; the
            # gather is exact, so selective filters (a thread, a short time window) lose nothing.
            if 2 * matching <= max(20_000, probe_rows):
                positions = np.flatnonzero(main_mask)
                scores = _dot(np.asarray(self.vectors[positions]), query)
                return _top(np.concatenate([positions, delta_slots]), np.concatenate([scores, delta_scores]), fetch)
        else:
            main_mask = self.live
        positions, scores = self._probe(query, nprobe, main_mask)
        if flt.active and len(scores) + len(delta_scores) < fetch - RESOLVE_SLACK:
            return None
        return _top(np.concatenate([positions, delta_slots]), np.concatenate([scores, delta_scores]), fetch)

    def rowids_at(self, slots: np.ndarray) -> np.ndarray:
        """The embeddings rowids of `search`'s slots."""
        out = np.empty(len(slots), np.int64)
        delta = slots < 0
        out[~delta] = self.rowids[slots[~delta]]
        out[delta] = self.delta.rowids[-1 - slots[delta]]
        return out

    def ids_at(self, slots: np.ndarray) -> list[str] | None:
        """The target ids of `search`'s slots; None when this generation keeps no ids (see the module docstring)."""
        if self.ids is None:
            return None
        ids, delta = self.ids, self.delta.ids
        return [(ids[s] if s >= 0 else delta[-1 - s]).decode() for s in slots.tolist()]

    def vectors_at(self, slots: np.ndarray) -> np.ndarray:
        """The stored vectors of `search`'s slots (rows of the lists are exact copies of the canonical ones)."""
        out = np.empty((len(slots), self.dimension), np.float32)
        delta = slots < 0
        out[~delta] = self.vectors[slots[~delta]]
        out[delta] = self.delta.vectors[-1 - slots[delta]]
        return out

    def _probe(self, query: np.ndarray, nprobe: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Score every row of the `nprobe` lists nearest to the query (masked rows dropped)."""
        nprobe = min(nprobe, self.nlist)
        centroid_scores = _dot(self.centroids, query)
        lists = np.argpartition(-centroid_scores, nprobe - 1)[:nprobe] if nprobe < self.nlist else np.arange(self.nlist)
        all_positions, all_scores = [], []
        for lst in lists:
            start, end = int(self.offsets[lst]), int(self.offsets[lst + 1])
            if start == end:
                continue
            positions = np.arange(start, end)
            scores = _dot(self.vectors[start:end], query)
            if mask is not None:
                keep = mask[start:end]
                positions, scores = positions[keep], scores[keep]
            all_positions.append(positions)
            all_scores.append(scores)
        if not all_scores:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        return np.concatenate(all_positions), np.concatenate(all_scores)


def _dot(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """matrix @ query without BLAS: numpy's own single-threaded SIMD loop.

    Many small multi-threaded BLAS gemv calls stall whenever a BLAS thread is descheduled (2 cores
    shared with embedding and Dagster steps): measured here p95 84 ms vs 36 ms under load.
    """
    return np.einsum("ij,j->i", matrix, query)


def _top(slots: np.ndarray, scores: np.ndarray, fetch: int) -> tuple[np.ndarray, np.ndarray]:
    """The `fetch` best (slot, score) pairs, best first."""
    if len(scores) > fetch:
        part = np.argpartition(-scores, fetch - 1)[:fetch]
        slots, scores = slots[part], scores[part]
    order = np.argsort(-scores, kind="stable")
    return slots[order], scores[order]


def read_columns(
    conn: db.Connection,
    model: str,
    target_type: str,
    dimension: int,
    platforms: _Vocab,
    threads: _Vocab,
    *,
    after_rowid: int = 0,
) -> _Columns:
    """Read canonical vectors + metadata of one (model, type) with rowid > after_rowid, in chunks."""
    parts: list[_Columns] = []
    cursor = conn.execute(indexed_rows_sql(target_type), (after_rowid, model, target_type))
    while True:
        chunk = cursor.fetchmany(_CHUNK)
        if not chunk:
            break
        blob = b"".join(r[2] for r in chunk)
        vectors = np.frombuffer(blob, dtype="<f4").reshape(len(chunk), dimension).astype(np.float32)
        parts.append(
            _Columns(
                vectors=vectors,
                rowids=np.fromiter((r[0] for r in chunk), np.int64, len(chunk)),
                platform=np.fromiter((platforms.code(r[3]) for r in chunk), np.int32, len(chunk)),
                as_of=np.fromiter((NULL_TIME if r[4] is None else r[4] for r in chunk), np.int64, len(chunk)),
                thread=np.fromiter((threads.code(r[5]) for r in chunk), np.int32, len(chunk)),
                ids=_object_array([r[1].encode() for r in chunk]),
            )
        )
    if not parts:
        return _Columns(
            np.empty((0, dimension), np.float32),
            np.empty(0, np.int64),
            np.empty(0, np.int32),
            np.empty(0, np.int64),
            np.empty(0, np.int32),
            _object_array([]),
        )
    if len(parts) == 1:
        return parts[0]
    return _Columns(
        *(
            np.concatenate([getattr(p, f) for p in parts])
            for f in ("vectors", "rowids", "platform", "as_of", "thread", "ids")
        )
    )


def _object_array(values: Sequence[bytes]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _id_file(ids: np.ndarray | None) -> dict[str, np.ndarray]:
    """{"ids": fixed-width UTF-8 ids} for a generation's arrays, or {} when they are unknown or one is too long."""
    if ids is None or (len(ids) and max(map(len, ids)) > MAX_ID_BYTES):
        return {}
    return {"ids": ids.astype(np.bytes_)}  # as wide as the longest


# --- building, compacting and loading IVF generations -------------------------------------------


def default_nlist(n: int) -> int:
    """About 2 sqrt(n) lists (~500 rows each at 1M). Against sqrt(n), on the clustered MiniLM vectors of
    `bench recall` (150 queries of another seed than its own), probing 32 lists scans half the rows at about
    the same recall@20: 1M, 2048 lists: 0.994 over 18k rows (1000 lists: 0.996 over 34k); 100k, 632 lists:
    0.998 over 5k (316 lists: 0.995 over 10k). The scan is the search's cost (memory-bound, ~1.5 KB a row)."""
    return int(min(4096, max(16, round(2 * math.sqrt(n)))))


def default_nprobe(nlist: int) -> int:
    """Lists probed per query: 40 at 1M (2000 lists: recall@20 0.996 over ~20k rows on two query sets of
    `bench recall` where 32 gave 0.990-0.995), 32 up to 1600 lists, a 50th of them beyond."""
    return max(32, nlist // 50)


# k-means rows at most (64 a list up to 1024 lists): with 2000 lists a 1M build still took 183 s here against
# 98 s for 1000 (each row is compared with twice the centroids), no longer than that.
TRAIN_SAMPLE_MAX = 65_536


def train_centroids(
    vectors: np.ndarray, nlist: int, *, iterations: int = 10, seed: int = 0, sample: int | None = None
) -> np.ndarray:
    """Spherical k-means on a sample (64 rows per list, TRAIN_SAMPLE_MAX at most): centroids are unit vectors."""
    rng = np.random.default_rng(seed)
    n = len(vectors)
    take = min(n, sample or min(nlist * 64, TRAIN_SAMPLE_MAX))
    data = np.asarray(vectors[np.sort(rng.choice(n, take, replace=False))], dtype=np.float32)
    centroids = data[rng.choice(take, nlist, replace=False)].copy()
    for _ in range(iterations):
        assign = _assign(data, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, data)
        counts = np.bincount(assign, minlength=nlist)
        empty = counts == 0
        # Reseed empty lists with random points so every list stays useful.
        sums[empty] = data[rng.choice(take, int(empty.sum()), replace=False)]
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = sums / np.maximum(norms, 1e-12)
    return centroids.astype(np.float32)


def _assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Nearest centroid (max inner product) of each vector, in chunks to bound memory."""
    out = np.empty(len(vectors), np.int32)
    for start in range(0, len(vectors), _CHUNK):
        block = np.asarray(vectors[start : start + _CHUNK], dtype=np.float32)
        out[start : start + len(block)] = np.argmax(block @ centroids.T, axis=1)
    return out


def _write_generation(
    root: Path, meta: dict[str, Any], centroids: np.ndarray, assign: np.ndarray, cols: _Columns
) -> Path:
    """Write the lists (rows grouped by centroid) as a new generation and make it current."""
    order = np.argsort(assign, kind="stable")
    counts = np.bincount(assign, minlength=len(centroids))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def write_vectors(path: Path) -> None:
        # Plain chunked writes and one fsync: a fresh memory map faults in every page and then msyncs them,
        # about three times slower (0.55 s against 0.2 s for 100k rows here).
        with open(path, "wb") as out:
            header = {"descr": "<f4", "fortran_order": False, "shape": (len(order), centroids.shape[1])}
            np.lib.format.write_array_header_1_0(out, header)
            for start in range(0, len(order), _CHUNK):
                np.ascontiguousarray(cols.vectors[order[start : start + _CHUNK]], dtype="<f4").tofile(out)
            out.flush()
            os.fsync(out.fileno())

    arrays = {name: getattr(cols, name)[order] for name in ("rowids", "platform", "as_of", "thread")}
    ids = _id_file(None if cols.ids is None else cols.ids[order])
    return _publish(root, meta, write_vectors, {"centroids": centroids, "offsets": offsets, **arrays, **ids})


def _publish(
    root: Path, meta: dict[str, Any], write_vectors: Callable[[Path], None], arrays: dict[str, np.ndarray]
) -> Path:
    """A new generation: `write_vectors(path)` makes vectors.npy, then the other arrays and meta.json; then it is
    made current and every process loads it on its next search."""
    root.mkdir(parents=True, exist_ok=True)
    gen = root / f"gen-{time.time_ns()}-{os.getpid()}"
    tmp = gen.with_name(gen.name + ".tmp")
    tmp.mkdir()
    write_vectors(tmp / "vectors.npy")
    for name, array in arrays.items():
        np.save(tmp / f"{name}.npy", array)
    (tmp / "meta.json").write_text(json.dumps(meta))
    tmp.rename(gen)
    _set_current(root, gen)
    _forget(root)
    return gen


def _set_current(root: Path, gen: Path) -> None:
    """Point CURRENT at `gen` atomically, then drop older generations (open mmaps stay valid)."""
    pointer = root / "CURRENT.tmp"
    pointer.write_text(gen.name)
    os.replace(pointer, root / "CURRENT")
    for old in root.iterdir():
        if old.is_dir() and old.name.startswith("gen-") and old.name != gen.name:
            shutil.rmtree(old, ignore_errors=True)


def current_generation(root: Path) -> Path | None:
    pointer = root / "CURRENT"
    try:
        gen = root / pointer.read_text().strip()
    except FileNotFoundError:
        return None
    return gen if gen.is_dir() else None


@dataclass(frozen=True)
class GenerationSizes:
    """Row counts of one IVF generation."""

    covered_rowid: int  # rows up to this rowid are in the lists (or were deleted since)
    trained_n: int  # rows the centroids were trained on
    indexed: int  # rows in the lists
    pruned: int  # rows dropped from the lists since training (forgets)


def generation_sizes(gen: Path) -> GenerationSizes:
    meta = json.loads((gen / "meta.json").read_text())
    indexed = int(np.count_nonzero(np.load(gen / "rowids.npy") != DEAD))
    return GenerationSizes(int(meta["covered_rowid"]), int(meta["trained_n"]), indexed, int(meta.get("pruned", 0)))


def build_ivf(
    conn: db.Connection,
    data_dir: Path,
    model: str,
    target_type: str,
    dimension: int,
    *,
    nlist: int | None = None,
    seed: int = 0,
) -> int:
    """Train and write a fresh IVF index from the canonical table; returns rows indexed."""
    platforms, threads = _Vocab(), _Vocab()
    cols = read_columns(conn, model, target_type, dimension, platforms, threads)
    n = len(cols.rowids)
    root = ann_root(data_dir, model) / target_type
    if n == 0:
        shutil.rmtree(root, ignore_errors=True)
        return 0
    nlist = min(nlist or default_nlist(n), n)
    centroids = train_centroids(cols.vectors, nlist, seed=seed)
    assign = _assign(cols.vectors, centroids)
    meta = {
        "model": model,
        "target_type": target_type,
        "dimension": dimension,
        "covered_rowid": int(cols.rowids.max()),
        "trained_n": n,
        "pruned": 0,
        "platforms": platforms.values,
        "threads": threads.values,
        "built_at": int(time.time()),
    }
    _write_generation(root, meta, centroids, assign, cols)
    return n


def compact_ivf(conn: db.Connection, data_dir: Path, model: str, target_type: str) -> int:
    """Fold rows newer than the IVF files into their nearest lists (no retraining); returns rows added."""
    root = ann_root(data_dir, model) / target_type
    gen = current_generation(root)
    if gen is None:
        return 0
    index = IvfIndex(gen)
    new = read_columns(
        conn, model, target_type, index.dimension, index.platforms, index.threads, after_rowid=index.covered_rowid
    )
    if not len(new.rowids):
        return 0
    kept = np.flatnonzero(index.rowids != DEAD)  # slots of forgotten rows are left out
    assign = np.concatenate([_list_of_slots(index)[kept], _assign(new.vectors, index.centroids)])
    cols = _Columns(
        vectors=_Stacked(_Taken(index.vectors, kept), new.vectors),
        rowids=np.concatenate([index.rowids[kept], new.rowids]),
        platform=np.concatenate([index.platform[kept], new.platform]),
        as_of=np.concatenate([index.as_of[kept], new.as_of]),
        thread=np.concatenate([index.thread[kept], new.thread]),
        ids=None if index.ids is None or new.ids is None else np.concatenate([index.ids[kept].astype(object), new.ids]),
    )
    meta = dict(
        index.meta, covered_rowid=int(new.rowids.max()), platforms=index.platforms.values, threads=index.threads.values
    )
    _write_generation(root, meta, index.centroids, assign, cols)
    return len(new.rowids)


def _list_of_slots(index: IvfIndex) -> np.ndarray:
    """The list each slot of the generation's vectors belongs to."""
    return np.repeat(np.arange(index.nlist, dtype=np.int32), np.diff(index.offsets))


def prune_ivf(conn: db.Connection, data_dir: Path, model: str, target_type: str) -> int | None:
    """Drop the rows gone from the canonical table out of the current generation, keeping its centroids and
    lists; returns rows dropped, None when there is no IVF index of this type.

    The new generation shares vectors.npy with the old one (a hard link) and zeroes the dropped rows in
    place, their slots marked DEAD: a forget at 100k rows writes a few pages in about 0.1 s, where writing
    the 150 MB of lists again took 0.3-1.6 s here (and retraining them 5-11 s).
    The platform and thread vocabularies are rebuilt from the rows kept, so a forgotten thread's id leaves
    meta.json too, and `covered_rowid` falls to the highest row kept: SQLite may hand a deleted rowid to
    the next insert, which must be read into the delta.
    """
    root = ann_root(data_dir, model) / target_type
    gen = current_generation(root)
    if gen is None:
        return None
    index = IvfIndex(gen)
    # The rowids of the type that are still there, from the covering (target_type, target_id) index as one
    # JSON array (no model test: a rowid the generation holds names the row it indexed): 0.06 s at 100k
    # against 0.35 s for a Python row per id through the model index.
    (live_json,) = conn.execute(
        "SELECT json_group_array(rowid) FROM embeddings INDEXED BY idx_embeddings_target "
        "WHERE target_type = ? AND rowid <= ?",
        (target_type, index.covered_rowid),
    ).fetchone()
    live = np.isin(index.rowids, np.array(json.loads(live_json), dtype=np.int64))
    dropped = np.flatnonzero(~live & (index.rowids != DEAD))
    platforms, platform = _recoded(index.platforms, np.where(live, index.platform, NULL_CODE))
    threads, thread = _recoded(index.threads, np.where(live, index.thread, NULL_CODE))

    def zero_dropped(path: Path) -> None:
        try:
            os.link(gen / "vectors.npy", path)
        except OSError:  # a file system without hard links: a copy, zeroed the same way
            shutil.copyfile(gen / "vectors.npy", path)
        if len(dropped):
            vectors = np.load(path, mmap_mode="r+")
            vectors[dropped] = 0.0
            vectors.flush()
            del vectors

    meta = dict(
        index.meta,
        covered_rowid=int(index.rowids[live].max()) if live.any() else 0,
        pruned=int(index.meta.get("pruned", 0)) + len(dropped),
        platforms=platforms,
        threads=threads,
    )
    arrays = {
        "centroids": index.centroids,
        "offsets": index.offsets,
        "rowids": np.where(live, index.rowids, DEAD),
        "platform": platform,
        "as_of": np.where(live, index.as_of, NULL_TIME),
        "thread": thread,
        # A forgotten row's id leaves the files with its vector.
        **({} if index.ids is None else {"ids": np.where(live, index.ids, b"")}),
    }
    _publish(root, meta, zero_dropped, arrays)
    return len(dropped)


def _recoded(vocab: _Vocab, codes: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The vocabulary of the values `codes` still use, and the codes renumbered into it (NULL kept)."""
    used = np.unique(codes[codes != NULL_CODE])
    renumber = np.full(len(vocab.values) + 1, NULL_CODE, np.int32)  # the last slot maps NULL_CODE (-1) to itself
    renumber[used] = np.arange(len(used), dtype=np.int32)
    return [vocab.values[c] for c in used], renumber[codes]


class _Taken:
    """Row gathers from a subset (`positions`) of memory-mapped vectors, without copying the subset first."""

    def __init__(self, vectors: np.ndarray, positions: np.ndarray) -> None:
        self.vectors, self.positions = vectors, positions
        self.shape = (len(positions), vectors.shape[1])

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        return np.asarray(self.vectors[self.positions[index]], dtype=np.float32)


class _Stacked:
    """Row gathers across the old (memory-mapped) vectors and new ones, without concatenating."""

    def __init__(self, first: _Taken, second: np.ndarray) -> None:
        self.first, self.second = first, second

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        n = len(self.first)
        out = np.empty((len(index), self.first.shape[1]), np.float32)
        low = index < n
        out[low] = self.first[index[low]]
        out[~low] = self.second[index[~low] - n]
        return out


# Loaded generations, shared by every VectorIndex of the process: (root) -> (generation, index).
_LOADED: dict[Path, tuple[Path, IvfIndex]] = {}
_LOADED_LOCK = threading.Lock()


def _forget(root: Path) -> None:
    with _LOADED_LOCK:
        _LOADED.pop(root, None)


def loaded_index(root: Path) -> IvfIndex | None:
    """The current generation under `root`, loaded once per process and reloaded when replaced."""
    gen = current_generation(root)
    with _LOADED_LOCK:
        cached = _LOADED.get(root)
        if gen is None:
            _LOADED.pop(root, None)
            return None
        if cached is None or cached[0] != gen:
            cached = (gen, IvfIndex(gen))
            _LOADED[root] = cached
        return cached[1]


def drop_ann(data_dir: Path) -> None:
    """Remove every IVF index (all models): they are derived state."""
    shutil.rmtree(Path(data_dir) / "ann", ignore_errors=True)
    with _LOADED_LOCK:
        _LOADED.clear()
