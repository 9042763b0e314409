"""Latency and recall benchmark of semantic search and of `recall` at scale.

    python -m nexus_memory.bench.recall --facts 100000 --json

Fills a fresh store with synthetic facts: template sentences (so FTS5 has real words), entities
linked with a Zipf distribution, platforms, threads, as_of spread over six years. Vectors are
clustered, not uniform random (approximate search scores far lower on uniform vectors than on real
embeddings, so uniform ones say nothing about it): real MiniLM embeddings of a few thousand distinct
template sentences, each fact's vector being its sentence's embedding plus a share of another
sentence's plus gaussian noise, renormalised.
Everything is written in bulk by `bench.synthetic` (the vectors into `embeddings` + vec0 as the
embedding step stores them), then the IVF index is built from the canonical table the same way
`rebuild_index` does.

Measured per query (p50/p95 ms): query embedding + VectorIndex.search (the real path), search
alone, filtered searches, the exact numpy matmul baseline, sqlite-vec brute force on a subset,
recall@20 of the IVF answers against exact, `recall` per budget with the median of each of a mid
recall's stages (its `timings_ms`: where the time goes), `get_context`, and a mid recall of questions
that all name the store's busiest person (embedded with and without the name). Then a tenth of the facts
is forgotten (vectors deleted as a forget deletes them) and recall@20 against exact over the rest is
measured twice: with the index as a forget leaves it (rows dropped, centroids kept) and retrained as the
nightly upkeep does (`after_forgets`).

A store built in a given `data_dir` is kept whole (no forgetting step) and measured again, without
refilling, by the next run on that directory: a 1M store takes many minutes to fill.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory.bench.synthetic import (
    SyntheticEntity,
    SyntheticFact,
    write_entities,
    write_fact_vectors,
    write_facts,
    write_links,
    zipf_ranks,
)
from nexus_memory.core import db
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.model import Embedder, get_embedder
from nexus_memory.embeddings.step import nightly_index_upkeep
from nexus_memory.embeddings.vectors.index import VectorIndex
from nexus_memory.embeddings.vectors.ivf import build_ivf
from nexus_memory.embeddings.vectors.vec0 import Filter
from nexus_memory.injection.context import get_context
from nexus_memory.lifecycle.forget.vectors import delete_vectors, rewrite_index_files
from nexus_memory.recall import recall
from nexus_memory.recall.query_entities import busy_entities

PLATFORMS = ["imessage", "gmail", "discord", "chatgpt", "claude", "agent"]
PLATFORM_WEIGHTS = [0.35, 0.25, 0.15, 0.1, 0.05, 0.1]
FIRST = [
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Erin",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Victor",
    "Walter",
    "Yvonne",
    "Zara",
    "Tyler",
    "Sarah",
    "Priya",
    "Kenji",
    "Lena",
    "Marco",
    "Noor",
    "Omar",
    "Chen",
]
PREDICATES = [
    "works at",
    "moved to",
    "is learning",
    "bought a",
    "is worried about",
    "recommended",
    "had dinner at",
    "is planning a trip to",
    "started a project on",
    "complained about",
    "adopted a",
    "signed up for",
    "is reading a book about",
    "fixed the",
    "loves",
    "is allergic to",
    "gave a talk on",
    "is saving money for",
    "lost the",
    "met Sarah at",
]
OBJECTS = [
    "Anthropic",
    "Berlin",
    "Spanish",
    "new bicycle",
    "the mortgage",
    "a sushi place",
    "Lisbon",
    "machine learning",
    "the dentist",
    "dog",
    "a marathon",
    "climate policy",
    "kitchen sink",
    "jazz",
    "peanuts",
    "distributed systems",
    "a house",
    "car keys",
    "the conference",
    "a pottery class",
    "Tokyo",
    "the quarterly report",
    "rock climbing",
    "sourdough bread",
    "the garden",
    "an electric car",
    "the wedding",
    "chess",
    "a podcast",
    "the apartment lease",
]
START_MS = 1_546_300_800_000  # 2019-01-01
SPAN_MS = 6 * 365 * 86_400_000
CHUNK = 50_000


def _sentences(rng: np.random.Generator, count: int) -> list[str]:
    """`count` distinct template sentences: person, predicate, object."""
    combos = [(f, p, o) for f in FIRST for p in PREDICATES for o in OBJECTS]
    picks = rng.choice(len(combos), size=min(count, len(combos)), replace=False)
    return [f"{combos[i][0]} {combos[i][1]} {combos[i][2]}" for i in picks]


def _queries(rng: np.random.Generator, count: int, person: str | None = None) -> list[str]:
    """Questions in other words than the facts, so the semantic search has to do the matching.

    With `person`, every question names that person.
    """
    forms = [
        "What do I know about {f} and {o}?",
        "Who {p} {o}?",
        "{f} {p} what?",
        "Tell me about {o}",
        "Did {f} mention {o} recently?",
    ]
    if person is not None:
        forms = [form for form in forms if "{f}" in form]
    out = []
    for _ in range(count):
        form = forms[rng.integers(len(forms))]
        out.append(
            form.format(
                f=person or FIRST[rng.integers(len(FIRST))],
                p=PREDICATES[rng.integers(len(PREDICATES))],
                o=OBJECTS[rng.integers(len(OBJECTS))],
            )
        )
    return out


def _busiest_person(stores: Stores) -> tuple[str, bool] | None:
    """(name, busy) of the person linked to most of the newest facts; recall treats busy names specially."""
    row = stores.conn.execute(
        """SELECT n.id, n.name FROM (SELECT id FROM facts ORDER BY rowid DESC LIMIT 1000) f
           CROSS JOIN fact_entities fe ON fe.fact_id = f.id JOIN entities n ON n.id = fe.entity_id
           WHERE n.type = 'person' GROUP BY n.id ORDER BY count(*) DESC LIMIT 1"""
    ).fetchone()
    return (row[1], bool(busy_entities(stores.conn, [row[0]]))) if row else None


def _clustered(rng: np.random.Generator, base: np.ndarray, pick: np.ndarray, noise: float) -> np.ndarray:
    """Vectors near their sentence's embedding: base + a share of a random other base + noise."""
    other = base[rng.integers(len(base), size=len(pick))]
    share = rng.uniform(0.0, 0.5, size=(len(pick), 1)).astype(np.float32)
    vectors = base[pick] + share * other + rng.normal(0.0, noise, size=(len(pick), base.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def _progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fill(
    stores: Stores, embedder: Embedder, n_facts: int, *, seed: int = 0, n_sentences: int = 3000, noise: float = 0.03
) -> dict[str, Any]:
    """Write n synthetic facts, entities, links and clustered vectors; returns arrays for the baselines."""
    rng = np.random.default_rng(seed)
    conn = stores.conn
    for name in ("main", "events", "identity", "embeddings"):
        conn.execute(f"PRAGMA {name}.synchronous = OFF")  # a lost bench store is simply refilled
    sentences = _sentences(rng, n_sentences)
    started = time.perf_counter()
    base = embedder.encode(sentences, batch_size=128)
    _progress(f"embedded {len(sentences)} template sentences in {time.perf_counter() - started:.1f}s")

    n_entities = max(100, n_facts // 200)
    entity_ids = [f"ent_{i:07d}" for i in range(n_entities)]
    person_entity = {name: i for i, name in enumerate(FIRST)}
    with db.transaction(conn):
        write_entities(
            conn,
            (
                SyntheticEntity(eid, FIRST[i], "person", "import")
                if i < len(FIRST)
                else SyntheticEntity(eid, f"Entity {i}", "concept", "import")
                for i, eid in enumerate(entity_ids)
            ),
        )

    n_threads = max(10, n_facts // 100)
    all_vectors = np.empty((n_facts, embedder.dimension), np.float32)
    platform_idx = np.empty(n_facts, np.int32)
    as_of_all = np.empty(n_facts, np.int64)
    thread_all = np.empty(n_facts, np.int32)
    fill_started = time.perf_counter()
    for start in range(0, n_facts, CHUNK):
        end = min(n_facts, start + CHUNK)
        m = end - start
        pick = rng.integers(len(sentences), size=m)
        vectors = _clustered(rng, base, pick, noise)
        platforms = rng.choice(len(PLATFORMS), size=m, p=PLATFORM_WEIGHTS).astype(np.int32)
        threads = rng.integers(n_threads, size=m).astype(np.int32)
        as_of = START_MS + np.sort(rng.integers(SPAN_MS, size=m)) // max(1, n_facts // m) + (SPAN_MS * start // n_facts)
        all_vectors[start:end], platform_idx[start:end], as_of_all[start:end], thread_all[start:end] = (
            vectors,
            platforms,
            as_of,
            threads,
        )
        facts = [
            SyntheticFact(
                f"fact_{start + j:09d}",
                sentences[pick[j]],
                int(as_of[j]),
                ingested_at=int(as_of[j]),
                created_at=int(as_of[j]),
                platform=PLATFORMS[platforms[j]],
                thread_id=f"{PLATFORMS[platforms[j]]}:thread-{threads[j]}",
            )
            for j in range(m)
        ]
        mentioned = zipf_ranks(rng, m, n_entities)
        with db.transaction(conn):
            write_facts(conn, facts)
            # Each fact names its person first; another entity, Zipf-picked, rides along.
            links = {(f.id, entity_ids[person_entity[f.text.split(" ", 1)[0]]], f.as_of) for f in facts}
            links |= {(f.id, entity_ids[int(mentioned[j])], f.as_of) for j, f in enumerate(facts)}
            write_links(conn, sorted(links))
            write_fact_vectors(stores, embedder.model_name, facts, vectors)
        rate = end / (time.perf_counter() - fill_started)
        _progress(f"filled {end:,}/{n_facts:,} facts ({rate:,.0f}/s)")
    return {
        "vectors": all_vectors,
        "platform": platform_idx,
        "as_of": as_of_all,
        "thread": thread_all,
        "fill_s": time.perf_counter() - started,
    }


def _ms(samples: list[float]) -> dict[str, float]:
    arr = np.asarray(samples) * 1000
    return {"p50_ms": round(float(np.percentile(arr, 50)), 3), "p95_ms": round(float(np.percentile(arr, 95)), 3)}


def _exact(vectors: np.ndarray, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[str]:
    scores = vectors @ query
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top])]
    return [f"fact_{i:09d}" for i in top if np.isfinite(scores[i])]


def _recall(found: list[tuple[str, float]], truth: list[str]) -> float:
    if not truth:
        return 1.0
    return len({f for f, _ in found} & set(truth)) / len(truth)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def measure(
    stores: Stores, embedder: Embedder, data: dict[str, Any], *, queries: int, seed: int, k: int = 20
) -> dict[str, Any]:
    """Time the search paths and compute recall@k against exact search."""
    rng = np.random.default_rng(seed + 1)
    texts = _queries(rng, queries)
    search = VectorIndex(stores, embedder.model_name, embedder.dimension)
    vectors = data["vectors"]
    for text in texts[:5]:  # warm-up: page cache, lazy loads
        search.search(embedder.encode_query(text), k)
    results: dict[str, Any] = {}
    total, only, encode_t, torch_t, exact_t, recalls = [], [], [], [], [], []
    query_vectors = []
    for text in texts:
        # Baseline in the same loop (same cache state): the query through torch, as the facts were embedded.
        torch_t.append(_timed(lambda t=text: embedder.encode([t], batch_size=1))[1])
        started = time.perf_counter()
        q = embedder.encode_query(text)
        encoded = time.perf_counter()
        found = search.search(q, k)
        done = time.perf_counter()
        total.append(done - started)
        encode_t.append(encoded - started)
        only.append(done - encoded)
        truth, seconds = _timed(lambda q=q: _exact(vectors, q, k))
        exact_t.append(seconds)
        recalls.append(_recall(found, truth))
        query_vectors.append(q)
    results["semantic_search"] = _ms(total)
    results["query_embedding"] = {**_ms(encode_t), "backend": embedder.query_backend}
    results["query_embedding_torch"] = _ms(torch_t)
    results["search_only"] = _ms(only)
    results["exact_numpy"] = _ms(exact_t)
    results["recall_at_20"] = round(float(np.mean(recalls)), 4)
    results["filtered"] = _filtered(search, data, query_vectors, rng, k)
    sub = query_vectors[: min(20, len(query_vectors))]
    vec0_t = [_timed(lambda q=q: search.exact(q, k))[1] for q in sub]
    results["exact_sqlite_vec"] = {**_ms(vec0_t), "queries": len(sub)}
    results["recall"] = _time_recall(stores, rng, queries)
    busiest = _busiest_person(stores)
    if busiest is not None:
        # Queries naming a busy person embed twice (with and without the name): timed on their own.
        person, busy = busiest
        named = _queries(rng, queries, person)
        results["recall"]["mid_busy_name"] = {
            "person": person,
            "busy": busy,
            **_ms([_timed(lambda t=t: recall(stores, t, budget="mid"))[1] for t in named]),
        }
    return results


def _filtered(
    search: VectorIndex, data: dict[str, Any], query_vectors: list[np.ndarray], rng: np.random.Generator, k: int
) -> dict[str, Any]:
    """Search-only latency and recall@k of filtered queries (filters applied before the top-k)."""
    out: dict[str, Any] = {}
    n_threads = int(data["thread"].max()) + 1
    as_of = data["as_of"]
    span = int(as_of.max() - as_of.min())
    cases = {
        "platform": lambda: (Filter(platform="gmail"), data["platform"] == PLATFORMS.index("gmail")),
        "time_90d": lambda: _time_case(as_of, rng, 90 * 86_400_000, span),
        "thread": lambda: _thread_case(data, rng, n_threads),
    }
    for name, make in cases.items():
        times, recalls = [], []
        for q in query_vectors[: min(50, len(query_vectors))]:
            flt, mask = make()
            found, seconds = _timed(
                lambda q=q, flt=flt: search.search(
                    q,
                    k,
                    platform=flt.platform,
                    time_after=flt.time_after,
                    time_before=flt.time_before,
                    thread_id=flt.thread_id,
                )
            )
            times.append(seconds)
            recalls.append(_recall(found, _exact(data["vectors"], q, k, mask)))
        out[name] = {**_ms(times), "recall_at_20": round(float(np.mean(recalls)), 4)}
    return out


def _time_case(as_of: np.ndarray, rng: np.random.Generator, window: int, span: int) -> tuple[Filter, np.ndarray]:
    start = int(as_of.min()) + int(rng.integers(max(1, span - window)))
    return Filter(time_after=start, time_before=start + window), (as_of >= start) & (as_of <= start + window)


def _thread_case(data: dict[str, Any], rng: np.random.Generator, n_threads: int) -> tuple[Filter, np.ndarray]:
    row = int(rng.integers(len(data["thread"])))
    thread, platform = int(data["thread"][row]), int(data["platform"][row])
    name = f"{PLATFORMS[platform]}:thread-{thread}"
    return Filter(thread_id=name), (data["thread"] == thread) & (data["platform"] == platform)


def after_forgets(
    stores: Stores,
    embedder: Embedder,
    data: dict[str, Any],
    *,
    queries: int,
    seed: int,
    share: float = 0.1,
    k: int = 20,
) -> dict[str, Any]:
    """recall@k against exact over what is left once `share` of the facts (drawn at random) are forgotten: with the
    index pruned as a forget leaves it (centroids kept), then retrained as the nightly upkeep does."""
    rng = np.random.default_rng(seed + 2)
    n = len(data["vectors"])
    gone = np.sort(rng.choice(n, int(n * share), replace=False))
    with stores.transaction():
        delete_vectors(stores.conn, {"fact": [f"fact_{i:09d}" for i in gone]})
    kept = np.ones(n, dtype=bool)
    kept[gone] = False
    search = VectorIndex(stores, embedder.model_name, embedder.dimension)
    query_vectors = [embedder.encode_query(text) for text in _queries(rng, queries)]

    def recall_at_k() -> float:
        found = [_recall(search.search(q, k), _exact(data["vectors"], q, k, kept)) for q in query_vectors]
        return round(float(np.mean(found)), 4)

    pruned_s = _timed(lambda: rewrite_index_files(stores, ["fact"]))[1]
    pruned = recall_at_k()
    retrained_s = _timed(lambda: nightly_index_upkeep(stores))[1]
    return {
        "forgotten": len(gone),
        "recall_at_20_pruned": pruned,
        "prune_s": round(pruned_s, 2),
        "recall_at_20_retrained": recall_at_k(),
        "retrain_s": round(retrained_s, 1),
    }


def _cpu_timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """fn's result, wall seconds and this process's CPU seconds: on a loaded machine wall is several times CPU.
    The process's, not the thread's: recall embeds the query in a worker thread (recall/strategies.py), and
    the calling thread's CPU alone would leave the model's 5 ms out."""
    started, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - started, time.process_time() - cpu


def _ms_cpu(samples: list[tuple[Any, float, float]]) -> dict[str, float]:
    """p50/p95 wall ms of `_cpu_timed` samples, and their CPU ms p50."""
    return {**_ms([s[1] for s in samples]), "cpu_p50_ms": round(float(np.median([s[2] for s in samples])) * 1000, 3)}


def _time_recall(stores: Stores, rng: np.random.Generator, count: int) -> dict[str, Any]:
    """p50/p95 of the whole `recall` per budget, the median of each stage of a mid recall, and p50/p95 of
    `get_context` (the injection target: well under 1 s); each with its CPU p50.

    Each gets `count` questions of its own, new to the process, so the query model runs in every timed call
    (the embedder keeps the vectors of the last queries: a question asked again skips it).
    """
    out: dict[str, Any] = {}
    stages: dict[str, list[float]] = {}
    for budget in ("low", "mid", "high"):
        texts = _queries(rng, count + 3)
        for text in texts[:3]:
            recall(stores, text, budget=budget)  # warm-up
        samples = [_cpu_timed(lambda t=text, b=budget: recall(stores, t, budget=b)) for text in texts[3:]]
        if budget == "mid":
            for response, _, _ in samples:
                for stage, ms in response.timings_ms.items():
                    stages.setdefault(stage, []).append(ms)
        out[budget] = _ms_cpu(samples)
    # A stage a query skips counts as 0 ms for it, so the medians compare with the total's.
    out["mid_stages_p50_ms"] = {
        stage: round(float(np.median(values + [0.0] * (count - len(values)))), 3) for stage, values in stages.items()
    }
    texts = _queries(rng, count)
    out["get_context"] = _ms_cpu([_cpu_timed(lambda t=t: get_context(stores, t, session_id="bench")) for t in texts])
    return out


def reload(stores: Stores, dimension: int) -> dict[str, Any]:
    """The arrays `fill` returned, read back from a store it filled (to re-measure without refilling)."""
    rows = stores.conn.execute(
        "SELECT e.embedding, f.platform, f.as_of, f.thread_id, f.id FROM embeddings e "
        "JOIN facts f ON f.id = e.target_id WHERE e.target_type = 'fact' ORDER BY e.rowid"
    ).fetchall()
    # Exact answers name fact i by its position (`_exact`): a store that lost facts cannot be measured.
    if any(r[4] != f"fact_{i:09d}" for i, r in enumerate(rows)):
        raise ValueError("this store is not one `fill` left whole (facts forgotten or added); build a new one")
    return {
        "vectors": np.frombuffer(b"".join(r[0] for r in rows), dtype="<f4").reshape(len(rows), dimension),
        "platform": np.array([PLATFORMS.index(r[1]) for r in rows], np.int32),
        "as_of": np.array([r[2] for r in rows], np.int64),
        "thread": np.array([int(r[3].rsplit("-", 1)[1]) for r in rows], np.int32),
        "fill_s": float("nan"),
    }


def run(
    n_facts: int,
    *,
    queries: int = 200,
    data_dir: Path | None = None,
    seed: int = 0,
    sentences: int = 3000,
) -> dict[str, Any]:
    """Fill a store with `n_facts` synthetic facts and measure search latency and recall.

    Without `data_dir` the store is a fresh temporary one, and the run ends by forgetting a tenth of it. With
    `data_dir` the store is kept whole: filled there when it is empty, else measured as an earlier run left
    it (no fill, no index build; `n_facts` is what it holds).
    """
    directory = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="nexus-bench-"))
    settings = load_settings(data_dir=directory)
    embedder = get_embedder(settings.embedding_model, threads=settings.torch_threads)
    build_s = float("nan")
    with Stores(settings) as stores:
        present = stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0]
        reused = bool(present)
        if reused:
            _progress(f"measuring the {present:,} facts already in {directory}")
            data = reload(stores, embedder.dimension)
            n_facts = present
        else:
            data = fill(stores, embedder, n_facts, seed=seed, n_sentences=sentences)
            _progress("building the IVF index")
            _, build_s = _timed(
                lambda: build_ivf(
                    stores.conn, stores.data_dir, embedder.model_name, "fact", embedder.dimension, seed=seed
                )
            )
            _progress(f"IVF built in {build_s:.1f}s")
        _progress(f"measuring {queries} queries")
        results = measure(stores, embedder, data, queries=queries, seed=seed)
        if data_dir is None:  # a kept store stays whole, to be measured again
            _progress("forgetting a tenth of the facts")
            results["after_forgets"] = after_forgets(stores, embedder, data, queries=queries, seed=seed)
    return {
        "facts": n_facts,
        "queries": queries,
        "k": 20,
        "model": embedder.model_name,
        "torch_threads": settings.torch_threads,
        "vectors": f"synthetic clustered: real MiniLM embeddings of {sentences} template sentences, each fact "
        "= its sentence + U(0,0.5) x another sentence + N(0, 0.03) noise, renormalised",
        "data_dir": str(directory),
        "reused": reused,
        "fill_s": round(data["fill_s"], 1),
        "machine_load_1min": round(os.getloadavg()[0], 2),
        "ann_build_s": round(build_s, 1),
        **results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="keep the store here; measure it again when it holds one"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    result = run(args.facts, queries=args.queries, data_dir=args.data_dir, seed=args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
