"""The recall strategies: each turns a query into ranked lists of "<type>:<id>" keys, best first.

- semantic: cosine KNN through the vector index (one list across all types in scope, by similarity);
- keyword:  FTS5 BM25 over the facts' retrieval keys, each fact with its source message (terms chosen by
            `keyword.py`), LIKE over observation / mental model text (those tables have no FTS index;
            they are small next to facts);
- entity:   entities named in the query or given as `entity`, then their latest facts through the
            (entity_id, as_of DESC) index, ranked by how many query entities a fact links, then recency
            (a named entity linked to over BUSY_ENTITY_SHARE of recent facts tells nothing apart: skipped);
            for scope 'entities', the matching entities themselves;
- causal:   one hop along causal_links from the top fused facts;
- recency:  the latest facts passing the filters, when nothing else found anything.

Every filter is a WHERE clause (filters.py) inside each strategy, before its LIMIT. The vector index
filters platform / time / thread itself (a fact's time there is when it was said); the rest (entity, session,
exclude_session, the time a question asks about, which facts match by the time they are about, hidden facts)
is handled by scoring the few matching facts exactly when the filter is selective (<= EXACT_SCAN_MAX
facts) and otherwise by over-fetching from the index and filtering in SQL (which can return fewer than
the limit when the filter is both loose and far from the query). An excluded session alone (get_context's
own conversation) first tries the short fetch an unfiltered search makes, and over-fetches only when that
session's facts left it short.

A busy entity named in the query (see query_entities.BUSY_ENTITY_SHARE) also tells little apart for
the semantic strategy: the query is embedded with and without its name and the two vectors averaged.

In a large store the facts' BM25 and the entity list run in a worker thread on a read-only handle of its
own, beside the caller's SQL and the query model (`start_fact_lists`); the lists are the same either way.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.recall import keyword
from nexus_memory.recall.filters import Filters
from nexus_memory.recall.fusion import Ranked, result_key
from nexus_memory.recall.prompt import Prompt
from nexus_memory.recall.query_entities import MAX_QUERY_ENTITIES, terms_besides_names, without_names

if TYPE_CHECKING:
    from nexus_memory.embeddings.model import Embedder
    from nexus_memory.embeddings.vectors.index import VectorIndex

log = logging.getLogger(__name__)

KEYWORD_WINDOW = 1_000  # BM25 scores at most the newest this-many matching facts (see _fts_facts)
EXACT_SCAN_MAX = 5_000  # a filter matching at most this many facts is scored exactly, not via the index
SEMANTIC_OVERFETCH = 4  # index over-fetch when filters remain that the index cannot apply
FIRST_FETCH_SLACK = 16  # fetched past the limit by the first index search, for hidden facts to drop
EMBED_CHARS = 2_000  # the model reads ~256 tokens anyway
# Facts read per query entity before ranking; bounded so a very busy entity stays cheap.
ENTITY_SCAN_LIMIT = 500
# Facts (by rowid) from which the facts' BM25 and entity list run in a thread of their own (`start_fact_lists`):
# at 1M the BM25 took the caller's CPU from 16.9 to 10.5 ms a mid recall, the entity list 2.8 ms more; on the
# demo store (273 facts) the hand-off costs more than the 0.4 ms it moves (CPU 1.03x).
KEYWORD_BESIDE_MIN_FACTS = 20_000


@dataclass
class QueryContext:
    """Everything one recall needs, passed to each strategy."""

    stores: Stores
    prompt: Prompt  # the query as read once: its searched text (dates out), terms, named and busy entities
    types: tuple[str, ...]  # target types in scope
    filters: Filters
    limit: int
    vector_index: VectorIndex | None = None
    query_vector: np.ndarray | None = None
    # Filters without the window parsed from the query, when that window is a boost (see engine.py).
    any_time: Filters | None = None

    @property
    def conn(self) -> db.Connection:
        return self.stores.conn


def semantic_model(ctx: QueryContext, embedder: Embedder | None) -> Embedder | None:
    """The query model, with ctx.vector_index set; None (semantic skipped) when vectors are unavailable."""
    if not keyword.tokenize(ctx.prompt.searched):
        return None  # nothing but punctuation/emoji: an embedding of it would match noise
    if embedder is None:
        embedder = default_embedder(ctx.stores)
        if embedder is None:
            return None
    from nexus_memory.embeddings.vectors.index import VectorIndex
    from nexus_memory.embeddings.vectors.vec0 import index_state

    if index_state(ctx.conn) is None:
        return None  # no vector stored yet, so none to find (and the empty index has no dimension to match)

    ctx.vector_index = VectorIndex(ctx.stores, embedder.model_name, embedder.dimension)
    return embedder


def start_query_embedding(ctx: QueryContext, embedder: Embedder, *, beside: bool) -> Callable[[], None]:
    """Start embedding the query; the returned function waits for it and sets ctx.query_vector.

    With `beside`, a model that releases the GIL (the ONNX one) runs in a worker thread, so the caller's SQL
    strategies run meanwhile instead of after its 5-7 ms; any other model runs here and now.
    """
    # A busy entity's name (the user, a conversation partner) is in most facts, and in a short query it
    # pulls the embedding toward every fact that repeats it. Averaging with the query embedded without
    # it keeps who the question is about while what it asks decides the ranking (see the module docstring).
    text, busy = ctx.prompt.searched, ctx.prompt.busy
    generic = without_names(ctx.conn, text, sorted(busy)) if busy else None  # SQL: on the caller's thread
    texts = [text[:EMBED_CHARS]] + ([generic[:EMBED_CHARS]] if generic is not None else [])

    def unit(vectors: np.ndarray) -> np.ndarray:
        vector = np.asarray(vectors, dtype=np.float32).sum(axis=0)
        return vector / max(float(np.linalg.norm(vector)), 1e-12)

    def set_vector(vector: np.ndarray) -> None:
        ctx.query_vector = vector

    if beside and getattr(embedder, "queries_release_gil", False):
        # The thread goes on to the facts' IVF scan (numpy, no SQL), so it too runs beside the SQL strategies.
        scan = _fact_scan_ahead(ctx)

        def embed_and_scan() -> np.ndarray:
            vector = unit(embedder.encode_queries(texts))
            if scan is not None:
                scan(vector)
            return vector

        pending = _query_pool().submit(embed_and_scan)
        return lambda: set_vector(pending.result())
    set_vector(unit(embedder.encode_queries(texts)))
    return lambda: None


def _fact_scan_ahead(ctx: QueryContext) -> Callable[[np.ndarray], None] | None:
    """The facts' IVF scan of `semantic_search`, prepared to run on the query model's thread
    (VectorIndex.search_ahead): only for the fetch its first index search makes without any SQL before it
    (no filter that `_selective_fact_ids` would count)."""
    f = ctx.filters
    if ctx.vector_index is None or "fact" not in ctx.types or f.entity_ids is not None or f.session_id is not None:
        return None
    if _asks_about_time(f):
        return None
    return ctx.vector_index.search_ahead(ctx.limit + FIRST_FETCH_SLACK, **_index_filter(ctx, "fact"))


_POOL: list[tuple[int, ThreadPoolExecutor]] = []  # (pid, pool): a forked child makes its own


def _query_pool() -> ThreadPoolExecutor:
    """The threads that embed queries beside recall's SQL (a few: concurrent recalls each embed one)."""
    if not _POOL or _POOL[0][0] != os.getpid():
        _POOL[:] = [(os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embedding"))]
    return _POOL[0][1]


_UNLOADABLE: set[str] = set()  # models that failed to load in this process: don't retry every query


def default_embedder(stores: Stores) -> Embedder | None:
    """The model the store's vector index was built with, or None (nothing loaded) when there is none.

    The index's model, not the configured one: query vectors must live in the indexed space. A
    model that cannot be loaded here disables the semantic strategy (logged once per process).
    """
    try:
        from nexus_memory.embeddings.model import get_embedder
        from nexus_memory.embeddings.vectors.vec0 import index_state
    except ImportError:
        return None
    state = index_state(stores.conn)
    if state is None or state[0] in _UNLOADABLE:
        return None
    try:
        return get_embedder(state[0])
    except (RuntimeError, OSError, ValueError) as exc:
        _UNLOADABLE.add(state[0])
        log.warning("semantic recall disabled: %s", exc)
        return None


def semantic_search(ctx: QueryContext) -> Ranked:
    """One list over every type in scope, by cosine similarity (comparable across types)."""
    assert ctx.vector_index is not None and ctx.query_vector is not None
    found: Ranked = []
    for target_type in ctx.types:
        if not ctx.vector_index.holds(target_type):
            continue
        # Cosine <= 0 means unrelated; such "nearest" rows would only add noise to the fusion.
        found += [hit for hit in _semantic_for_type(ctx, target_type) if hit[1] > 0.0]
    found.sort(key=lambda item: -item[1])
    return found[: ctx.limit]


def _semantic_for_type(ctx: QueryContext, target_type: str) -> Ranked:
    vs, q, f, limit = ctx.vector_index, ctx.query_vector, ctx.filters, ctx.limit
    assert vs is not None and q is not None
    if target_type == "fact":
        exact_ids = _selective_fact_ids(ctx)
        if exact_ids is not None:
            return _exact_scores(vs, q, "fact", exact_ids, limit)
        where, args = f.fact_sql("f")
        if not _needs_post_filter(f) or _only_excludes_a_session(f):
            hits = _index_hits(ctx, "fact", limit + FIRST_FETCH_SLACK)
            kept = _post_filter(ctx.conn, "fact", hits, "FROM facts f", "f.id", where, args, limit)
            # The nearest `limit` that pass are the same in any longer fetch; the over-fetch below is
            # only needed when the excluded session (the conversation at hand) filled the short one.
            if not _needs_post_filter(f) or len(kept) >= limit:
                return kept
        hits = _index_hits(ctx, "fact", limit * SEMANTIC_OVERFETCH)
        return _post_filter(ctx.conn, "fact", hits, "FROM facts f", "f.id", where, args, limit)
    if target_type == "observation":
        clause = f.observation_sql()
        if clause is None:
            return []
        hits = _index_hits(ctx, "observation", limit * SEMANTIC_OVERFETCH)
        source = "FROM analysis_runs r LEFT JOIN episodes ep ON ep.id = r.episode_id"
        return _post_filter(ctx.conn, "observation", hits, source, "r.id", *clause, limit)
    if target_type == "mental_model":
        clause = f.mental_model_sql()
        if clause is None:
            return []
        hits = _index_hits(ctx, "mental_model", limit * SEMANTIC_OVERFETCH, place=False)
        return _post_filter(ctx.conn, "mental_model", hits, "FROM mental_models m", "m.id", *clause, limit)
    where, args = f.entity_sql()
    hits = _index_hits(ctx, "entity", limit * SEMANTIC_OVERFETCH, place=False, time=False)
    return _post_filter(ctx.conn, "entity", hits, "FROM entities n", "n.id", where, args, limit)


def _index_hits(
    ctx: QueryContext, target_type: str, fetch: int, *, place: bool = True, time: bool = True
) -> list[tuple[str, float]]:
    """The index's nearest rows of one type, with the filters the index applies itself: platform and
    thread (`place`; mental models and entities have none) and the time window (`time`)."""
    assert ctx.vector_index is not None and ctx.query_vector is not None
    return ctx.vector_index.search(ctx.query_vector, fetch, **_index_filter(ctx, target_type, place=place, time=time))


def _index_filter(ctx: QueryContext, target_type: str, *, place: bool = True, time: bool = True) -> dict[str, Any]:
    """The filters the vector index applies itself (see `_index_hits`), as its search's keyword arguments."""
    f = ctx.filters
    # The index holds one time per row: a fact's when-said (the about-window is post-filtered, _needs_post_filter);
    # an observation's or model's only time, which the asked-about window bounds too.
    after, before = (f.time_after, f.time_before) if target_type == "fact" else f.one_time
    return {
        "target_type": target_type,
        "platform": f.platform if place else None,
        "time_after": after if time else None,
        "time_before": before if time else None,
        "thread_id": f.thread_id if place else None,
    }


def _needs_post_filter(f: Filters) -> bool:
    return (
        f.entity_ids is not None or f.session_id is not None or f.exclude_session_id is not None or _asks_about_time(f)
    )


def _only_excludes_a_session(f: Filters) -> bool:
    """The index cannot apply the filter, but it drops no more than one session's facts (get_context's
    exclusion of the conversation it is injected into)."""
    return (
        f.exclude_session_id is not None and f.entity_ids is None and f.session_id is None and not _asks_about_time(f)
    )


def _asks_about_time(f: Filters) -> bool:
    """A window on the time facts are about, which the vector index (one time per row) cannot apply."""
    return f.about_after is not None or f.about_before is not None


def _selective_fact_ids(ctx: QueryContext) -> list[str] | None:
    """Ids of all facts passing a selective filter (entity / session / a time asked about), or None if not
    selective."""
    f = ctx.filters
    if f.entity_ids is None and f.session_id is None and not _asks_about_time(f):
        return None
    where, args = f.fact_sql("f")
    rows = ctx.conn.execute(f"SELECT f.id FROM facts f WHERE {where} LIMIT ?", [*args, EXACT_SCAN_MAX + 1])
    ids = [r[0] for r in rows]
    return ids if len(ids) <= EXACT_SCAN_MAX else None


def _exact_scores(vs: VectorIndex, query: np.ndarray, target_type: str, ids: Sequence[str], limit: int) -> Ranked:
    """Cosine of the query with each id's stored vector: filter-before-top-k by construction."""
    vectors = vs.vectors(target_type, ids)
    if not vectors:
        return []
    found = list(vectors)
    scores = np.stack([vectors[i] for i in found]) @ query
    order = np.argsort(-scores, kind="stable")[:limit]
    return [(result_key(target_type, found[i]), float(scores[i])) for i in order]


def _post_filter(
    conn: db.Connection,
    target_type: str,
    hits: list[tuple[str, float]],
    source: str,
    id_column: str,
    where: str,
    args: list[Any],
    limit: int,
) -> Ranked:
    """Keep the hits whose row in `source` passes `where`, in hit order, up to `limit` (the first `limit` are
    checked first; the over-fetch behind them only when some of those fail)."""
    if not hits:
        return []

    def passing(ids: list[str]) -> set[str]:
        keep: set[str] = set()
        for part in db.chunked(ids):
            sql = f"SELECT {id_column} {source} WHERE {id_column} IN ({db.placeholders(part)}) AND {where}"
            keep.update(r[0] for r in conn.execute(sql, [*part, *args]))
        return keep

    ids = [h[0] for h in hits]
    keep = passing(ids[:limit])
    if sum(i in keep for i in ids[:limit]) < limit:
        keep |= passing(ids[limit:])
    return [(result_key(target_type, i), s) for i, s in hits if i in keep][:limit]


def keyword_search(ctx: QueryContext, facts: Callable[[], Ranked] | None = None) -> list[Ranked]:
    """FTS5 BM25 over facts (`facts`: waits for that list, started by `start_fact_lists`); LIKE over
    observations and mental models (no FTS table for them)."""
    lists: list[Ranked] = []
    if "fact" in ctx.types:
        lists.append(_fts_facts(ctx) if facts is None else facts())
    higher = [t for t in ctx.types if t in ("observation", "mental_model")]
    if higher:
        lists.append(_like_higher_layers(ctx, higher))
    return lists


def _fts_facts(ctx: QueryContext, conn: db.Connection | None = None) -> Ranked:
    """BM25 over the facts, and over their source messages for a word no fact holds
    (schema/memory_fact_keys.sql); through `conn` when given (`start_fact_lists`), else ctx's own."""
    conn = ctx.conn if conn is None else conn
    match = _key_match(conn, ctx.prompt.terms)
    if match is None:
        return []
    where, args = ctx.filters.fact_sql("f")
    # ORDER BY bm25 scores every matching row: at 1M facts a common term matches 50k+ rows (~150 ms).
    # Walking matches newest-first is cheap, so BM25 ranks only the newest KEYWORD_WINDOW of them; rare
    # terms (the ones keyword search exists for) match fewer rows than that and are ranked in full. One walk
    # scores them as it goes (ties in rank go to the older fact).
    sql = f"""SELECT id, rank FROM (
                SELECT f.id AS id, bm25(fact_keys_fts) AS rank, fact_keys_fts.rowid AS key_rowid
                FROM fact_keys_fts JOIN facts f ON f.rowid = fact_keys_fts.rowid
                WHERE fact_keys_fts MATCH ? AND {where} ORDER BY fact_keys_fts.rowid DESC LIMIT ?)
              ORDER BY rank, key_rowid LIMIT ?"""
    rows = conn.execute(sql, [match, *args, KEYWORD_WINDOW, ctx.limit]).fetchall()
    return [(result_key("fact", r[0]), float(r[1])) for r in rows]


@dataclass(frozen=True)
class FactLists:
    """Fact lists being made on the reading handle (`start_fact_lists`): each member waits for its list;
    None where that list is made inline on the caller's connection."""

    keywords: Callable[[], Ranked] | None = None
    entities: Callable[[], Ranked] | None = None


def start_fact_lists(ctx: QueryContext, strategies: Sequence[str]) -> FactLists:
    """Start the facts' BM25 (`_fts_facts`, when `strategies` has keyword) and the query entities' facts
    (`_entity_facts`, when it has entity) in a worker thread on a reading handle of its own (`_reader`), one
    after the other, beside the caller's SQL and the query model.

    Nothing starts (both run inline) in a small store (KEYWORD_BESIDE_MIN_FACTS), where another handle could
    see other rows (the caller's connection is inside a transaction: its own uncommitted writes), or while
    another recall of this process holds the reader."""
    inline = FactLists()
    entity_ids = _query_entities(ctx) if "entity" in strategies else []
    jobs: list[tuple[str, Callable[[db.Connection], Ranked]]] = []
    if "keyword" in strategies:
        jobs.append(("keywords", lambda conn: _fts_facts(ctx, conn)))
    if entity_ids:
        jobs.append(("entities", lambda conn: _entity_facts(ctx, entity_ids, conn)))
    if not jobs or "fact" not in ctx.types or ctx.conn.in_transaction:
        return inline
    if (ctx.conn.execute("SELECT max(rowid) FROM facts").fetchone()[0] or 0) < KEYWORD_BESIDE_MIN_FACTS:
        return inline
    reader = _reader(ctx.stores)
    if reader is None or not reader[1].acquire(blocking=False):
        return inline
    handle, lock = reader
    pending = {name: Future[Ranked]() for name, _ in jobs}

    def run() -> None:
        try:
            for name, job in jobs:
                pending[name].set_running_or_notify_cancel()
                try:
                    pending[name].set_result(job(handle.conn))
                except BaseException as exc:  # the caller sees it when it asks for this list
                    pending[name].set_exception(exc)
        finally:
            lock.release()

    try:
        _query_pool().submit(run)
    except RuntimeError:  # the pool is shutting down (interpreter exit)
        lock.release()
        return inline
    waiting = {name: future.result for name, future in pending.items()}
    return FactLists(waiting.get("keywords"), waiting.get("entities"))


# Stores -> (pid, a read-only Stores on the same files, the lock of whoever uses it): one per Stores and
# process (a forked child opens its own; an SQLite handle must not cross a fork).
_READERS: weakref.WeakKeyDictionary[Stores, tuple[int, Stores | None, threading.Lock]] = weakref.WeakKeyDictionary()
_READERS_LOCK = threading.Lock()


def _reader(stores: Stores) -> tuple[Stores, threading.Lock] | None:
    """A second, read-only handle on `stores`' files, for SQL run in another thread (a connection runs one
    statement at a time); None when it cannot be opened (logged once)."""
    with _READERS_LOCK:
        known = _READERS.get(stores)
        if known is None or known[0] != os.getpid():
            try:
                handle: Stores | None = Stores(stores.settings, readonly=True)
            except (db.OperationalError, OSError) as exc:
                log.warning("recall's reading handle unavailable, its keyword search runs inline: %s", exc)
                handle = None
            known = _READERS[stores] = (os.getpid(), handle, threading.Lock())
    _, handle, lock = known
    return None if handle is None else (handle, lock)


def _key_match(conn: db.Connection, terms: Sequence[str]) -> str | None:
    """The MATCH over fact_keys_fts: each chosen term in the facts (column `text`) where a fact holds it,
    else in the facts and their messages. Where facts hold a word they say it more precisely than the
    messages around them (a message's every fact would match it); where none does, its message is all
    that can."""
    chosen = keyword.choose_terms(conn, "fact_keys_fts", terms)
    in_facts = keyword.document_frequencies(conn, "facts_fts", chosen, cap=1)
    parts = [f"text : {keyword.quote(term)}" if in_facts[term] else keyword.quote(term) for term in chosen]
    return " OR ".join(parts) if parts else None


def _like_higher_layers(ctx: QueryContext, types: Sequence[str]) -> Ranked:
    """Rows containing query terms (case-insensitive), ranked by how many distinct terms they hold."""
    terms = keyword.like_terms(ctx.prompt.terms)
    if not terms:
        return []
    found: Ranked = []
    hits_sql = " + ".join(["(lower({text}) LIKE ? ESCAPE '\\')"] * len(terms))
    patterns = [keyword.like_pattern(t) for t in terms]
    sources = {
        "observation": (
            "r.id",
            "r.output_text",
            "FROM analysis_runs r LEFT JOIN episodes ep ON ep.id = r.episode_id",
            ctx.filters.observation_sql(),
        ),
        "mental_model": (
            "m.id",
            "(m.name || ': ' || m.description)",
            "FROM mental_models m",
            ctx.filters.mental_model_sql(),
        ),
    }
    for target_type in types:
        id_col, text_col, source, clause = sources[target_type]
        if clause is None:
            continue
        hits = hits_sql.format(text=text_col)
        sql = f"""SELECT id, hits FROM (SELECT {id_col} AS id, ({hits}) AS hits {source} WHERE {clause[0]})
                  WHERE hits > 0 ORDER BY hits DESC LIMIT ?"""
        rows = ctx.conn.execute(sql, [*patterns, *clause[1], ctx.limit]).fetchall()
        found += [(result_key(target_type, r[0]), float(r[1]) / len(terms)) for r in rows]
    found.sort(key=lambda item: -item[1])
    return found[: ctx.limit]


def entity_search(ctx: QueryContext, facts: Callable[[], Ranked] | None = None) -> list[Ranked]:
    """Facts of the query's entities (and the `entity` filter's; `facts`: waits for that list, started by
    `start_fact_lists`), plus matching entity results."""
    conn, f = ctx.conn, ctx.filters
    named = list(ctx.prompt.entities)
    query_entities = _query_entities(ctx)
    lists: list[Ranked] = []
    if "fact" in ctx.types and query_entities:
        lists.append(_entity_facts(ctx, query_entities) if facts is None else facts())
    if "entity" in ctx.types:
        where, args = f.entity_sql()
        marks = db.placeholders(named) or "NULL"
        rows = conn.execute(
            f"SELECT n.id FROM entities n WHERE n.id IN ({marks}) AND {where}", [*named, *args]
        ).fetchall()
        live = {r[0] for r in rows}
        lists.append([(result_key("entity", e), 1.0) for e in named if e in live])
    return lists


def _query_entities(ctx: QueryContext) -> list[str]:
    """The entities whose facts the entity list reads: the `entity` filter's, then those the query names."""
    return list(dict.fromkeys([*(ctx.filters.entity_ids or ()), *ctx.prompt.entities]))[:MAX_QUERY_ENTITIES]


def _entity_facts(ctx: QueryContext, entity_ids: Sequence[str], conn: db.Connection | None = None) -> Ranked:
    """Latest facts per entity via (entity_id, as_of DESC); rank by entities linked, then recency. Through
    `conn` when given (`start_fact_lists`), else ctx's own."""
    conn = ctx.conn if conn is None else conn
    where, args = ctx.filters.fact_sql("f")
    time_sql, time_args = "", []
    # Repeat the time window on fe.as_of so the index range does the work.
    if ctx.filters.time_after is not None:
        time_sql += " AND fe.as_of >= ?"
        time_args.append(ctx.filters.time_after)
    if ctx.filters.time_before is not None:
        time_sql += " AND fe.as_of <= ?"
        time_args.append(ctx.filters.time_before)
    links: dict[str, int] = {}
    as_of: dict[str, int] = {}
    overlap: dict[str, int] = {}
    # An entity with many facts (the `entity` filter's) is ranked by the query's other words before
    # recency, which keeps this list about the question, not just the person.
    shared = _stems_shared(frozenset(t[:5] for t in ctx.prompt.terms))
    # Busy entities count only when the query is about nothing but its entities ("Tyler?"), or when
    # the caller asked for them with the `entity` filter.
    busy = (
        ctx.prompt.busy - set(ctx.filters.entity_ids or ())
        if terms_besides_names(conn, ctx.prompt.terms, entity_ids)
        else set()
    )
    for entity_id in (e for e in entity_ids if e not in busy):
        rows = conn.execute(
            f"""SELECT fe.fact_id, fe.as_of, f.text FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
                WHERE fe.entity_id = ?{time_sql} AND {where} ORDER BY fe.as_of DESC LIMIT ?""",
            [entity_id, *time_args, *args, ENTITY_SCAN_LIMIT],
        ).fetchall()
        unread = [(fact_id, text) for fact_id, _, text in rows if fact_id not in overlap]  # a fact is read once
        overlap.update(zip((fact_id for fact_id, _ in unread), shared([text for _, text in unread]), strict=True))
        for fact_id, fact_as_of, _ in rows:
            links[fact_id] = links.get(fact_id, 0) + 1
            as_of[fact_id] = fact_as_of
    ranked = sorted(links, key=lambda i: (-links[i], -overlap[i], -as_of[i], i))[: ctx.limit]
    return [(result_key("fact", i), float(links[i])) for i in ranked]


def _stems_shared(stems: frozenset[str]) -> Callable[[Sequence[str]], list[int]]:
    """For texts, how many of `stems` (query terms cut to 5 characters) each one's tokens have, each token cut
    alike (`keyword.tokenize`). ASCII texts are searched together with one pattern for the stems instead of
    each being split into every token (an entity's 500 facts at 1M: ~1.0 -> ~0.3 ms); the counts are the same."""
    word = r"[^\W_]"  # a token's character, as keyword.tokenize reads them
    # A 5-character stem: a token that starts with it; a shorter one (a short term): that whole token. Each
    # alternative starts with its stem's letters (the lookbehind after them), which lets `re` skip ahead.
    alternatives = [
        rf"{re.escape(s)}(?<!{word}{re.escape(s)})" + ("" if len(s) >= 5 else rf"(?!{word})") for s in sorted(stems)
    ]
    pattern = re.compile("|".join(alternatives))

    def shared(texts: Sequence[str]) -> list[int]:
        if not stems:
            return [0] * len(texts)
        cut = [text[: keyword.MAX_QUERY_CHARS] for text in texts]
        counts = [0] * len(cut)
        plain = [i for i, text in enumerate(cut) if text.isascii()]
        for i in range(len(cut)):
            if not cut[i].isascii():
                counts[i] = len(stems & {t[:5] for t in keyword.tokenize(cut[i])})
        # One search over the ASCII texts joined by a line break (no token crosses it), each match placed
        # in its text by where it starts.
        starts, position = [], 0
        for i in plain:
            starts.append(position)
            position += len(cut[i]) + 1
        found: dict[int, set[str]] = {}
        for match in pattern.finditer("\n".join(cut[i] for i in plain).lower()):
            found.setdefault(bisect.bisect_right(starts, match.start()) - 1, set()).add(match.group())
        for slot, held in found.items():
            counts[plain[slot]] = len(held)
        return counts

    return shared


def causal_search(ctx: QueryContext, seed_ids: Sequence[str], *, causes_only: bool = False) -> Ranked:
    """Facts one causal hop from the seeds (either direction; only their causes with `causes_only`), by
    strength x the seed's standing."""
    if not seed_ids:
        return []
    weight = {fact_id: 1.0 / (position + 1) for position, fact_id in enumerate(seed_ids)}
    where, args = ctx.filters.fact_sql("f")
    marks = db.placeholders(seed_ids)
    causes = f"""SELECT c.from_fact_id, c.strength, c.to_fact_id FROM causal_links c
                JOIN facts f ON f.id = c.from_fact_id WHERE c.to_fact_id IN ({marks}) AND {where}"""
    effects = f"""SELECT c.to_fact_id, c.strength, c.from_fact_id FROM causal_links c
                JOIN facts f ON f.id = c.to_fact_id WHERE c.from_fact_id IN ({marks}) AND {where}"""
    rows = ctx.conn.execute(
        causes if causes_only else f"{effects} UNION ALL {causes}",
        [*seed_ids, *args] if causes_only else [*seed_ids, *args, *seed_ids, *args],
    ).fetchall()
    best: dict[str, float] = {}
    for fact_id, strength, seed in rows:
        score = float(strength) * weight[seed]
        best[fact_id] = max(best.get(fact_id, 0.0), score)
    ranked = sorted(best, key=lambda i: (-best[i], i))[: ctx.limit]
    return [(result_key("fact", i), best[i]) for i in ranked]


def recency_search(ctx: QueryContext) -> Ranked:
    """Latest facts passing the filters: the answer to a query that is only a date or an entity."""
    where, args = ctx.filters.fact_sql("f")
    rows = ctx.conn.execute(
        f"SELECT f.id, f.as_of FROM facts f WHERE {where} ORDER BY f.as_of DESC LIMIT ?", [*args, ctx.limit]
    ).fetchall()
    return [(result_key("fact", r[0]), float(r[1])) for r in rows]
