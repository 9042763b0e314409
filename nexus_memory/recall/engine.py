"""The recall engine: hybrid retrieval over facts, observations, mental models and entities.

One `recall` call: read the query (prompt.py: its window, terms and named entities, unless the caller
hands in a Prompt read already), resolve the filters (filters.py), run the budget's strategies
(strategies.py), fuse their lists and put clear higher-layer matches first (fusion.py), then load the
results with their provenance (results.py). See docs/recall.md for the design and the measured choices.

A date in the query ("in May 2023") boosts facts rather than filters them: semantic and keyword search
run once inside its window and once over all time, so facts in the window score in both lists and a fact
just outside a guessed window ("last week" that was nine days ago) can still come back. Explicit
time_after / time_before are hard filters.

Lists are fused by weighted RRF (k=20, semantic lists weighted 2; see fusion.RRF_K). Observations and
mental models that clearly match (cosine >= fusion.HIGHER_LAYER_MIN_SIM, or most query terms when there is no
vector) go first, mental models before observations (the higher layers answer before raw facts); the
rest is diversified by MMR (lambda 0.7). A why-question ("why", "what caused", "what's the reason", "how
come") puts the linked causes of its best-matching facts first (`causal_links`, the writer's cause -> effect
pairs): what it asks for is the reason, which rarely shares the question's words.

Each result's `score` is the one that decided its place, so scores never rise down the list: one tier per
rule above (FRESH_TIER for what was said moments ago, WHY_TIER for a why-question's causes, HIGHER_TIER for
a clear higher-layer match, plus that item's own standing below 1), else the value MMR picked it at. The
fused RRF score is kept in `metadata["scores"]["rrf"]`.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.recall.answer_type import add_answer_type_list
from nexus_memory.recall.arguments import check_recall_arguments
from nexus_memory.recall.filters import TOOL_PLATFORM, Filters
from nexus_memory.recall.fresh import fresh_events, fresh_slots
from nexus_memory.recall.fusion import (
    MMR_LAMBDA,
    Ranked,
    clear_higher_layer_matches,
    fuse_strategies,
    mmr_scored,
    split_key,
    vectors_for,
)
from nexus_memory.recall.prompt import Prompt, read_prompt, sanitize
from nexus_memory.recall.results import RecallResult, materialize, pack, touch_results
from nexus_memory.recall.strategies import (
    FactLists,
    QueryContext,
    causal_search,
    entity_search,
    keyword_search,
    recency_search,
    semantic_model,
    semantic_search,
    start_fact_lists,
    start_query_embedding,
)
from nexus_memory.recall.units import add_speaker_list

if TYPE_CHECKING:
    from nexus_memory.embeddings.model import Embedder

# TOOL_PLATFORM is read from here by the agent tools.
__all__ = ["BUDGETS", "SCOPES", "TOOL_PLATFORM", "Budget", "RecallResponse", "recall", "resolve_entity"]

SCOPES = ("facts", "observations", "mental_models", "entities", "events")
DEFAULT_SCOPE = ("facts", "observations", "mental_models", "events")
_TYPE_OF_SCOPE = {
    "facts": "fact",
    "observations": "observation",
    "mental_models": "mental_model",
    "entities": "entity",
    "events": "event",  # recent events the writer has not processed yet (recall/fresh.py)
}
CAUSAL_SEEDS = 10  # top fused facts whose causal neighbours the high budget adds
WHY_SEEDS = 3  # a why-question's best fused facts whose causes come first
WHY_CAUSES = 2  # causes put first, at most
# Score tiers (see module docstring): a tier's items come before the next one's; MMR values are below 1.
FRESH_TIER, WHY_TIER, HIGHER_TIER = 3.0, 2.0, 1.0
WHY_QUESTION = re.compile(
    r"^\W*(?:why\b|how\s+come\b|what\s+(?:caused|causes|led\s+to)\b|"
    r"what(?:'s|\u2019s|\s+is|\s+was|\s+were|\s+are)\s+(?:the\s+)?(?:main\s+|real\s+)?reasons?\b)",
    re.IGNORECASE,
)


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


def recall(
    stores: Stores,
    query: str | Prompt,
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
    """Hybrid recall: strategies by budget, fused by RRF, diversified by MMR.

    `query` may be any string, or a Prompt read already (`prompt.read_prompt`, against this store; its
    dates were read then, so `parse_dates` and `reference_time` do not apply to it). With `parse_dates`,
    an explicit date expression in it ("last week", "in May 2023", relative to `reference_time` or now)
    narrows the time window (intersected with time_after / time_before) and is removed from the text
    that is searched. `entity` (name, alias or id) filters every strategy to facts linked to it.
    `embedder` defaults to the configured model when the store has a vector index; without one the
    semantic strategy is skipped (and the low budget falls back to keyword search). `max_tokens` keeps
    results (≈ len(text) / 4 tokens each) in rank order while they fit. `touch` adds 1 to access_count
    of the returned items. `tags` scopes mental models (ACL): only untagged ones and those sharing a
    tag with `tags` come back.

    Raises RecallArgumentError (a ValueError) for an argument that cannot be used: a string that is
    not valid Unicode or too long, a time or count that is not an integer in range, an unknown budget.
    """
    time_after, time_before, reference_time, platform = check_recall_arguments(
        scope=scope,
        budget=budget,
        max_results=max_results,
        max_tokens=max_tokens,
        time_after=time_after,
        time_before=time_before,
        reference_time=reference_time,
        platform=platform,
        thread_id=thread_id,
        session_id=session_id,
        exclude_session_id=exclude_session_id,
    )
    started = time.perf_counter()
    timings: dict[str, float] = {}
    plan = _budget(budget)
    types = _scope_types(scope)
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
    with _timed(timings, "read_prompt"):
        prompt = read_prompt(stores.conn, query, parse_dates=parse_dates, reference_time=reference_time)
    if prompt.window is not None:
        time_after = _tighter(time_after, prompt.window[0], max)
        time_before = _tighter(time_before, prompt.window[1], min)
    # A date in the question asks about a time: facts match it by the time they are about (filters.py).
    filters = replace(hard, about_after=prompt.window[0], about_before=prompt.window[1]) if prompt.window else hard
    ctx = QueryContext(stores, prompt, tuple(t for t in types if t != "event"), filters, plan.limit)
    if prompt.window is not None and prompt.terms:  # a date-only query is the window itself
        ctx.any_time = hard

    def finish(results: list[RecallResult]) -> RecallResponse:
        timings["total"] = _ms_since(started)
        return RecallResponse(results, prompt.given, budget, time_after, time_before, timings)

    if entity_ids == () or max_results <= 0:
        return finish([])
    # The query model runs first, beside the SQL below when it can (strategies.start_query_embedding).
    embedded = _start_embedding(ctx, plan, embedder, timings) if ctx.types else None
    # The facts' BM25 and entity list too, in a thread on a reading handle of its own (strategies.start_fact_lists).
    beside = start_fact_lists(ctx, plan.strategies) if len(plan.strategies) > 1 else FactLists()
    fresh: list[RecallResult] = []
    if "event" in types:  # first: an event the writer finishes meanwhile is still found, as itself or its facts
        with _timed(timings, "fresh"):
            fresh = fresh_events(stores.conn, prompt, hard, fresh_slots(max_results))
        for event in fresh:  # they lead: their tier says so (module docstring)
            event.score += FRESH_TIER
    results: list[RecallResult] = []
    if ctx.types:
        lists = _run_strategies(ctx, plan, embedded, timings, beside)
        fused, order = _fuse_and_order(ctx, lists, max_results, timings)
        with _timed(timings, "materialize"):
            results = materialize(stores.conn, list(order), order, fused, lists)
    results = [*fresh, *results][:max_results]  # what was just said leads while no fact of it exists yet
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
    value = sanitize(value).strip()
    if not value:
        return []
    row = conn.execute("SELECT id FROM entities WHERE id = ?", (value,)).fetchone()
    if row:
        return [identity.canonical_id(conn, row[0])]
    return [e.id for e in identity.find_entities(conn, value)]


def _resolve_entity_filter(conn: db.Connection, value: str) -> tuple[str, ...]:
    return tuple(resolve_entity(conn, value))


# --- running the strategies --------------------------------------------------------------------


def _start_embedding(
    ctx: QueryContext, plan: Budget, embedder: Embedder | None, timings: dict[str, float]
) -> Callable[[], None] | None:
    """Start embedding the query when the budget searches by meaning and the store has vectors; returns
    what waits for the vector (None: no semantic search)."""
    if "semantic" not in plan.strategies:
        return None
    with _timed(timings, "embed"):
        model = semantic_model(ctx, embedder)
        return None if model is None else start_query_embedding(ctx, model, beside=len(plan.strategies) > 1)


def _run_strategies(
    ctx: QueryContext,
    plan: Budget,
    embedded: Callable[[], None] | None,
    timings: dict[str, float],
    beside: FactLists,
) -> dict[str, list[Ranked]]:
    """Run the budget's strategies (`embedded`: waits for the query vector, see _start_embedding; `beside`:
    the fact lists made on a reading handle, see strategies.start_fact_lists); returns strategy name -> its
    ranked lists."""
    names = ("semantic", "keyword", "entity", "speaker", "answer_type", "causal", "recency")
    lists: dict[str, list[Ranked]] = {name: [] for name in names}
    strategies = set(plan.strategies)
    if embedded is None and strategies == {"semantic"}:
        strategies.add("keyword")  # low budget without vectors: keyword is the cheap stand-in
    # A query's date makes each search run twice: in its window, then over all time (`wide`, facts only:
    # higher layers that match go first, so one outside the window would lead).
    wide = None
    if ctx.any_time is not None and "fact" in ctx.types:
        wide = replace(ctx, types=("fact",), filters=ctx.any_time, any_time=None)
    if "keyword" in strategies:
        with _timed(timings, "keyword"):
            lists["keyword"] += keyword_search(ctx, beside.keywords)
        if wide is not None:
            with _timed(timings, "any_time"):
                lists["keyword"] += keyword_search(wide)
    if "entity" in strategies:
        with _timed(timings, "entity"):
            lists["entity"] += entity_search(ctx, beside.entities)
    if embedded is not None:
        with _timed(timings, "embed"):  # what is left of the model's time once the SQL above is done
            embedded()
    if "semantic" in strategies and ctx.query_vector is not None:
        with _timed(timings, "semantic"):
            lists["semantic"].append(semantic_search(ctx))
        if wide is not None:
            with _timed(timings, "any_time"):
                lists["semantic"].append(semantic_search(replace(wide, query_vector=ctx.query_vector)))
    if len(plan.strategies) > 1 and "fact" in ctx.types:
        with _timed(timings, "speaker"):  # what the person the question names said: recall/units.py
            add_speaker_list(ctx.conn, ctx.prompt, lists)
        with _timed(timings, "answer_type"):  # the candidates that carry what it asks for: recall/answer_type.py
            add_answer_type_list(ctx.conn, ctx.prompt, lists)
    if "causal" in strategies and "fact" in ctx.types:
        with _timed(timings, "causal"):
            seeds = [split_key(k)[1] for k, _ in fuse_strategies(lists) if k.startswith("fact:")]
            lists["causal"].append(causal_search(ctx, seeds[:CAUSAL_SEEDS]))
    if not any(any(ranked) for ranked in lists.values()) and ctx.filters.restricts and "fact" in ctx.types:
        with _timed(timings, "recency"):
            lists["recency"].append(recency_search(ctx))
    return lists


# --- fusion and ordering -------------------------------------------------------------------------


def _fuse_and_order(
    ctx: QueryContext, lists: dict[str, list[Ranked]], max_results: int, timings: dict[str, float]
) -> tuple[dict[str, float], dict[str, float]]:
    """RRF over every list; a why-question's causes first, then qualifying higher-layer items, MMR over the
    rest. Returns the fused scores and the order, each key with the score that placed it (module docstring)."""
    with _timed(timings, "fusion"):
        fused = dict(fuse_strategies(lists))
        ordered = list(fused)
        causes = dict(list(_why_causes(ctx, ordered).items())[:max_results])
        front = clear_higher_layer_matches(lists, ordered, have_query_vector=ctx.query_vector is not None)
        room = min(max(1, max_results // 2), max_results - len(causes))
        front = [k for k in front if k not in causes][:room]
        top = max(fused.values(), default=0.0) or 1.0
        order = {k: WHY_TIER + score for k, score in causes.items()} | {k: HIGHER_TIER + fused[k] / top for k in front}
    with _timed(timings, "mmr"):
        rest = [(k, fused[k]) for k in ordered if k not in order][: max(3 * max_results, 50)]
        vectors = vectors_for(ctx.vector_index, [*order, *(k for k, _ in rest)])
        picked = mmr_scored(rest, vectors, max_results - len(order), lambda_param=MMR_LAMBDA, preselected=list(order))
    return fused, order | dict(picked)


def _why_causes(ctx: QueryContext, ordered: list[str]) -> dict[str, float]:
    """For a why-question, the facts linked as causes of its best fused facts, best first, with their causal
    score (link strength x the effect's standing); else nothing."""
    if "fact" not in ctx.types or not WHY_QUESTION.match(ctx.prompt.given):
        return {}
    seeds = [split_key(k)[1] for k in ordered if k.startswith("fact:")][:WHY_SEEDS]
    return dict(causal_search(ctx, seeds, causes_only=True)[:WHY_CAUSES])
