"""Consolidation benchmark on LoCoMo-format data: what layers 5 and 6 hold, what they cost, whether a second
run changes anything, and how much of a question's evidence an agent's context block covers.

For each conversation, in fresh stores: ingest, then day by day (as the sensors would run it) group
episodes, extract facts offline, embed them and consolidate; then create the emergent mental models.
Reported: facts, observations, facts per observation, isolated facts, observations that were versioned,
mental models, consolidation seconds and facts/s next to the embedding seconds of the same run, peak RSS,
and the row counts after a second consolidation (which must equal the first).

Context recall at a token budget (`context_recall`): for each question of categories 1-4, the block
get_context would inject is packed at B = 400, 800 and 1,600 tokens, once with the hierarchy (mental
models, observations, facts) and once with facts only, and scored by the evidence turns it covers. A fact
item covers its source turn; an observation or mental-model item covers the source turn of a fact it
rests on only when at least half of that fact's content words appear in the item's text.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nexus_memory.bench.locomo import CATEGORIES, normalise_evidence
from nexus_memory.core import db
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.model import get_embedder
from nexus_memory.embeddings.step import embed_pending
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.importers import read_records
from nexus_memory.events.ledger import ingest
from nexus_memory.injection.pack import LAYERS, ContextItem, Recalled, fact_limit, pack, recall_layers
from nexus_memory.mental_models import after_consolidation
from nexus_memory.observations import consolidate
from nexus_memory.observations.store import observation_summary
from nexus_memory.observations.topics import content_words
from nexus_memory.writer.offline_writer import OfflineWriter
from nexus_memory.writer.run import process_partition

BUDGETS = (400, 800, 1600)
MODES = {"hierarchy": LAYERS, "facts": ("fact",)}
EMERGENT_MODELS = 3
_TABLES = ("analysis_runs", "observation_facts", "episodes", "episode_events", "mental_models", "embeddings")


def _build(stores: Stores) -> dict[str, float]:
    """Day by day: episodes, facts, vectors, consolidation (timed apart); then emergent mental models."""
    embedder = get_embedder()
    writer = OfflineWriter()
    timings = {"extract_s": 0.0, "embed_s": 0.0, "consolidate_s": 0.0, "models_s": 0.0}
    days = stores.conn.execute("SELECT DISTINCT day, platform FROM events ORDER BY day, platform").fetchall()
    for day, platform in days:
        started = time.perf_counter()
        build_episodes(stores, day, platform)
        process_partition(stores, day, platform, writer)
        extracted = time.perf_counter()
        embed_pending(stores, embedder, target_types=("fact",))
        embedded = time.perf_counter()
        consolidate(stores)
        timings["extract_s"] += extracted - started
        timings["embed_s"] += embedded - extracted
        timings["consolidate_s"] += time.perf_counter() - embedded
    started = time.perf_counter()
    after_consolidation(stores, EMERGENT_MODELS, embedder=embedder)
    timings["models_s"] = time.perf_counter() - started
    return timings


def _row_counts(stores: Stores) -> dict[str, int]:
    counts = stores.counts()
    counts.update({t: stores.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in _TABLES})
    return counts


def _turns_of(stores: Stores, fact_ids: Sequence[str]) -> dict[str, str]:
    """fact id -> dia_id of its source turn."""
    out: dict[str, str] = {}
    for part in db.chunked(list(dict.fromkeys(fact_ids))):
        rows = stores.conn.execute(
            f"""SELECT f.id, json_extract(e.metadata, '$.dia_id') FROM facts f JOIN events e ON e.id = f.source_event_id
                WHERE f.id IN ({db.placeholders(part)})""",
            part,
        ).fetchall()
        out.update((r[0], r[1]) for r in rows if r[1])
    return out


def covered_turns(stores: Stores, items: Sequence[ContextItem]) -> set[str]:
    """Source turns the packed items cover (the rule of the module docstring)."""
    fact_ids = [f for item in items for f in item.fact_ids]
    turns = _turns_of(stores, fact_ids)
    texts = {
        r[0]: r[1]
        for part in db.chunked(list(dict.fromkeys(fact_ids)))
        for r in stores.conn.execute(f"SELECT id, text FROM facts WHERE id IN ({db.placeholders(part)})", part)
    }
    covered: set[str] = set()
    for item in items:
        if item.type == "fact":
            covered.update(turns[f] for f in item.fact_ids if f in turns)
            continue
        present = set(content_words(item.text))
        for fact_id in item.fact_ids:
            words = set(content_words(texts.get(fact_id, "")))
            if fact_id in turns and words and len(words & present) * 2 >= len(words):
                covered.add(turns[fact_id])
    return covered


def context_recall(
    stores: Stores,
    question: str,
    evidence: Sequence[str],
    *,
    budgets: Sequence[int] = BUDGETS,
    reference_time: int | None = None,
) -> dict[str, dict[str, float]]:
    """{budget: {"hierarchy": r, "facts": r}} for one question: share of its evidence turns covered."""
    gold = set(evidence)
    recalled = recall_layers(stores, question, fact_results=fact_limit(max(budgets)), reference_time=reference_time)
    out: dict[str, dict[str, float]] = {}
    for budget in budgets:
        out[str(budget)] = {}
        for mode, layers in MODES.items():
            chosen = recalled if mode == "hierarchy" else Recalled([], recalled.facts)
            items = pack(stores, question, chosen, max_tokens=budget)
            assert all(i.type in layers for i in items)
            out[str(budget)][mode] = len(gold & covered_turns(stores, items)) / len(gold) if gold else 0.0
    return out


def _mean_recall(rows: list[dict[str, dict[str, float]]], budgets: Sequence[int]) -> dict[str, dict[str, float]]:
    return {
        str(b): {m: round(statistics.fmean(r[str(b)][m] for r in rows), 4) if rows else 0.0 for m in MODES}
        for b in budgets
    }


def run_conversation(conversation: dict[str, Any], work_dir: Path, budgets: Sequence[int] = BUDGETS) -> dict[str, Any]:
    """Build one conversation's memory, measure it, consolidate again, score its questions."""
    source = work_dir / f"{conversation['sample_id']}.json"
    source.write_text(json.dumps([conversation]))
    settings = load_settings(data_dir=work_dir / conversation["sample_id"])
    with Stores(settings) as stores:
        ingest(stores, read_records(source, "locomo"))
        timings = _build(stores)
        first = _row_counts(stores)
        summary = observation_summary(stores.conn)
        isolated = stores.conn.execute(
            """SELECT count(*) FROM facts f WHERE f.is_consolidated = 1 AND NOT EXISTS (
                   SELECT 1 FROM observation_facts o JOIN analysis_runs r ON r.id = o.analysis_run_id
                   WHERE o.fact_id = f.id AND r.status = 'completed'
                     AND NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = r.id))"""
        ).fetchone()[0]
        again = consolidate(stores)
        after_consolidation(stores, EMERGENT_MODELS, embedder=get_embedder())
        second = _row_counts(stores)
        latest = stores.conn.execute("SELECT max(as_of) FROM events").fetchone()[0]
        rows = []
        for qa in conversation["qa"]:
            evidence = normalise_evidence(qa.get("evidence", []))
            if qa.get("category") in (1, 2, 3, 4) and evidence:
                scored = context_recall(stores, qa["question"], evidence, budgets=budgets, reference_time=latest)
                rows.append({"category": CATEGORIES[qa["category"]], **scored})
    facts = first["facts"]
    return {
        "conversation": conversation["sample_id"],
        "facts": facts,
        "observations": summary["observations"],
        "facts_per_observation": summary["facts_per_observation"],
        "isolated_facts": isolated,
        "versioned_observations": summary["versioned_observations"],
        "stale_observations": summary["stale_observations"],
        "mental_models": first["mental_models"],
        "consolidate_s": round(timings["consolidate_s"], 2),
        "consolidate_facts_per_s": round(facts / timings["consolidate_s"], 1) if timings["consolidate_s"] else 0.0,
        "embed_s": round(timings["embed_s"], 2),
        "extract_s": round(timings["extract_s"], 2),
        "models_s": round(timings["models_s"], 2),
        "second_run": {"facts_seen": again.facts_seen, "identical": second == first, "counts": second},
        "questions": len(rows),
        "context_recall": _mean_recall(rows, budgets),
        "_rows": rows,
    }


