"""A small memory built through the real pipeline, for the lifecycle tests: events -> episodes -> facts
(offline writer) -> embeddings (bag-of-words fake) -> IVF index files, plus hand-made observations,
mental models and dossiers (their layers are built elsewhere), and helpers to read every byte back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from test_recall import FakeEmbedder

from nexus_memory.core.ids import now_ms, ulid
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.step import embed_pending
from nexus_memory.embeddings.vectors.ivf import build_ivf
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.lifecycle import reconsolidate
from nexus_memory.writer.offline_writer import OfflineWriter
from nexus_memory.writer.run import process_partition

T0 = 1_714_557_600  # 2024-05-01 10:00 UTC, in seconds


def message(
    n: int,
    sender: str,
    content: str,
    *,
    minute: int | None = None,
    thread: str = "t1",
    session: str = "s1",
    sender_name: str | None = None,
    platform: str = "chat",
) -> RawRecord:
    data = {
        "id": f"m{n}",
        "platform": platform,
        "sender_id": sender,
        "content": content,
        "as_of": T0 + (n if minute is None else minute) * 60,
        "thread_id": thread,
        "session_id": session,
    }
    if sender_name:
        data["sender_name"] = sender_name
    return RawRecord("test", n, data, json.dumps(data))


def build(stores: Stores, records: Sequence[RawRecord]) -> FakeEmbedder:
    """Ingest, group, extract (every partition, in time order), embed, and write IVF files for facts and entities."""
    ingest(stores, records)
    for day, platform in stores.conn.execute("SELECT DISTINCT day, platform FROM events ORDER BY day").fetchall():
        build_episodes(stores, day, platform)
        process_partition(stores, day, platform, OfflineWriter())
    embedder = FakeEmbedder()
    embed_pending(stores, embedder, target_types=("fact", "entity"))
    for target_type in ("fact", "entity"):
        build_ivf(stores.conn, stores.data_dir, embedder.model_name, target_type, embedder.dimension, nlist=2)
    return embedder


def facts_with(stores: Stores, word: str) -> list[str]:
    rows = stores.conn.execute("SELECT id FROM facts WHERE instr(lower(text), lower(?)) ORDER BY id", (word,))
    return [r[0] for r in rows]


def add_observation(stores: Stores, fact_ids: Sequence[str], text: str) -> str:
    """An observation (analysis run of type observation_v1) resting on these facts."""
    conn, now = stores.conn, now_ms()
    with stores.transaction():
        conn.execute(
            """INSERT OR IGNORE INTO analysis_types (id, name, version, output_type, created_at)
               VALUES (?, 'observation', '1', 'text', ?)""",
            (reconsolidate.OBSERVATION_TYPE, now),
        )
        episode = conn.execute("SELECT id FROM episodes ORDER BY start_time LIMIT 1").fetchone()[0]
        run_id = ulid()
        conn.execute(
            """INSERT INTO analysis_runs (id, analysis_type_id, episode_id, status, output_text, created_at)
               VALUES (?, ?, ?, 'completed', ?, ?)""",
            (run_id, reconsolidate.OBSERVATION_TYPE, f"{episode}", text, now),
        )
        conn.executemany(
            "INSERT INTO observation_facts (analysis_run_id, fact_id) VALUES (?, ?)", [(run_id, f) for f in fact_ids]
        )
    return run_id


def add_mental_model(
    stores: Stores, name: str, text: str, *, entity_id: str | None = None, subtype: str = "entity"
) -> str:
    model_id, now = ulid(), now_ms()
    with stores.transaction():
        stores.conn.execute(
            """INSERT INTO mental_models (id, name, description, subtype, entity_id, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            (model_id, name, text, subtype, entity_id, now, now),
        )
    return model_id


def write_dossier(stores: Stores, model_id: str, text: str) -> Path:
    path = reconsolidate.dossier_dir(stores) / f"{model_id}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def files_holding(data_dir: Path, marker: str) -> list[str]:
    """Every file under the data directory whose raw bytes contain the marker (any case)."""
    needle = marker.lower().encode()
    return sorted(
        str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file() and needle in p.read_bytes().lower()
    )


def dump(stores: Stores) -> dict[str, Any]:
    """Every row of every table of every store (shadow tables of the indexes included), for before/after checks."""
    out: dict[str, Any] = {}
    for schema in ("main", "events", "identity", "embeddings"):
        tables = stores.conn.execute(
            f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        ).fetchall()
        for (table,) in tables:
            rows = stores.conn.execute(f"SELECT * FROM {schema}.{table}").fetchall()
            out[f"{schema}.{table}"] = sorted(repr(tuple(r)) for r in rows)
    return out
