"""What recall returns: RecallResult, loaded in batches per table with its provenance and the ranks
each strategy gave it; token packing; access counts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.core.tokens import estimate_tokens
from nexus_memory.embeddings.vectors import held
from nexus_memory.recall.fusion import Ranked, result_key, split_key
from nexus_memory.recall.query_entities import links_kept

log = logging.getLogger(__name__)


@dataclass
class RecallResult:
    """One recalled item with its provenance."""

    id: str
    type: str  # 'fact' | 'observation' | 'mental_model' | 'entity' | 'event' (recall/fresh.py)
    text: str
    score: float  # the score that placed it: non-increasing down a recall's list (recall/engine.py)
    as_of: int | None
    source_event_ids: list[str]
    entities: list[dict]  # [{id, name, type}]
    ranks: dict[str, int]  # strategy -> 1-based rank in that strategy's list
    platform: str | None
    thread_id: str | None
    session_id: str | None
    is_stale: bool = False
    metadata: dict = field(default_factory=dict)


def materialize(
    conn: db.Connection,
    order: Sequence[str],
    scores: Mapping[str, float],
    fused: Mapping[str, float],
    lists: Mapping[str, Sequence[Ranked]],
) -> list[RecallResult]:
    """RecallResults for `order` (keys, best first) with the score that placed each, and its fused RRF score
    (`metadata["scores"]["rrf"]`), per-strategy ranks and scores; one batched query per table; keys whose row
    is gone are dropped."""
    ranks, raw_scores = _ranks(lists, set(order))
    by_type: dict[str, list[str]] = {}
    for key in order:
        target_type, target_id = split_key(key)
        by_type.setdefault(target_type, []).append(target_id)
    loaded: dict[str, RecallResult] = {}
    for target_type, ids in by_type.items():
        for result in load_results(conn, target_type, ids):
            key = result_key(result.type, result.id)
            result.score = scores.get(key, 0.0)
            result.ranks = ranks.get(key, {})
            result.metadata["scores"] = {**raw_scores.get(key, {}), "rrf": round(fused.get(key, 0.0), 6)}
            loaded[key] = result
    return [loaded[k] for k in order if k in loaded]


def _ranks(
    lists: Mapping[str, Sequence[Ranked]], wanted: set[str]
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """key -> {strategy: 1-based rank} and key -> {strategy: raw score} of the `wanted` keys (those
    returned: the lists hold several times as many), from the first of that strategy's lists that holds
    the key."""
    ranks: dict[str, dict[str, int]] = {}
    scores: dict[str, dict[str, float]] = {}
    for strategy, group in lists.items():
        for ranked in group:
            for rank, (key, score) in enumerate(ranked, start=1):
                if key in wanted and strategy not in ranks.setdefault(key, {}):
                    ranks[key][strategy] = rank
                    scores.setdefault(key, {})[strategy] = round(score, 6)
    return ranks, scores


def load_results(conn: db.Connection, target_type: str, ids: Sequence[str]) -> list[RecallResult]:
    """RecallResults (score 0, no ranks yet) for ids of one type, in no particular order."""
    return _LOADERS[target_type](conn, ids)


def _load_facts(conn: db.Connection, ids: Sequence[str]) -> list[RecallResult]:
    results: list[RecallResult] = []
    for part in db.chunked(ids):
        entities = _entities_of_facts(conn, part)
        rows = conn.execute(
            f"""SELECT id, text, as_of, source_event_id, platform, thread_id, session_id, metadata
                FROM facts WHERE id IN ({db.placeholders(part)})""",
            part,
        ).fetchall()
        for r in rows:
            metadata = {"fact_metadata": _json(r["metadata"])}
            results.append(
                RecallResult(
                    id=r["id"],
                    type="fact",
                    text=r["text"],
                    score=0.0,
                    as_of=r["as_of"],
                    source_event_ids=[r["source_event_id"]] if r["source_event_id"] else [],
                    entities=entities.get(r["id"], []),
                    ranks={},
                    platform=r["platform"],
                    thread_id=r["thread_id"],
                    session_id=r["session_id"],
                    metadata=metadata,
                )
            )
    return results


def _entities_of_facts(conn: db.Connection, fact_ids: Sequence[str]) -> dict[str, list[dict]]:
    rows = conn.execute(
        f"""SELECT fe.fact_id, e.id, e.name, e.type FROM fact_entities fe JOIN entities e ON e.id = fe.entity_id
            WHERE fe.fact_id IN ({db.placeholders(fact_ids)}) ORDER BY fe.fact_id, e.name""",
        list(fact_ids),
    ).fetchall()
    out: dict[str, list[dict]] = {}
    for fact_id, entity_id, name, entity_type in rows:
        out.setdefault(fact_id, []).append({"id": entity_id, "name": name, "type": entity_type})
    return out


def _load_observations(conn: db.Connection, ids: Sequence[str]) -> list[RecallResult]:
    results: list[RecallResult] = []
    for part in db.chunked(ids):
        rows = conn.execute(
            f"""SELECT r.id, r.output_text, r.is_stale, r.episode_id, COALESCE(ep.end_time, r.created_at) AS as_of,
                       ep.platform, ep.thread_id
                FROM analysis_runs r LEFT JOIN episodes ep ON ep.id = r.episode_id
                WHERE r.id IN ({db.placeholders(part)})""",
            part,
        ).fetchall()
        support = conn.execute(
            f"""SELECT o.analysis_run_id, f.id, f.source_event_id FROM observation_facts o
                JOIN facts f ON f.id = o.fact_id WHERE o.analysis_run_id IN ({db.placeholders(part)})
                ORDER BY f.as_of""",
            part,
        ).fetchall()
        facts_of: dict[str, list[str]] = {}
        events_of: dict[str, list[str]] = {}
        for run_id, fact_id, event_id in support:
            facts_of.setdefault(run_id, []).append(fact_id)
            if event_id and event_id not in events_of.setdefault(run_id, []):
                events_of[run_id].append(event_id)
        all_facts = [f for fs in facts_of.values() for f in fs]
        fact_entities = _entities_of_facts(conn, all_facts) if all_facts else {}
        for r in rows:
            entities: dict[str, dict] = {}
            for fact_id in facts_of.get(r["id"], []):
                for e in fact_entities.get(fact_id, []):
                    entities.setdefault(e["id"], e)
            results.append(
                RecallResult(
                    id=r["id"],
                    type="observation",
                    text=r["output_text"],
                    score=0.0,
                    as_of=r["as_of"],
                    source_event_ids=events_of.get(r["id"], []),
                    entities=list(entities.values()),
                    ranks={},
                    platform=r["platform"],
                    thread_id=r["thread_id"],
                    session_id=None,
                    is_stale=bool(r["is_stale"]),
                    metadata={"episode_id": r["episode_id"], "fact_ids": facts_of.get(r["id"], [])},
                )
            )
    return results


def _load_mental_models(conn: db.Connection, ids: Sequence[str]) -> list[RecallResult]:
    results: list[RecallResult] = []
    for part in db.chunked(ids):
        rows = conn.execute(
            f"""SELECT m.id, m.name, m.description, m.subtype, m.entity_id, m.is_stale, m.updated_at,
                       e.name AS entity_name, e.type AS entity_type
                FROM mental_models m LEFT JOIN entities e ON e.id = m.entity_id
                WHERE m.id IN ({db.placeholders(part)})""",
            part,
        ).fetchall()
        for r in rows:
            entities = (
                [{"id": r["entity_id"], "name": r["entity_name"], "type": r["entity_type"]}]
                if r["entity_id"] and r["entity_name"]
                else []
            )
            results.append(
                RecallResult(
                    id=r["id"],
                    type="mental_model",
                    text=f"{r['name']}: {r['description']}",
                    score=0.0,
                    as_of=r["updated_at"],
                    source_event_ids=[],
                    entities=entities,
                    ranks={},
                    platform=None,
                    thread_id=None,
                    session_id=None,
                    is_stale=bool(r["is_stale"]),
                    metadata={"name": r["name"], "subtype": r["subtype"]},
                )
            )
    return results


def _load_entities(conn: db.Connection, ids: Sequence[str]) -> list[RecallResult]:
    results: list[RecallResult] = []
    for part in db.chunked(ids):
        rows = conn.execute(
            f"SELECT id, name, type, last_seen, mention_count FROM entities WHERE id IN ({db.placeholders(part)})", part
        ).fetchall()
        for r in rows:
            results.append(
                RecallResult(
                    id=r["id"],
                    type="entity",
                    text=f"{r['name']} ({r['type']})",
                    score=0.0,
                    as_of=r["last_seen"],
                    source_event_ids=[],
                    entities=[{"id": r["id"], "name": r["name"], "type": r["type"]}],
                    ranks={},
                    platform=None,
                    thread_id=None,
                    session_id=None,
                    metadata={"mention_count": r["mention_count"]},
                )
            )
    return results


_LOADERS = {
    "fact": _load_facts,
    "observation": _load_observations,
    "mental_model": _load_mental_models,
    "entity": _load_entities,
}


def _json(text: str | None) -> Any:
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {"raw": text}


def pack(results: list[RecallResult], max_tokens: int) -> list[RecallResult]:
    """Results in rank order while they fit in `max_tokens`; one that does not fit is skipped."""
    packed, used = [], 0
    for result in results:
        cost = estimate_tokens(result.text)
        if used + cost <= max_tokens:
            packed.append(result)
            used += cost
    return packed


_TOUCH_TABLES = {"fact": "facts", "observation": "analysis_runs", "mental_model": "mental_models"}
TOUCH_BUSY_MS = 200  # access counts are best effort: never wait long for the write lock


def touch_results(stores: Stores, results: Sequence[RecallResult]) -> None:
    """access_count + 1 for returned facts, observations and mental models (one UPDATE per table).

    Best effort: with a short busy timeout, so a long write elsewhere (or a read-only store) costs
    the counts of this recall, never its latency.
    """
    conn = stores.conn
    by_table: dict[str, list[str]] = {}
    for result in results:
        if result.type in _TOUCH_TABLES:
            by_table.setdefault(_TOUCH_TABLES[result.type], []).append(result.id)
    if not by_table:
        return
    conn.execute(f"PRAGMA busy_timeout = {TOUCH_BUSY_MS}")
    try:
        # Access counts: which entities are busy stays known, and the vectors held stay held.
        with links_kept(conn), held.kept(conn), db.transaction(conn):
            for table, ids in by_table.items():
                for part in db.chunked(ids):
                    conn.execute(
                        f"UPDATE {table} SET access_count = access_count + 1 WHERE id IN ({db.placeholders(part)})",
                        part,
                    )
    except db.OperationalError as exc:
        log.info("access counts not updated: %s", exc)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {db.BUSY_TIMEOUT_MS}")