def run(path: Path, *, conversations: int = 0, budgets: Sequence[int] = BUDGETS) -> dict[str, Any]:
    """The benchmark over every conversation (or the first N) of a LoCoMo-format file."""
    data = json.loads(Path(path).read_text())
    data = data if isinstance(data, list) else [data]
    if conversations:
        data = data[:conversations]
    started = time.perf_counter()
    per_conversation: list[dict[str, Any]] = []
    all_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="nexus-consolidate-") as tmp:
        for conversation in data:
            print(f"consolidate: {conversation['sample_id']} ...", file=sys.stderr)
            result = run_conversation(conversation, Path(tmp), budgets)
            all_rows += result.pop("_rows")
            per_conversation.append(result)
    totals = {k: sum(c[k] for c in per_conversation) for k in ("facts", "observations", "isolated_facts")}
    linked = sum(c["observations"] * c["facts_per_observation"] for c in per_conversation)
    consolidate_s = sum(c["consolidate_s"] for c in per_conversation)
    wins = {
        str(b): sum(
            c["context_recall"][str(b)]["hierarchy"] > c["context_recall"][str(b)]["facts"] for c in per_conversation
        )
        for b in budgets
    }
    return {
        **totals,
        "facts_per_observation": round(linked / totals["observations"], 2) if totals["observations"] else 0.0,
        "versioned_observations": sum(c["versioned_observations"] for c in per_conversation),
        "mental_models": sum(c["mental_models"] for c in per_conversation),
        "consolidate_s": round(consolidate_s, 2),
        "consolidate_facts_per_s": round(totals["facts"] / consolidate_s, 1) if consolidate_s else 0.0,
        "embed_s": round(sum(c["embed_s"] for c in per_conversation), 2),
        "second_run_identical": all(c["second_run"]["identical"] for c in per_conversation),
        "questions": len(all_rows),
        "context_recall": _mean_recall(all_rows, budgets),
        "hierarchy_wins_per_budget": wins,
        "conversations": per_conversation,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "seconds": round(time.perf_counter() - started, 1),
        "writer": "offline",
        "consolidator": "offline",
        "model": get_embedder().model_name,
    }
