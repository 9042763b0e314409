"""LoCoMo retrieval benchmark: recall@k through provenance back to dialogue ids, with a BM25 baseline.

For each conversation, in a fresh set of stores: ingest every turn (LoCoMo importer), group episodes,
run the offline writer, embed, then recall each question within its conversation and map the
returned facts to their source turns' `dia_id`s. recall@k = |evidence ∩ top-k turns| / |evidence|.
The baseline is SQLite FTS5 BM25 over the raw turns, with the same stopword-free query terms.
No LLM is used anywhere. Nothing here knows about LoCoMo beyond the importer and the scoring.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nexus_memory import db
from nexus_memory.config import load_settings
from nexus_memory.embeddings import embed_pending, get_embedder
from nexus_memory.episodes import build_episodes
from nexus_memory.events import ingest
from nexus_memory.importers import read_records
from nexus_memory.recall import recall
from nexus_memory.recall.keyword import extract_terms, match_expression
from nexus_memory.stores import Stores
from nexus_memory.writer.offline_writer import OfflineWriter
from nexus_memory.writer.run import process_partition

KS = (1, 5, 10, 20, 50)
CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop", 5: "adversarial"}


def normalise_evidence(evidence: Iterable[str]) -> list[str]:
    """Split 'D8:6; D9:17' and repair 'D:3:5' into clean dia_ids like 'D3:5'."""
    ids: list[str] = []
    for item in evidence:
        for part in re.split(r"[;,\s]+", str(item)):
            match = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if match:
                ids.append(f"D{match.group(1)}:{match.group(2)}")
    return ids


def recall_at(ranked: list[str], evidence: list[str], k: int) -> float:
    gold = set(evidence)
    return len(gold & set(ranked[:k])) / len(gold) if gold else 0.0


def _pipeline(stores: Stores) -> dict[str, float]:
    """Episodes -> facts -> embeddings for every partition: the asset bodies, called directly."""
    started = time.perf_counter()
    partitions = stores.conn.execute("SELECT DISTINCT day, platform FROM events ORDER BY day").fetchall()
    writer = OfflineWriter()
    for day, platform in partitions:
        build_episodes(stores, day, platform)
        process_partition(stores, f"{day}|{platform}", writer)
    extracted = time.perf_counter()
    embed_pending(stores, get_embedder(), target_types=("fact",))
    return {"extract_s": extracted - started, "embed_s": time.perf_counter() - extracted}


def _fact_turns(stores: Stores, fact_ids: list[str]) -> list[str]:
    """Unique source dia_ids of facts, in result order."""
    if not fact_ids:
        return []
    rows = stores.conn.execute(
        f"""SELECT f.id, json_extract(e.metadata, '$.dia_id') FROM facts f JOIN events e ON e.id = f.source_event_id
            WHERE f.id IN ({db.placeholders(fact_ids)})""",
        fact_ids,
    ).fetchall()
    by_fact = {r[0]: r[1] for r in rows}
    seen: dict[str, None] = {}
    for fact_id in fact_ids:
        if by_fact.get(fact_id):
            seen.setdefault(by_fact[fact_id], None)
    return list(seen)


def _bm25_index(turns: list[tuple[str, str]]) -> db.Connection:
    conn = db.sqlite.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE turns USING fts5(dia_id UNINDEXED, text, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO turns (dia_id, text) VALUES (?, ?)", turns)
    return conn


def _bm25(conn: db.Connection, question: str, k: int) -> list[str]:
    expression = match_expression(extract_terms(question))
    if not expression:
        return []
    rows = conn.execute("SELECT dia_id FROM turns WHERE turns MATCH ? ORDER BY rank LIMIT ?", (expression, k))
    return [r[0] for r in rows]


def run_conversation(conversation: dict[str, Any], work_dir: Path, budget: str = "mid") -> list[dict[str, Any]]:
    """Score every question of one conversation; returns one row per question."""
    source = work_dir / f"{conversation['sample_id']}.json"
    source.write_text(json.dumps([conversation]))
    settings = load_settings(data_dir=work_dir / conversation["sample_id"])
    rows: list[dict[str, Any]] = []
    with Stores(settings) as stores:
        ingest(stores, read_records(source, "locomo"))
        timings = _pipeline(stores)
        turns = [
            (json.loads(r[0])["dia_id"], r[1]) for r in stores.conn.execute("SELECT metadata, content FROM events")
        ]
        bm25 = _bm25_index(turns)
        latest = stores.conn.execute("SELECT max(as_of) FROM events").fetchone()[0]
        for qa in conversation["qa"]:
            evidence = normalise_evidence(qa.get("evidence", []))
            if not evidence:
                continue
            q_started = time.perf_counter()
            response = recall(
                stores,
                qa["question"],
                max_results=max(KS),
                budget=budget,
                touch=False,
                reference_time=latest,
                scope=("facts",),
            )
            latency = (time.perf_counter() - q_started) * 1000
            ranked = _fact_turns(stores, [r.id for r in response.results if r.type == "fact"])
            baseline = _bm25(bm25, qa["question"], max(KS))
            rows.append(
                {
                    "category": qa["category"],
                    "latency_ms": latency,
                    **{f"r@{k}": recall_at(ranked, evidence, k) for k in KS},
                    **{f"bm25_r@{k}": recall_at(baseline, evidence, k) for k in KS},
                }
            )
        rows.append({"timings": timings, "facts": stores.counts()["facts"], "turns": len(turns)})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if "category" in r]
    by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in scored:
        by_cat[CATEGORIES.get(r["category"], str(r["category"]))].append(r)
    core = [r for r in scored if r["category"] in (1, 2, 3, 4)]

    def means(group: list[dict[str, Any]], prefix: str = "") -> dict[str, float]:
        return {f"r@{k}": round(statistics.fmean(r[f"{prefix}r@{k}"] for r in group), 4) for k in KS} if group else {}

    latencies = sorted(r["latency_ms"] for r in scored)
    return {
        "questions": len(scored),
        "recall_at_10": means(core)["r@10"],
        "bm25_recall_at_10": means(core, "bm25_")["r@10"],
        "categories_1_4": means(core),
        "bm25_categories_1_4": means(core, "bm25_"),
        "per_category": {name: {**means(group), "n": len(group)} for name, group in sorted(by_cat.items())},
        "bm25_per_category": {name: means(group, "bm25_") for name, group in sorted(by_cat.items())},
        "recall_latency_ms": {
            "p50": round(latencies[len(latencies) // 2], 1),
            "p95": round(latencies[int(len(latencies) * 0.95)], 1),
        }
        if latencies
        else {},
    }


def run(path: Path, *, conversations: int = 0, budget: str = "mid") -> dict[str, Any]:
    """The whole benchmark: every conversation (or the first N) of a LoCoMo-format file."""
    data = json.loads(Path(path).read_text())
    data = data if isinstance(data, list) else [data]
    if conversations:
        data = data[:conversations]
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    info: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="nexus-locomo-") as tmp:
        for conversation in data:
            print(f"locomo: {conversation['sample_id']} ...", file=sys.stderr)
            result = run_conversation(conversation, Path(tmp), budget=budget)
            rows += result[:-1]
            info.append({"conversation": conversation["sample_id"], **result[-1]})
    summary = summarise(rows)
    summary.update(
        budget=budget,
        conversations=info,
        seconds=round(time.perf_counter() - started, 1),
        writer="offline",
        model=get_embedder().model_name,
    )
    return summary


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]), conversations=int(sys.argv[2]) if len(sys.argv) > 2 else 0), indent=1))
