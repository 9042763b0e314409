"""`nexus-memory bench backfill --events N`: a user's first import, timed layer by layer against the model.

1. A history of N events (`bench.history`: two years, five platforms, threads, people under several
   handles, bursts and quiet weeks) is written to a JSONL file and ingested as `nexus-memory ingest` does.
2. The whole pipeline runs through Dagster in-process, the way a UI backfill of every platform's range
   runs (`run_pipeline`, on a fresh persistent instance), timed per layer from the runs' step records.
3. The embedding-bound limit: the same (distinct) texts embedded in a tight loop by the same model
   in float32 (the recipe every store had before recipes, so the figure says how much faster the
   whole pipeline got than embedding the old way), one thread, the same batches in calls of
   ENCODE_BATCH texts as before calls were sized by characters (model.BATCH_CHARS), nothing stored.
   `ratio_to_embedding_limit` is pipeline seconds over limit seconds. The pipeline embeds with two
   processes (this one and the embedding-ahead worker, one torch thread each) in its own recipe
   (NEXUS_EMBED_PRECISION, auto: bf16 where the CPU has it); `two_process_limit_s` is the stricter
   limit, those two processes embedding alone in that recipe, where 1.0 would mean every other layer
   and Dagster itself cost nothing.

The Dagster side is passed in (`pipeline`), so this module stays free of the orchestrator.
"""

from __future__ import annotations

import os
import platform
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nexus_memory.bench.history import DAYS, FIRST_DAY, write_history
from nexus_memory.core import db
from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.ahead import EmbeddingAhead
from nexus_memory.embeddings.model import ENCODE_BATCH, Embedder, get_embedder, vector_identity
from nexus_memory.embeddings.step import fact_embedding_texts, length_batches
from nexus_memory.events.ingest import ingest_file

# What the pipeline callable returns: its wall seconds (`wall_s`), seconds per layer step ("events",
# "episodes", "facts", "embeddings") and of the asset checks (`seconds`), rows per layer (`rows`), the
# number of runs and whether all succeeded with nothing left to do (`ok`). The rest is orchestration.
PipelineTiming = dict[str, Any]
EMBED_BATCH_ROWS = 128  # rows per batch, as embed_pending stores them


