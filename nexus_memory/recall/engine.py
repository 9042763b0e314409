"""The recall engine: hybrid retrieval over facts, observations, mental models and entities.

Seed 000's recall API. Strategies (which run depends on the budget):

- semantic: cosine KNN through `VectorSearch` (one list across all types in scope, by similarity);
- keyword:  FTS5 BM25 over facts (terms chosen by `keyword.py`), LIKE over observation / mental
            model text (those tables have no FTS index; they are small next to facts);
- entity:   entities named in the query or given as `entity`, then their latest facts through the
            (entity_id, as_of DESC) index, ranked by how many query entities a fact links, then recency
            (a named entity linked to over BUSY_ENTITY_SHARE of recent facts tells nothing apart: skipped);
            for scope 'entities', the matching entities themselves;
- causal:   (budget high) one hop along causal_links from the top fused facts.

Every filter is a WHERE clause inside each strategy, before its LIMIT. The semantic index filters
platform / time / thread itself; the rest (entity, session, exclude_session, superseded facts) is
handled by scoring the few matching facts exactly when the filter is selective (<= 5,000 facts)
and otherwise by over-fetching 4x from the index and filtering in SQL (which can return fewer than
the limit when the filter is both loose and far from the query).

A busy entity named in the query (see query_entities.BUSY_ENTITY_SHARE) also tells little apart for
the semantic strategy: the query is embedded with and without its name and the two vectors averaged.

A date in the query ("in May 2023") boosts facts rather than filters them: semantic and keyword search
run once inside its window and once over all time, so facts in the window score in both lists and a fact
just outside a guessed window ("last week" that was nine days ago) can still come back. Explicit
time_after / time_before are hard filters.

Lists are fused by weighted RRF (k=20, semantic lists weighted 2; see fusion.RRF_K).
Observations and mental models that clearly match (cosine >=
HIGHER_LAYER_MIN_SIM, or most query terms when there is no vector) go first, mental models before
observations (seed 000's hierarchical retrieval); the rest is diversified by MMR (lambda 0.7).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from nexus_memory import db, identity
from nexus_memory.recall import keyword
from nexus_memory.recall.fusion import MMR_LAMBDA, mmr, rrf_fuse
from nexus_memory.recall.query_entities import (
    MAX_QUERY_ENTITIES,
    busy_entities,
    match_query_entities,
    terms_besides_names,
    without_names,
)
from nexus_memory.recall.results import RecallResult, load_results, pack, touch_results
from nexus_memory.recall.timeparse import parse_time_window
from nexus_memory.stores import Stores

if TYPE_CHECKING:
    from nexus_memory.embeddings import Embedder
    from nexus_memory.vector_index import VectorSearch

log = logging.getLogger(__name__)

SCOPES = ("facts", "observations", "mental_models", "entities")
DEFAULT_SCOPE = ("facts", "observations", "mental_models")
_TYPE_OF_SCOPE = {"facts": "fact", "observations": "observation", "mental_models": "mental_model", "entities": "entity"}
TOOL_PLATFORM = "memory_tool"  # platform of facts written through the agent tools (remember/correct)
OBSERVATION_TYPE = "observation_v1"

HIGHER_LAYER_MIN_SIM = 0.35  # MiniLM: unrelated sentences sit around 0.0-0.2, paraphrases above 0.5
# The semantic list counts double in RRF: a mid recall fuses one semantic list against keyword and
# entity lists, and without this the lexical side outvotes the model 2:1 (LoCoMo dev: see RRF_K).
STRATEGY_WEIGHTS = {"semantic": 2.0}
KEYWORD_WINDOW = 1_000  # BM25 scores at most the newest this-many matching facts (see _fts_facts)
EXACT_SCAN_MAX = 5_000  # a filter matching at most this many facts is scored exactly, not via the index
SEMANTIC_OVERFETCH = 4  # index over-fetch when filters remain that the index cannot apply
CAUSAL_SEEDS = 10  # top fused facts whose causal neighbours the high budget adds
EMBED_CHARS = 2_000  # the model reads ~256 tokens anyway


@dataclass(frozen=True)
class Budget:
    """Which strategies run and how many candidates each may contribute."""

    strategies: tuple[str, ...]
    limit: int


BUDGETS = {
    "low": Budget(("semantic",), 50),
    "mid": Budget(("semantic", "keyword", "entity"), 100),
    "high": Budget(("semantic", "keyword", "entity", "causal"), 200),
}


@dataclass
class RecallResponse:
    """The results of one recall, the time window actually used, and where the time went."""

    results: list[RecallResult]
    query: str
    budget: str
    time_after: int | None
    time_before: int | None
    timings_ms: dict[str, float]


@dataclass(frozen=True)
class Filters:
    """Restrictions applied inside every strategy. Time bounds are inclusive (as VectorSearch's)."""

    time_after: int | None = None
    time_before: int | None = None
    platform: str | None = None
    thread_id: str | None = None
    session_id: str | None = None
    exclude_session_id: str | None = None
    entity_ids: tuple[str, ...] | None = None  # None: no entity filter; (): unknown entity, no result
    tags: tuple[str, ...] | None = None  # ACL scope of mental models: None = all; else untagged or sharing one

    @property
    def by_session(self) -> bool:
        return self.session_id is not None

    def fact_sql(self, alias: str = "f") -> tuple[str, list[Any]]:
        """WHERE clause (never empty) and arguments restricting facts aliased `alias`."""
        a = alias
        clauses, args = self._time_place_sql(f"{a}.as_of", f"{a}.platform", f"{a}.thread_id")
        if self.session_id is not None:
            clauses.append(f"{a}.session_id = ?")
            args.append(self.session_id)
        if self.exclude_session_id is not None:
            clauses.append(f"({a}.session_id IS NULL OR {a}.session_id != ?)")
            args.append(self.exclude_session_id)
        if self.entity_ids is not None:
            marks = db.placeholders(self.entity_ids) or "NULL"
            clauses.append(f"{a}.id IN (SELECT fact_id FROM fact_entities WHERE entity_id IN ({marks}))")
            args.extend(self.entity_ids)
        # Facts are immutable: a correction is a new fact whose metadata names the one it replaces.
        # Tool-written facts are few and indexed by platform, so this subquery stays cheap.
        clauses.append(
            f"{a}.id NOT IN (SELECT json_extract(metadata, '$.supersedes') FROM facts "
            "WHERE platform = ? AND json_valid(metadata) AND json_extract(metadata, '$.supersedes') IS NOT NULL)"
        )
        args.append(TOOL_PLATFORM)
        return " AND ".join(clauses), args

    def observation_sql(self) -> tuple[str, list[Any]] | None:
        """WHERE clause for analysis_runs `r` LEFT JOIN episodes `ep`; None when none can match."""
        if self.session_id is not None:
            return None  # observations span sessions; a session-only recall is about that session's facts
        clauses, args = self._time_place_sql("COALESCE(ep.end_time, r.created_at)", "ep.platform", "ep.thread_id")
        clauses += [
            "r.analysis_type_id = ?",
            "r.output_text IS NOT NULL",
            "r.output_text != ''",
            # Observations are versioned by parent_id: only the newest version answers.
            "NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = r.id)",
        ]
        args.append(OBSERVATION_TYPE)
        if self.entity_ids is not None:
            marks = db.placeholders(self.entity_ids) or "NULL"
            clauses.append(f"""r.id IN (SELECT o.analysis_run_id FROM observation_facts o
                               JOIN fact_entities fe ON fe.fact_id = o.fact_id WHERE fe.entity_id IN ({marks}))""")
            args.extend(self.entity_ids)
        return " AND ".join(clauses), args

    def mental_model_sql(self) -> tuple[str, list[Any]] | None:
        """WHERE clause for mental_models `m`; None when none can match (they have no place)."""
        if self.platform is not None or self.thread_id is not None or self.session_id is not None:
            return None
        clauses, args = self._time_place_sql("m.updated_at", None, None)
        clauses.append("NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)")
        if self.tags is not None:
            # A tagged model is visible only to a caller holding one of its tags; untagged ones to all.
            clauses.append(
                "(m.tags IS NULL OR NOT json_valid(m.tags) OR json_array_length(m.tags) = 0 OR EXISTS ("
                f"SELECT 1 FROM json_each(m.tags) t WHERE t.value IN ({db.placeholders(self.tags) or 'NULL'})))"
            )
            args.extend(self.tags)
        if self.entity_ids is not None:
            marks = db.placeholders(self.entity_ids) or "NULL"
            clauses.append(f"m.entity_id IN ({marks})")
            args.extend(self.entity_ids)
        return " AND ".join(clauses), args

    def entity_sql(self) -> tuple[str, list[Any]]:
        """WHERE clause for entities `n`: live ones, restricted to the entity filter if any."""
        clauses, args = ["n.merged_into IS NULL"], []
        if self.entity_ids is not None:
            clauses.append(f"n.id IN ({db.placeholders(self.entity_ids) or 'NULL'})")
            args.extend(self.entity_ids)
        return " AND ".join(clauses), args

    def _time_place_sql(self, as_of: str, platform: str | None, thread: str | None) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        for clause, value in (
            (f"{as_of} >= ?", self.time_after),
            (f"{as_of} <= ?", self.time_before),
            (f"{platform} = ?", self.platform if platform else None),
            (f"{thread} = ?", self.thread_id if thread else None),
        ):
            if value is not None:
                clauses.append(clause)
                args.append(value)
        if (platform is None and self.platform is not None) or (thread is None and self.thread_id is not None):
            clauses.append("0")
        return clauses, args


# A ranked list: (key, raw strategy score), best first. Keys are "<type>:<id>".
Ranked = list[tuple[str, float]]


def _key(target_type: str, target_id: str) -> str:
    return f"{target_type}:{target_id}"


def _split_key(key: str) -> tuple[str, str]:
    target_type, _, target_id = key.partition(":")
    return target_type, target_id


@dataclass
class _Context:
    """Everything one recall needs, passed to each strategy."""

    stores: Stores
    text: str  # the query with date expressions removed, sanitised
    types: tuple[str, ...]  # target types in scope
    filters: Filters
    limit: int
    vector_search: VectorSearch | None = None
    query_vector: np.ndarray | None = None
    # Filters without the window parsed from the query, when that window is a boost (module docstring).
    any_time: Filters | None = None
    # Set by _run_strategies before any strategy needs them:
    named: list[str] = field(default_factory=list)  # entities the query text names (match_query_entities)
    busy: set[str] = field(default_factory=set)  # those of them that are busy (busy_entities)

    @property
    def conn(self) -> db.Connection:
        return self.stores.conn


def recall(
    stores: Stores,
    query: str,
    *,
    scope: Sequence[str] = DEFAULT_SCOPE,
    entity: str | None = None,
    time_after: int | None = None,
    time_before: int | None = None,
    platform: str | None = None,
    thread_id: str | None = None,
    session_id: str | None = None,
    exclude_session_id: str | None = None,
    max_results: int = 20,
    budget: str = "mid",
    max_tokens: int | None = None,
    reference_time: int | None = None,
    embedder: Embedder | None = None,
    parse_dates: bool = True,
    touch: bool = True,
    tags: Sequence[str] | None = None,
) -> RecallResponse:
    """Hybrid recall (seed 000): strategies by budget, fused by RRF, diversified by MMR.

    `query` may be any string. With `parse_dates`, an explicit date expression in it ("last week",
    "in May 2023", relative to `reference_time` or now) narrows the time window (intersected with
    time_after / time_before) and is removed from the text that is searched. `entity` (name, alias
    or id) filters every strategy to facts linked to it. `embedder` defaults to the configured model
    when the store has a vector index; without one the semantic strategy is skipped (and the low
    budget falls back to keyword search). `max_tokens` keeps results (≈ len(text) / 4 tokens each)
    in rank order while they fit. `touch` adds 1 to access_count of the returned items. `tags` scopes
    mental models (ACL): only untagged ones and those sharing a tag with `tags` come back.
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    plan = _budget(budget)
    types = _scope_types(scope)
    raw = _sanitize(query)
    text = raw
    entity_ids = _resolve_entity_filter(stores.conn, entity) if entity is not None else None
    hard = Filters(
        time_after,
        time_before,
        platform,
        thread_id,
        session_id,
        exclude_session_id,
        entity_ids,
        tags=None if tags is None else tuple(str(t) for t in tags),
    )
    window = parse_time_window(raw, reference_time) if parse_dates else None
    if window is not None:
        time_after = _tighter(time_after, window[0], max)
        time_before = _tighter(time_before, window[1], min)
        text = window[2]
    filters = replace(hard, time_after=time_after, time_before=time_before)
    ctx = _Context(stores, text, types, filters, plan.limit)
    if window is not None and keyword.extract_terms(text):  # a date-only query is the window itself
        ctx.any_time = hard

    def finish(results: list[RecallResult]) -> RecallResponse:
        timings["total"] = _ms_since(started)
        return RecallResponse(results, query, budget, time_after, time_before, timings)

    if entity_ids == () or max_results <= 0:
        return finish([])
    lists = _run_strategies(ctx, plan, embedder, timings)
    fused, order = _fuse_and_order(ctx, lists, max_results, timings)
    with _timed(timings, "materialize"):
        results = _materialize(ctx, order, fused, lists)
    if max_tokens is not None:
        results = pack(results, max_tokens)
    if touch and results:
        with _timed(timings, "touch"):
            touch_results(stores, results)
    return finish(results)


# --- set-up helpers ------------------------------------------------------------------------------


def _budget(budget: str) -> Budget:
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {sorted(BUDGETS)}, not {budget!r}")
    return BUDGETS[budget]


def _scope_types(scope: Sequence[str]) -> tuple[str, ...]:
    if isinstance(scope, str):
        scope = [scope]
    unknown = [s for s in scope if s not in SCOPES]
    if unknown:
        raise ValueError(f"unknown scope {unknown}; choose from {list(SCOPES)}")
    return tuple(_TYPE_OF_SCOPE[s] for s in SCOPES if s in scope)


def _sanitize(query: str) -> str:
    """Any str -> text SQLite and the tokenizer accept: lone surrogates and NULs replaced."""
    text = str(query or "")
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text.replace("\x00", " ")


def _tighter(current: int | None, parsed: int | None, pick: Callable[[int, int], int]) -> int | None:
    if parsed is None:
        return current
    return parsed if current is None else pick(current, parsed)


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


@contextlib.contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = round(timings.get(name, 0.0) + (time.perf_counter() - started) * 1000, 3)


def resolve_entity(conn: db.Connection, value: str) -> list[str]:
    """Live entity ids for an id, name or alias (merged entities resolve to their winner)."""
    value = _sanitize(value).strip()
    if not value:
        return []
    row = conn.execute("SELECT id FROM entities WHERE id = ?", (value,)).fetchone()
    if row:
        return [identity.canonical_id(conn, row[0])]
    return [e.id for e in identity.find_entities(conn, value)]


def _resolve_entity_filter(conn: db.Connection, value: str) -> tuple[str, ...]:
    return tuple(resolve_entity(conn, value))


# --- strategies ----------------------------------------------------------------------------------


def _run_strategies(
    ctx: _Context, plan: Budget, embedder: Embedder | None, timings: dict[str, float]
) -> dict[str, list[Ranked]]:
    """Run the budget's strategies; returns strategy name -> its ranked lists."""
    lists: dict[str, list[Ranked]] = {name: [] for name in ("semantic", "keyword", "entity", "causal", "recency")}
    strategies = set(plan.strategies)
    model = None
    if "semantic" in strategies:
        with _timed(timings, "embed"):
            model = _semantic_model(ctx, embedder)
    if model is not None or "entity" in strategies:
        with _timed(timings, "query_entities"):
            ctx.named = match_query_entities(ctx.conn, ctx.text)
            ctx.busy = busy_entities(ctx.conn, ctx.named) if ctx.named else set()
    if model is not None:
        with _timed(timings, "embed"):
            _embed_query(ctx, model)
    elif strategies == {"semantic"}:
        strategies.add("keyword")  # low budget without vectors: keyword is the cheap stand-in
    if "semantic" in strategies and ctx.query_vector is not None:
        with _timed(timings, "semantic"):
            lists["semantic"].append(semantic_search(ctx))
    if "keyword" in strategies:
        with _timed(timings, "keyword"):
            lists["keyword"] += keyword_search(ctx)
    if ctx.any_time is not None and "fact" in ctx.types:
        with _timed(timings, "any_time"):
            # Facts only: higher layers that match go first, so one outside the window would lead.
            wide = replace(ctx, types=("fact",), filters=ctx.any_time, any_time=None)
            if lists["semantic"]:
                lists["semantic"].append(semantic_search(wide))
            if "keyword" in strategies:
                lists["keyword"] += keyword_search(wide)
    if "entity" in strategies:
        with _timed(timings, "entity"):
            lists["entity"] += entity_search(ctx)
    if "causal" in strategies and "fact" in ctx.types:
        with _timed(timings, "causal"):
            seeds = [_split_key(k)[1] for k, _ in _fuse(lists) if k.startswith("fact:")]
            lists["causal"].append(causal_search(ctx, seeds[:CAUSAL_SEEDS]))
    if not any(any(ranked) for ranked in lists.values()) and _has_restriction(ctx.filters) and "fact" in ctx.types:
        with _timed(timings, "recency"):
            lists["recency"].append(recency_search(ctx))
    return lists


def _has_restriction(filters: Filters) -> bool:
    return any(
        v is not None
        for v in (
            filters.time_after,
            filters.time_before,
            filters.platform,
            filters.thread_id,
            filters.session_id,
            filters.entity_ids,
        )
    )


def _fuse(lists: dict[str, list[Ranked]]) -> list[tuple[str, float]]:
    """Weighted RRF over every non-empty list, each weighted by its strategy."""
    named = [(name, ranked) for name, group in lists.items() for ranked in group if ranked]
    return rrf_fuse(
        [[key for key, _ in ranked] for _, ranked in named],
        weights=[STRATEGY_WEIGHTS.get(name, 1.0) for name, _ in named],
    )


def _semantic_model(ctx: _Context, embedder: Embedder | None) -> Embedder | None:
    """The query model, with ctx.vector_search set; None (semantic skipped) when vectors are unavailable."""
    if not keyword.tokenize(ctx.text):
        return None  # nothing but punctuation/emoji: an embedding of it would match noise
    if embedder is None:
        embedder = default_embedder(ctx.stores)
        if embedder is None:
            return None
    from nexus_memory.vector_index import VectorSearch

    ctx.vector_search = VectorSearch(ctx.stores, embedder.model_name, embedder.dimension)
    return embedder


def _embed_query(ctx: _Context, embedder: Embedder) -> None:
    """Set ctx.query_vector (needs ctx.busy)."""
    # A busy entity's name (the user, a conversation partner) is in most facts, and in a short query it
    # pulls the embedding toward every fact that repeats it. Averaging with the query embedded without
    # it keeps who the question is about while what it asks decides the ranking (module docstring).
    generic = without_names(ctx.conn, ctx.text, sorted(ctx.busy)) if ctx.busy else None
    texts = [ctx.text[:EMBED_CHARS]] + ([generic[:EMBED_CHARS]] if generic is not None else [])
    vector = np.asarray(embedder.encode_queries(texts), dtype=np.float32).sum(axis=0)
    ctx.query_vector = vector / max(float(np.linalg.norm(vector)), 1e-12)


_UNLOADABLE: set[str] = set()  # models that failed to load in this process: don't retry every query


def default_embedder(stores: Stores) -> Embedder | None:
    """The model the store's vector index was built with, or None (nothing loaded) when there is none.

    The index's model, not the configured one: query vectors must live in the indexed space. A
    model that cannot be loaded here disables the semantic strategy (logged once per process).
    """
    try:
        from nexus_memory.embeddings import get_embedder
        from nexus_memory.vector_index import index_state
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


def semantic_search(ctx: _Context) -> Ranked:
    """One list over every type in scope, by cosine similarity (comparable across types)."""
    assert ctx.vector_search is not None and ctx.query_vector is not None
    found: Ranked = []
    for target_type in ctx.types:
        # Cosine <= 0 means unrelated; such "nearest" rows would only add noise to the fusion.
        found += [hit for hit in _semantic_for_type(ctx, target_type) if hit[1] > 0.0]
    found.sort(key=lambda item: -item[1])
    return found[: ctx.limit]


def _semantic_for_type(ctx: _Context, target_type: str) -> Ranked:
    vs, q, f, limit = ctx.vector_search, ctx.query_vector, ctx.filters, ctx.limit
    assert vs is not None and q is not None
    if target_type == "fact":
        exact_ids = _selective_fact_ids(ctx)
        if exact_ids is not None:
            return _exact_scores(vs, q, "fact", exact_ids, limit)
        where, args = f.fact_sql("f")
        hits = vs.search(
            q,
            limit * SEMANTIC_OVERFETCH if _needs_post_filter(f) else limit + 16,
            target_type="fact",
            platform=f.platform,
            time_after=f.time_after,
            time_before=f.time_before,
            thread_id=f.thread_id,
        )
        return _post_filter(ctx.conn, "fact", hits, "FROM facts f", "f.id", where, args, limit)
    if target_type == "observation":
        clause = f.observation_sql()
        if clause is None:
            return []
        hits = vs.search(
            q,
            limit * SEMANTIC_OVERFETCH,
            target_type="observation",
            platform=f.platform,
            time_after=f.time_after,
            time_before=f.time_before,
            thread_id=f.thread_id,
        )
        return _post_filter(
            ctx.conn,
            "observation",
            hits,
            "FROM analysis_runs r LEFT JOIN episodes ep ON ep.id = r.episode_id",
            "r.id",
            *clause,
            limit,
        )
    if target_type == "mental_model":
        clause = f.mental_model_sql()
        if clause is None:
            return []
        hits = vs.search(
            q,
            limit * SEMANTIC_OVERFETCH,
            target_type="mental_model",
            time_after=f.time_after,
            time_before=f.time_before,
        )
        return _post_filter(ctx.conn, "mental_model", hits, "FROM mental_models m", "m.id", *clause, limit)
    where, args = f.entity_sql()
    hits = vs.search(q, limit * SEMANTIC_OVERFETCH, target_type="entity")
    return _post_filter(ctx.conn, "entity", hits, "FROM entities n", "n.id", where, args, limit)


def _needs_post_filter(f: Filters) -> bool:
    return f.entity_ids is not None or f.session_id is not None or f.exclude_session_id is not None


def _selective_fact_ids(ctx: _Context) -> list[str] | None:
    """Ids of all facts passing a selective filter (entity / session), or None if not selective."""
    f = ctx.filters
    if f.entity_ids is None and f.session_id is None:
        return None
    where, args = f.fact_sql("f")
    rows = ctx.conn.execute(f"SELECT f.id FROM facts f WHERE {where} LIMIT ?", [*args, EXACT_SCAN_MAX + 1])
    ids = [r[0] for r in rows]
    return ids if len(ids) <= EXACT_SCAN_MAX else None


def _exact_scores(vs: VectorSearch, query: np.ndarray, target_type: str, ids: Sequence[str], limit: int) -> Ranked:
    """Cosine of the query with each id's stored vector: filter-before-top-k by construction."""
    vectors = vs.vectors(target_type, ids)
    if not vectors:
        return []
    found = list(vectors)
    scores = np.stack([vectors[i] for i in found]) @ query
    order = np.argsort(-scores, kind="stable")[:limit]
    return [(_key(target_type, found[i]), float(scores[i])) for i in order]


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
    """Keep the hits whose row in `source` passes `where`, in hit order, up to `limit`."""
    if not hits:
        return []
    keep: set[str] = set()
    for part in db.chunked([h[0] for h in hits]):
        sql = f"SELECT {id_column} {source} WHERE {id_column} IN ({db.placeholders(part)}) AND {where}"
        keep.update(r[0] for r in conn.execute(sql, [*part, *args]))
    return [(_key(target_type, i), s) for i, s in hits if i in keep][:limit]


def keyword_search(ctx: _Context) -> list[Ranked]:
    """FTS5 BM25 over facts; LIKE over observations and mental models (no FTS table for them)."""
    lists: list[Ranked] = []
    if "fact" in ctx.types:
        lists.append(_fts_facts(ctx))
    higher = [t for t in ctx.types if t in ("observation", "mental_model")]
    if higher:
        lists.append(_like_higher_layers(ctx, higher))
    return lists


def _fts_facts(ctx: _Context) -> Ranked:
    match = keyword.fts_query(ctx.conn, "facts_fts", ctx.text)
    if match is None:
        return []
    where, args = ctx.filters.fact_sql("f")
    # ORDER BY bm25 scores every matching row: at 1M facts a common term matches 50k+ rows (~150 ms).
    # Walking matches newest-first is cheap, so BM25 ranks only the newest KEYWORD_WINDOW of them; rare
    # terms (the ones keyword search exists for) match fewer rows than that and are ranked in full.
    bound_sql = f"""SELECT facts_fts.rowid FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid
                    WHERE facts_fts MATCH ? AND {where} ORDER BY facts_fts.rowid DESC LIMIT 1 OFFSET ?"""
    bound = ctx.conn.execute(bound_sql, [match, *args, KEYWORD_WINDOW - 1]).fetchone()
    sql = f"""SELECT f.id, bm25(facts_fts) AS rank FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid
              WHERE facts_fts MATCH ? AND facts_fts.rowid >= ? AND {where} ORDER BY rank LIMIT ?"""
    rows = ctx.conn.execute(sql, [match, bound[0] if bound else 0, *args, ctx.limit]).fetchall()
    return [(_key("fact", r[0]), float(r[1])) for r in rows]


def _like_higher_layers(ctx: _Context, types: Sequence[str]) -> Ranked:
    """Rows containing query terms (case-insensitive), ranked by how many distinct terms they hold."""
    terms = keyword.like_terms(ctx.text)
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
        found += [(_key(target_type, r[0]), float(r[1]) / len(terms)) for r in rows]
    found.sort(key=lambda item: -item[1])
    return found[: ctx.limit]


def entity_search(ctx: _Context) -> list[Ranked]:
    """Facts of the query's entities (and the `entity` filter's), plus matching entity results."""
    conn, f = ctx.conn, ctx.filters
    named = ctx.named
    query_entities = list(dict.fromkeys([*(f.entity_ids or ()), *named]))[:MAX_QUERY_ENTITIES]
    lists: list[Ranked] = []
    if "fact" in ctx.types and query_entities:
        lists.append(_entity_facts(ctx, query_entities))
    if "entity" in ctx.types:
        where, args = f.entity_sql()
        marks = db.placeholders(named) or "NULL"
        rows = conn.execute(
            f"SELECT n.id FROM entities n WHERE n.id IN ({marks}) AND {where}", [*named, *args]
        ).fetchall()
        live = {r[0] for r in rows}
        lists.append([(_key("entity", e), 1.0) for e in named if e in live])
    return lists


# Facts read per query entity before ranking; bounded so a very busy entity stays cheap.
ENTITY_SCAN_LIMIT = 500


def _entity_facts(ctx: _Context, entity_ids: Sequence[str]) -> Ranked:
    """Latest facts per entity via (entity_id, as_of DESC); rank by entities linked, then recency."""
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
    stems = {t[:5] for t in keyword.extract_terms(ctx.text)}
    # Busy entities count only when the query is about nothing but its entities ("Tyler?"), or when
    # the caller asked for them with the `entity` filter.
    busy = (
        ctx.busy - set(ctx.filters.entity_ids or ()) if terms_besides_names(ctx.conn, ctx.text, entity_ids) else set()
    )
    for entity_id in (e for e in entity_ids if e not in busy):
        rows = ctx.conn.execute(
            f"""SELECT fe.fact_id, fe.as_of, f.text FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
                WHERE fe.entity_id = ?{time_sql} AND {where} ORDER BY fe.as_of DESC LIMIT ?""",
            [entity_id, *time_args, *args, ENTITY_SCAN_LIMIT],
        ).fetchall()
        for fact_id, fact_as_of, text in rows:
            links[fact_id] = links.get(fact_id, 0) + 1
            as_of[fact_id] = fact_as_of
            overlap.setdefault(fact_id, len(stems & {t[:5] for t in keyword.tokenize(text)}))
    ranked = sorted(links, key=lambda i: (-links[i], -overlap[i], -as_of[i], i))[: ctx.limit]
    return [(_key("fact", i), float(links[i])) for i in ranked]


def causal_search(ctx: _Context, seed_ids: Sequence[str]) -> Ranked:
    """Facts one causal hop from the seeds (either direction), by strength x the seed's standing."""
    if not seed_ids:
        return []
    weight = {fact_id: 1.0 / (position + 1) for position, fact_id in enumerate(seed_ids)}
    where, args = ctx.filters.fact_sql("f")
    marks = db.placeholders(seed_ids)
    rows = ctx.conn.execute(
        f"""SELECT c.to_fact_id, c.strength, c.from_fact_id FROM causal_links c
                JOIN facts f ON f.id = c.to_fact_id WHERE c.from_fact_id IN ({marks}) AND {where}
            UNION ALL
            SELECT c.from_fact_id, c.strength, c.to_fact_id FROM causal_links c
                JOIN facts f ON f.id = c.from_fact_id WHERE c.to_fact_id IN ({marks}) AND {where}""",
        [*seed_ids, *args, *seed_ids, *args],
    ).fetchall()
    best: dict[str, float] = {}
    for fact_id, strength, seed in rows:
        score = float(strength) * weight[seed]
        best[fact_id] = max(best.get(fact_id, 0.0), score)
    ranked = sorted(best, key=lambda i: (-best[i], i))[: ctx.limit]
    return [(_key("fact", i), best[i]) for i in ranked]


def recency_search(ctx: _Context) -> Ranked:
    """Latest facts passing the filters: the answer to a query that is only a date or an entity."""
    where, args = ctx.filters.fact_sql("f")
    rows = ctx.conn.execute(
        f"SELECT f.id, f.as_of FROM facts f WHERE {where} ORDER BY f.as_of DESC LIMIT ?", [*args, ctx.limit]
    ).fetchall()
    return [(_key("fact", r[0]), float(r[1])) for r in rows]


# --- fusion and ordering -------------------------------------------------------------------------


def _fuse_and_order(
    ctx: _Context, lists: dict[str, list[Ranked]], max_results: int, timings: dict[str, float]
) -> tuple[dict[str, float], list[str]]:
    """RRF over every list, qualifying higher-layer items first, MMR over the rest."""
    with _timed(timings, "fusion"):
        fused = dict(_fuse(lists))
        ordered = list(fused)
        front = _qualifying_higher_layer(ctx, lists, ordered)[: max(1, max_results // 2)]
    with _timed(timings, "mmr"):
        rest = [(k, fused[k]) for k in ordered if k not in front][: max(3 * max_results, 50)]
        vectors = _vectors_for(ctx, [*front, *(k for k, _ in rest)])
        picked = mmr(rest, vectors, max_results - len(front), lambda_param=MMR_LAMBDA, preselected=front)
    return fused, [*front, *picked]


def _qualifying_higher_layer(ctx: _Context, lists: dict[str, list[Ranked]], ordered: list[str]) -> list[str]:
    """Mental models, then observations, that clearly match: they answer before raw facts."""
    similarity = {k: s for ranked in lists["semantic"] for k, s in ranked}
    term_share = {k: s for ranked in lists["keyword"] for k, s in ranked if not k.startswith("fact:")}
    good: list[str] = []
    for target_type in ("mental_model", "observation"):
        for key in ordered:
            if not key.startswith(target_type + ":"):
                continue
            sim = similarity.get(key)
            if (sim is not None and sim >= HIGHER_LAYER_MIN_SIM) or (
                ctx.query_vector is None and term_share.get(key, 0.0) >= 0.5
            ):
                good.append(key)
    return good


def _vectors_for(ctx: _Context, keys: Iterable[str]) -> dict[str, np.ndarray]:
    if ctx.vector_search is None:
        return {}
    by_type: dict[str, list[str]] = {}
    for key in keys:
        target_type, target_id = _split_key(key)
        by_type.setdefault(target_type, []).append(target_id)
    vectors: dict[str, np.ndarray] = {}
    for target_type, ids in by_type.items():
        for target_id, vector in ctx.vector_search.vectors(target_type, ids).items():
            vectors[_key(target_type, target_id)] = vector
    return vectors


# --- results -------------------------------------------------------------------------------------


def _materialize(
    ctx: _Context, order: list[str], fused: dict[str, float], lists: dict[str, list[Ranked]]
) -> list[RecallResult]:
    """Build RecallResults (text, provenance, ranks) with one batched query per table."""
    ranks, raw_scores = _ranks(lists)
    by_type: dict[str, list[str]] = {}
    for key in order:
        target_type, target_id = _split_key(key)
        by_type.setdefault(target_type, []).append(target_id)
    loaded: dict[str, RecallResult] = {}
    for target_type, ids in by_type.items():
        for result in load_results(ctx.conn, target_type, ids):
            key = _key(result.type, result.id)
            result.score = fused.get(key, 0.0)
            result.ranks = ranks.get(key, {})
            result.metadata["scores"] = raw_scores.get(key, {})
            loaded[key] = result
    return [loaded[k] for k in order if k in loaded]


def _ranks(lists: dict[str, list[Ranked]]) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    ranks: dict[str, dict[str, int]] = {}
    scores: dict[str, dict[str, float]] = {}
    for strategy, group in lists.items():
        for ranked in group:
            for rank, (key, score) in enumerate(ranked, start=1):
                if strategy not in ranks.setdefault(key, {}):
                    ranks[key][strategy] = rank
                    scores.setdefault(key, {})[strategy] = round(score, 6)
    return ranks, scores
