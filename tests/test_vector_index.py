"""VectorIndex: exact (sqlite-vec) and IVF paths agree, filters precede the top-k cut, upkeep.

Uses clustered synthetic vectors (no model load) so the tests take seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.step import nightly_index_upkeep, rebuild_index
from nexus_memory.embeddings.vectors import held
from nexus_memory.embeddings.vectors.index import VectorIndex
from nexus_memory.embeddings.vectors.ivf import DEAD, current_generation, generation_sizes, loaded_index, prune_ivf
from nexus_memory.embeddings.vectors.vec0 import Filter, IndexModelMismatch, knn
from nexus_memory.recall.results import RecallResult, touch_results

MODEL, DIM = "test-model", 384
PLATFORMS = ["gmail", "imessage", "discord"]


def _clustered(rng: np.random.Generator, n: int, clusters: int = 40) -> np.ndarray:
    centers = rng.standard_normal((clusters, DIM)).astype(np.float32)
    vectors = centers[rng.integers(clusters, size=n)] + 0.35 * rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _add(
    stores: Stores, search: VectorIndex, vectors: np.ndarray, start: int = 0, platform: str | None = None
) -> list[str]:
    """Insert facts (the IVF index reads metadata from them) and their vectors through `add`."""
    ids = [f"f{start + i:05d}" for i in range(len(vectors))]
    rows = []
    for i, fid in enumerate(ids):
        p = platform or PLATFORMS[(start + i) % 3]
        rows.append((fid, vectors[i], p, 1_000 * (start + i), f"t{(start + i) % 7}"))
    with stores.transaction():
        stores.conn.executemany(
            "INSERT INTO facts(id, text, as_of, ingested_at, created_at, platform, thread_id) "
            "VALUES (?, 'x', ?, ?, 0, ?, ?)",
            [(r[0], r[3], r[3], r[2], r[4]) for r in rows],
        )
    for s in range(0, len(rows), 500):
        search.add("fact", rows[s : s + 500])
    return ids


@pytest.fixture
def filled(stores: Stores) -> tuple[Stores, np.ndarray]:
    rebuild_index(stores, MODEL, DIM)
    vectors = _clustered(np.random.default_rng(0), 3_000)
    _add(stores, VectorIndex(stores, MODEL, DIM), vectors)
    return stores, vectors


def _ann(stores: Stores, **kw: object) -> VectorIndex:
    search = VectorIndex(stores, MODEL, DIM, ann_threshold=1_000, **kw)  # type: ignore[arg-type]
    search.maintain("fact")
    return search


def test_exact_and_ann_agree(filled: tuple[Stores, np.ndarray]) -> None:
    stores, vectors = filled
    exact = VectorIndex(stores, MODEL, DIM)  # 3000 rows < default threshold: sqlite-vec
    assert current_generation(stores.data_dir / "ann" / MODEL / "fact") is None
    ann = _ann(stores)
    assert current_generation(stores.data_dir / "ann" / MODEL / "fact") is not None
    queries = _clustered(np.random.default_rng(1), 30)
    recalls = []
    for q in queries:
        truth = exact.search(q, 10)
        found = ann.search(q, 10)
        assert len(truth) == len(found) == 10
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        # Scores are exact cosines in both paths.
        truth_scores = dict(truth)
        for fid, score in found:
            assert score == pytest.approx(float(vectors[int(fid[1:])] @ q), abs=1e-5)
            if fid in truth_scores:
                assert score == pytest.approx(truth_scores[fid], abs=1e-5)
        recalls.append(len({f for f, _ in truth} & {f for f, _ in found}) / 10)
    assert np.mean(recalls) >= 0.95
    # Probing every list is exhaustive: identical answers.
    full = VectorIndex(stores, MODEL, DIM, ann_threshold=1_000, nprobe=10_000)
    for q in queries[:5]:
        assert [f for f, _ in full.search(q, 10)] == [f for f, _ in exact.search(q, 10)]


def test_the_index_files_name_what_they_find_and_hand_on_its_vectors(filled: tuple[Stores, np.ndarray]) -> None:
    stores, vectors = filled
    ann = _ann(stores)
    root = stores.data_dir / "ann" / MODEL / "fact"
    gen = current_generation(root)
    assert gen is not None and (gen / "ids.npy").exists()
    late = _add(stores, VectorIndex(stores, MODEL, DIM), vectors[:3], start=10_000)  # in the delta
    queries = [*_clustered(np.random.default_rng(2), 5), vectors[0]]
    answers = [ann.search(q, 20) for q in queries]
    assert late[0] in {f for f, _ in answers[-1]}
    # The vectors of what was found come from the files, equal to the canonical rows.
    found = [f for hits in answers for f, _ in hits]
    canonical = VectorIndex(stores, MODEL, DIM).vectors("fact", found)
    served = ann.vectors("fact", found)
    assert served.keys() == canonical.keys() == set(found)
    for fid in found:
        np.testing.assert_array_equal(served[fid], canonical[fid])
    # A generation written before ids were kept resolves its rowids in SQL: the same answers.
    (gen / "ids.npy").unlink()
    gen.rename(gen.with_name(gen.name + "-old"))  # a new directory name: loaded afresh
    (root / "CURRENT").write_text(gen.name + "-old")
    assert [ann.search(q, 20) for q in queries] == answers


def test_a_scan_run_ahead_answers_as_the_search_would_and_only_while_the_index_is_unchanged(
    filled: tuple[Stores, np.ndarray],
) -> None:
    stores, vectors = filled
    ann = _ann(stores)
    queries = _clustered(np.random.default_rng(3), 4)
    plain = [_ann(stores).search(q, 20, platform="gmail") for q in queries]
    for q, want in zip(queries, plain, strict=True):
        scan = ann.search_ahead(20, platform="gmail")
        assert scan is not None
        scan(q)
        assert ann._ahead  # the scan is kept for the search that follows, which uses it up
        assert ann.search(q, 20, platform="gmail") == want and not ann._ahead
    # Another query, k or filter than the scan's: searched afresh.
    scan = ann.search_ahead(20, platform="gmail")
    assert scan is not None
    scan(queries[0])
    assert ann.search(queries[1], 20, platform="gmail") == plain[1]
    # A row added after the scan is still found: the search reads it and scans again.
    scan = ann.search_ahead(20, platform="gmail")
    assert scan is not None
    scan(vectors[0])
    late = _add(stores, VectorIndex(stores, MODEL, DIM), vectors[:1], start=10_002)  # platform gmail
    assert late[0] in {f for f, _ in ann.search(vectors[0], 20, platform="gmail")}
    # Below the IVF threshold there is nothing to run ahead.
    assert VectorIndex(stores, MODEL, DIM).search_ahead(20, target_type="observation") is None


@pytest.mark.parametrize("use_ann", [False, True])
def test_filters_apply_before_top_k(filled: tuple[Stores, np.ndarray], use_ann: bool) -> None:
    stores, vectors = filled
    search = _ann(stores) if use_ann else VectorIndex(stores, MODEL, DIM)
    q = vectors[0]
    # The only 'rare' row is the globally worst match: it must still come back.
    _add(stores, VectorIndex(stores, MODEL, DIM), -q[None, :], start=5_000, platform="rare")
    assert search.search(q, 3000 + 1)[-1][0] == "f05000"
    assert search.search(q, 5, platform="rare") == [("f05000", pytest.approx(-1.0, abs=1e-5))]
    assert search.search(q, 5, platform="nowhere") == []
    # Each filter agrees with a brute-force answer over the matching rows.
    meta = [(f"f{i:05d}", PLATFORMS[i % 3], 1_000 * i, f"t{i % 7}") for i in range(3_000)]
    cases = [
        ({"platform": "imessage"}, lambda m: m[1] == "imessage"),
        ({"thread_id": "t3"}, lambda m: m[3] == "t3"),
        ({"time_after": 500_000, "time_before": 800_000}, lambda m: 500_000 <= m[2] <= 800_000),
        ({"platform": "gmail", "time_before": 1_200_000}, lambda m: m[1] == "gmail" and m[2] <= 1_200_000),
    ]
    for kwargs, keep in cases:
        allowed = [i for i, m in enumerate(meta) if keep(m)]
        scores = vectors[allowed] @ q
        truth = [meta[allowed[j]][0] for j in np.argsort(-scores)[:10]]
        found = [f for f, _ in search.search(q, 10, **kwargs)]
        assert len(set(found) & set(truth)) >= 9, kwargs
        assert all(keep(meta[int(f[1:])]) for f in found), kwargs


def test_incremental_add_compaction_and_deletes(filled: tuple[Stores, np.ndarray]) -> None:
    stores, _ = filled
    ann = _ann(stores)
    root = stores.data_dir / "ann" / MODEL / "fact"
    first = current_generation(root)
    target = _clustered(np.random.default_rng(7), 1)[0]
    new_ids = _add(stores, VectorIndex(stores, MODEL, DIM), np.stack([target] * 3), start=10_000)
    # New rows are searchable at once (read into the delta by rowid), by any VectorIndex.
    assert {f for f, _ in ann.search(target, 3)} == set(new_ids)
    assert {f for f, _ in _ann(stores).search(target, 3, platform=PLATFORMS[10_000 % 3])} >= {new_ids[0]}
    # Folding the delta into the lists keeps them, under a new generation.
    assert ann.maintain("fact", compact_min=1, compact_fraction=0.0) == "compacted"
    assert current_generation(root) != first
    assert {f for f, _ in ann.search(target, 3)} == set(new_ids)
    assert ann.maintain("fact", compact_min=1, compact_fraction=0.0) == "none"
    # A row deleted from the canonical table drops out of answers.
    with stores.transaction():
        stores.conn.execute("DELETE FROM embeddings WHERE target_id = ?", (new_ids[0],))
    found = [f for f, _ in ann.search(target, 3)]
    # ... and the next live row takes its place (the slack fetched behind the first k is checked then).
    assert new_ids[0] not in found and len(found) == 3 and set(new_ids[1:]) <= set(found)


def test_ann_built_at_threshold_and_retrained_at_4x(stores: Stores) -> None:
    rebuild_index(stores, MODEL, DIM)
    search = VectorIndex(stores, MODEL, DIM, ann_threshold=200)
    _add(stores, search, _clustered(np.random.default_rng(2), 150))
    assert search.maintain("fact") == "none"  # below the threshold: sqlite-vec only
    _add(stores, search, _clustered(np.random.default_rng(3), 100), start=150)
    assert search.maintain("fact") == "built"
    _add(stores, search, _clustered(np.random.default_rng(4), 800), start=1_000)
    assert search.maintain("fact") == "rebuilt"  # 1050 rows > 4 x 250 trained
    q = _clustered(np.random.default_rng(5), 1)[0]
    exact = VectorIndex(stores, MODEL, DIM)
    exact_ids = [f for f, _ in exact.exact(q, 20)]
    assert len(set(exact_ids) & {f for f, _ in search.search(q, 20)}) >= 18


def test_vectors_and_add_idempotent(filled: tuple[Stores, np.ndarray]) -> None:
    stores, vectors = filled
    search = VectorIndex(stores, MODEL, DIM)
    got = search.vectors("fact", ["f00001", "f00002", "missing"])
    assert set(got) == {"f00001", "f00002"}
    np.testing.assert_array_equal(got["f00002"], vectors[2])
    search.add("fact", [("f00001", vectors[9], "gmail", 0, None)])  # already embedded: ignored
    np.testing.assert_array_equal(search.vectors("fact", ["f00001"])["f00001"], vectors[1])
    assert stores.conn.execute("SELECT count(*) FROM vec_embeddings").fetchone()[0] == 3_000


def test_other_model_is_refused(filled: tuple[Stores, np.ndarray]) -> None:
    stores, _ = filled
    with pytest.raises(IndexModelMismatch, match="rebuild-index"):
        VectorIndex(stores, "other-model", DIM)


def _delete(stores: Stores, ids: list[str]) -> None:
    """What a forget does to the canonical vectors (lifecycle/forget/vectors.delete_vectors)."""
    marks = ",".join("?" * len(ids))
    with stores.transaction():
        rowids = [r[0] for r in stores.conn.execute(f"SELECT rowid FROM embeddings WHERE target_id IN ({marks})", ids)]
        stores.conn.execute(f"DELETE FROM vec_embeddings WHERE rowid IN ({','.join('?' * len(rowids))})", rowids)
        stores.conn.execute(f"DELETE FROM embeddings WHERE target_id IN ({marks})", ids)


def test_a_forget_drops_rows_keeps_the_centroids_and_the_night_retrains(filled: tuple[Stores, np.ndarray]) -> None:
    stores, vectors = filled
    ann = _ann(stores)
    root = stores.data_dir / "ann" / MODEL / "fact"
    # A row under a platform nothing else has, folded into the lists: its name is in the IVF files now.
    lonely = _add(stores, VectorIndex(stores, MODEL, DIM), vectors[:1], start=20_000, platform="lonely@example.com")
    assert ann.maintain("fact", compact_min=1, compact_fraction=0.0) == "compacted"
    first = current_generation(root)
    assert first is not None
    centroids = np.load(first / "centroids.npy")
    q = vectors[10]
    doomed = [f for f, _ in ann.search(q, 5)] + lonely
    # The highest rowid goes too: SQLite may give it to the next row, which must still be found.
    _delete(stores, doomed)

    assert prune_ivf(stores.conn, stores.data_dir, MODEL, "fact") == len(doomed)
    pruned = current_generation(root)
    assert pruned is not None and pruned != first
    np.testing.assert_array_equal(np.load(pruned / "centroids.npy"), centroids)
    sizes = generation_sizes(pruned)
    assert (sizes.indexed, sizes.pruned, sizes.trained_n) == (3_000 - 5, len(doomed), 3_000)
    assert not [p for p in root.rglob("*") if p.is_file() and b"lonely@example.com" in p.read_bytes()]
    # Nor do the forgotten rows' ids, kept beside the vectors to name what a search finds.
    kept_ids = set(np.load(pruned / "ids.npy").tolist())
    assert len(kept_ids) > 2_900 and not {d.encode() for d in doomed} & kept_ids
    exact = VectorIndex(stores, MODEL, DIM)
    full = VectorIndex(stores, MODEL, DIM, ann_threshold=1_000, nprobe=10_000)
    for search in (ann, full):
        assert not set(doomed) & {f for f, _ in search.search(q, 50)}
        assert not set(doomed) & {f for f, _ in search.search(q, 50, platform=PLATFORMS[10 % 3])}
    # Their slots (zero vectors now) are never candidates, not even when every row left scores below zero.
    index = loaded_index(root)
    assert index is not None
    for x in (q, -q):
        assert DEAD not in index.rowids_at(index.search(x, 3_100, Filter(), nprobe=10_000)[0])
    # The kept centroids still partition what is left: recall@10 as before.
    queries = _clustered(np.random.default_rng(1), 30)
    hits = [len({f for f, _ in exact.search(x, 10)} & {f for f, _ in ann.search(x, 10)}) / 10 for x in queries]
    assert np.mean(hits) >= 0.95
    (reborn,) = _add(stores, VectorIndex(stores, MODEL, DIM), q[None, :], start=30_000)
    assert ann.search(q, 1)[0][0] == reborn
    # Folding new rows in leaves the dead slots out.
    assert ann.maintain("fact", compact_min=1, compact_fraction=0.0) == "compacted"
    compacted = current_generation(root)
    assert compacted is not None and DEAD not in np.load(compacted / "rowids.npy")
    assert generation_sizes(compacted).indexed == 3_000 - 5 + 1

    assert nightly_index_upkeep(stores) == {"fact": "rebuilt"}  # retrained without the forgotten rows
    retrained = current_generation(root)
    assert retrained is not None and generation_sizes(retrained).pruned == 0
    assert nightly_index_upkeep(stores) == {"fact": "none"}
    assert ann.search(q, 1)[0][0] == reborn


def _vec0(stores: Stores, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    return knn(stores.conn, query, k, "fact", Filter())


def test_held_vectors_answer_as_vec0_does_to_the_bit(filled: tuple[Stores, np.ndarray]) -> None:
    stores, vectors = filled
    # Copies of stored vectors tie with them: vec0's order for equal distances must be kept too (3 chunks).
    _add(stores, VectorIndex(stores, MODEL, DIM), np.vstack([vectors[5:8], vectors[2_500:2_503]]), start=3_000)
    rows = held.held(stores.conn, MODEL, "fact")
    assert rows is not None and len(rows.ids) == 3_006 and len(set(rows.chunk.tolist())) == 3
    rng = np.random.default_rng(7)
    queries = [*vectors[[5, 6, 2_500]], *rng.standard_normal((20, DIM)).astype(np.float32), *vectors[100:110]]
    tied = 0
    for query in queries:
        for k in (1, 10, 116, 4_000):
            expected = _vec0(stores, query, k)
            assert held.search(rows, query, k) == expected
            tied += len({score for _, score in expected}) < len(expected)
    assert tied  # the ties were there to order
    search = VectorIndex(stores, MODEL, DIM)
    assert search.exact(queries[0], 50) == _vec0(stores, queries[0], 50)
    np.testing.assert_array_equal(search.vectors("fact", ["f03000"])["f03000"], vectors[5])
    # A zero vector has no cosine: vec0 is asked.
    assert held.search(rows, np.zeros(DIM, dtype=np.float32), 5) is None


def test_held_vectors_follow_every_change_but_recalls_own_access_counts(
    filled: tuple[Stores, np.ndarray], settings: Settings
) -> None:
    stores, vectors = filled
    search = VectorIndex(stores, MODEL, DIM)
    query = vectors[42]
    search.exact(query, 10)  # a process that searches once reads nothing
    assert held.held(stores.conn, MODEL, "fact", load=False) is None
    search.exact(query, 10)
    before = held.held(stores.conn, MODEL, "fact", load=False)
    assert before is not None
    touch_results(stores, [RecallResult("f00042", "fact", "x", 1.0, 0, [], [], {}, None, None, None)])
    assert held.held(stores.conn, MODEL, "fact", load=False) is before  # an access count changes no vector

    def held_search(k: int) -> list[tuple[str, float]]:
        """The search as answered from what is held again after a change (the second search reads it)."""
        assert held.held(stores.conn, MODEL, "fact", load=False) is None
        assert search.exact(query, k) == _vec0(stores, query, k)
        assert held.held(stores.conn, MODEL, "fact", load=False) is None
        found = search.exact(query, k)
        assert held.held(stores.conn, MODEL, "fact", load=False) is not None
        assert found == _vec0(stores, query, k)
        return found

    _add(stores, search, vectors[42:43] * -1 + vectors[43:44], start=5_000)  # a write of this connection
    assert "f05000" in dict(held_search(3_001))
    _delete(stores, ["f00042"])
    assert "f00042" not in dict(held_search(5))
    with Stores(settings) as other:  # another connection's commit
        _add(other, VectorIndex(other, MODEL, DIM), vectors[42:43], start=6_000)
    assert held_search(2)[0][0] == "f06000"


def test_what_is_held_stays_within_its_limits(
    filled: tuple[Stores, np.ndarray], settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    stores, vectors = filled
    monkeypatch.setattr(held, "HELD_TOTAL_ROWS", 5_000)
    assert held.held(stores.conn, MODEL, "fact") is not None
    with Stores(settings) as other:  # a second connection's 3,000 rows make room by dropping the first's
        assert held.held(other.conn, MODEL, "fact") is not None
        assert held.held(stores.conn, MODEL, "fact", load=False) is None
        monkeypatch.setattr(held, "HELD_TOTAL_ROWS", 2_000)
        assert held.held(stores.conn, MODEL, "fact") is None  # more than the process may hold at all
    monkeypatch.setattr(held, "HELD_TOTAL_ROWS", 10_000)
    monkeypatch.setattr(held, "HELD_MAX_ROWS", 2_999)
    with Stores(settings) as third:
        assert held.held(third.conn, MODEL, "fact") is None  # more rows of one type than it holds
        assert VectorIndex(third, MODEL, DIM).exact(vectors[3], 20) == _vec0(third, vectors[3], 20)