def run(
    events: int,
    pipeline: Callable[[Settings, Path], PipelineTiming],
    *,
    days: int = DAYS,
    seed: int = 7,
    directory: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Generate, ingest and process a history of `events` events; the figures as a JSON-ready dict."""
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-backfill-", dir=directory) as tmp:
        root = Path(tmp)
        settings = load_settings(
            data_dir=root / "data", inbox_dir=root / "inbox", partition_start=FIRST_DAY.isoformat()
        )
        started = time.perf_counter()
        by_platform = write_history(root / "history.jsonl", events, seed, days)
        generate_s = time.perf_counter() - started
        progress(f"generated {events} events over {days} days in {generate_s:.1f} s: {by_platform}")

        started = time.perf_counter()
        with Stores(settings) as stores:
            ingested = ingest_file(stores, root / "history.jsonl", "jsonl")
        ingest_s = time.perf_counter() - started
        progress(f"ingested {ingested.ingested} events in {ingest_s:.1f} s; running the pipeline")

        timing = pipeline(settings, root / "dagster_home")
        pipeline_s = timing["wall_s"]
        progress(f"pipeline in {pipeline_s:.1f} s; embedding the same texts in a tight loop")

        embedder = get_embedder(settings=settings)
        with Stores(settings) as stores:
            texts = list(dict.fromkeys(fact_embedding_texts(stores.conn)))  # the pipeline embeds a text once
            store = _store_shape(stores.conn)
        limit_s = _one_process_limit(get_embedder(vector_identity(embedder.base_model, "fp32")), texts)
        progress(f"one process: {limit_s:.1f} s; the same texts with the embedding-ahead worker beside it")
        two_process_s = two_process_seconds(embedder, texts)

    total_s = ingest_s + pipeline_s
    seconds = {"ingest": ingest_s, **timing["seconds"]}
    seconds["orchestration"] = max(0.0, total_s - sum(seconds.values()))
    per_layer = _per_layer(seconds, {"ingest": ingested.ingested, **timing["rows"]}, total_s, events)
    return {
        "events": events,
        "seconds": round(total_s, 1),
        "events_per_s": round(events / total_s, 1),
        "per_layer": per_layer,
        "pipeline_s": round(pipeline_s, 1),
        # Observations and mental models, built once after the backfill (not part of the layers above).
        "consolidation_s": round(timing.get("consolidation_s", 0.0), 1),
        "consolidation_to_pipeline": round(timing.get("consolidation_s", 0.0) / pipeline_s, 2) if pipeline_s else None,
        "seconds_with_consolidation": round(total_s + timing.get("consolidation_s", 0.0), 1),
        "observations": timing.get("observations", {}),
        "embedding_limit_s": round(limit_s, 1),
        "embedding_limit_recipe": "fp32",
        "ratio_to_embedding_limit": round(pipeline_s / limit_s, 2) if limit_s else None,
        "embedding_limit_texts_per_s": round(len(texts) / limit_s, 1) if limit_s else None,
        # The stricter limit: the pipeline's own two embedding processes (this one and the worker) alone.
        "two_process_limit_s": round(two_process_s, 1),
        "ratio_to_two_process_limit": round(pipeline_s / two_process_s, 2) if two_process_s else None,
        # This process, and the largest embedding-ahead worker (a child process) on top of it.
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "worker_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        "ok": bool(timing.get("ok")),
        "runs": timing.get("runs"),
        "generate_s": round(generate_s, 1),
        "history": {"days": days, "by_platform": by_platform, **store},
        "embedder": {
            "model": embedder.model_name,
            "precision": embedder.precision,  # the pipeline's and the two-process limit's recipe
            "torch_threads": settings.torch_threads,
            "texts": len(texts),
            "mean_chars": round(sum(map(len, texts)) / len(texts)) if texts else 0,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "processor": _processor(),
            "load_average_before": [round(x, 1) for x in load_before],
            "load_average_after": [round(x, 1) for x in os.getloadavg()],
        },
    }


def _one_process_limit(embedder: Embedder, texts: list[str]) -> float:
    """Seconds to embed `texts` in this process in a tight loop, batched as embed_pending batched them
    before model calls were sized by characters (the denominator stays the old loop: batch_chars=None)."""
    rows = [(i, text) for i, text in enumerate(texts)]
    started = time.perf_counter()
    for batch in length_batches(rows, EMBED_BATCH_ROWS):
        embedder.encode([r[1] for r in batch], batch_size=ENCODE_BATCH, batch_chars=None)
    return time.perf_counter() - started


def two_process_seconds(embedder: Embedder, texts: list[str]) -> float:
    """Seconds to embed `texts` with this process and the embedding-ahead worker side by side, as the
    pipeline's embeddings layer does, storing nothing (the worker started and loaded first)."""
    ahead = EmbeddingAhead(embedder)
    ahead.start()
    started = time.perf_counter()
    ahead.submit(texts)
    ahead.drain()
    seconds = time.perf_counter() - started
    ahead.close()
    return seconds


def _per_layer(
    seconds: dict[str, float], rows: dict[str, int], total_s: float, events: int
) -> dict[str, dict[str, Any]]:
    """Seconds, share of the total, rows and rows/s (layers), events/s, for each part of the time."""
    out: dict[str, dict[str, Any]] = {}
    for name, spent in seconds.items():
        entry: dict[str, Any] = {"seconds": round(spent, 2), "share": round(spent / total_s, 3) if total_s else 0}
        if name in rows:
            entry["rows"] = rows[name]
            entry["rows_per_s"] = round(rows[name] / spent, 1) if spent else None
        entry["events_per_s"] = round(events / spent, 1) if spent else None
        out[name] = entry
    return out


def _store_shape(conn: db.Connection) -> dict[str, int]:
    """What the history became: threads, senders, episodes, facts, entities, merge proposals."""
    queries = {
        "threads": "SELECT count(DISTINCT thread_id) FROM events",
        "senders": "SELECT count(DISTINCT platform || '|' || sender_id) FROM events",
        "episodes": "SELECT count(*) FROM episodes",
        "facts": "SELECT count(*) FROM facts",
        "entities": "SELECT count(*) FROM entities WHERE merged_into IS NULL",
        "merge_candidates": "SELECT count(*) FROM merge_candidates",
    }
    return {name: conn.execute(sql).fetchone()[0] for name, sql in queries.items()}


def _processor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
