"""What the lifecycle costs at scale: forgetting (each target kind, and the one-time VACUUM of a store written
before secure_delete) and the nightly decay, on a synthetic store of N facts.

    nexus-memory bench forget --facts 100000 --json

The store: one fact per event, senders with a thread each, entities linked two per fact (Zipf), episodes of
50 events, vectors for every fact (random unit vectors: their values do not matter to deletion cost) in
`embeddings` + vec0 + IVF files. Timings are wall seconds of the real calls, phase by phase, and the CPU
seconds of the whole forget (`cpu_s`: what it costs when it has a core to itself). After each
forget, the raw bytes of every file under the data directory and the Dagster home (DAGSTER_HOME, when set:
run storage, event logs, compute logs) are searched for the handle or names and a sample of the forgotten texts
(`bytes_left` lists the files that still hold one). Then the nightly upkeep retrains the index the
forgets pruned (`retrain_s`).
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory.bench.synthetic import (
    SyntheticEntity,
    SyntheticFact,
    random_unit_vectors,
    write_entities,
    write_fact_vectors,
    write_facts,
    write_links,
    zipf_ranks,
)
from nexus_memory.core.config import load_settings
from nexus_memory.core.ids import now_ms, stable_id
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.step import nightly_index_upkeep
from nexus_memory.embeddings.vectors.ivf import build_ivf
from nexus_memory.lifecycle import decay
from nexus_memory.lifecycle.forget import Target, forget, make_plan

WORDS = (
    *("garden", "coffee", "hiking", "report", "budget", "piano", "travel", "doctor", "school", "project"),
    *("dinner", "weekend", "concert", "deadline", "birthday", "recipe", "meeting", "flight", "museum"),
    *("invoice", "bicycle", "library", "cousin", "holiday", "apartment"),
)
EPISODE_EVENTS = 50
DIMENSION = 384
MODEL = "bench-random"
SCANNED_TEXTS = 20  # forgotten texts searched for after each forget (a sender's 1,000 would take minutes)


def run(facts: int, *, directory: Path | None = None, seed: int = 0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        settings = load_settings(data_dir=Path(tmp) / "data")
        with Stores(settings) as stores:
            started = time.perf_counter()
            layout = _fill(stores, facts, random.Random(seed), np.random.default_rng(seed))
            built_s = time.perf_counter() - started
            sizes = {p.name: p.stat().st_size for p in settings.data_dir.glob("*.db")}
            result: dict[str, Any] = {"facts": facts, "build_s": round(built_s, 1), "store_bytes": sizes}
            result["load_average_before"] = [round(x, 1) for x in os.getloadavg()]
            started = time.perf_counter()
            report = decay.run_decay(stores, now=now_ms() + 30 * decay.DAY_MS)
            result["decay"] = {"seconds": round(time.perf_counter() - started, 3), "checked": report.checked}
            targets = [
                ("fact", layout["fact"]),
                ("event", layout["event"]),
                ("sender", layout["sender"]),
                ("entity", layout["entity"]),
            ]
            for kind, value in targets:
                result[f"forget_{kind}"] = _forget(stores, Target(kind, value))
            # A store written before secure_delete: the first forget VACUUMs each store once.
            for table in ("memory_scrub_state", "events_scrub_state", "identity_scrub_state"):
                stores.conn.execute(f"UPDATE {table} SET clean_since = NULL")
            result["forget_fact_first_time_with_vacuum"] = _forget(stores, Target("fact", layout["fact2"]))
            started = time.perf_counter()
            result["nightly_index_upkeep"] = nightly_index_upkeep(stores)
            result["retrain_s"] = round(time.perf_counter() - started, 3)
            result["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    return result


def _forget(stores: Stores, target: Target) -> dict[str, Any]:
    plan = make_plan(stores.conn, target)  # what to look for afterwards (a sender's handle comes first)
    texts = [*plan.texts[:SCANNED_TEXTS], *plan.names]
    cpu = time.process_time()
    outcome = forget(stores, target, requested_by="bench")
    cpu_s = time.process_time() - cpu
    removed = {store: sum(rows.values()) for store, rows in outcome.removed.items()}
    return {
        "seconds": outcome.seconds,
        # This process's CPU seconds for the whole forget: on a shared machine wall seconds also count the
        # time other processes held the cores (quote both, and the load average).
        "cpu_s": round(cpu_s, 3),
        "rows_removed": removed,
        "vacuumed": outcome.scrub.get("vacuumed"),
        "texts_scanned": len(texts),
        "bytes_left": files_holding([stores.data_dir, *_dagster_home()], texts),
    }


def _dagster_home() -> list[Path]:
    home = os.environ.get("DAGSTER_HOME")
    return [Path(home)] if home else []


def files_holding(roots: list[Path], texts: list[str]) -> list[str]:
    """Every file under `roots` whose raw bytes hold one of `texts` (as written, or lower-cased)."""
    needles = {n for t in texts for n in (t.encode(), t.lower().encode())}
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                content = path.read_bytes()
                if any(n in content for n in needles):
                    found.append(str(path))
    return found


def _fill(stores: Stores, n: int, rng: random.Random, np_rng: np.random.Generator) -> dict[str, str]:
    conn, now = stores.conn, now_ms()
    senders = max(10, n // 1_000)
    n_entities = max(20, n // 20)
    mentioned = zipf_ranks(np_rng, 2 * n, n_entities)
    with stores.transaction():
        people = (SyntheticEntity(f"ent{i}", f"Person{i}x", "person", "inferred") for i in range(n_entities))
        write_entities(conn, people, at=now)
        events, facts, links = [], [], []
        for i in range(n):
            sender = f"user{i % senders}@example.com"
            words = " ".join(rng.choice(WORDS) for _ in range(8))
            a, b = int(mentioned[2 * i]), int(mentioned[2 * i + 1])
            text = f"Person{a}x talked about {words} with Person{b}x"
            as_of = now - (n - i) * 60_000
            event_id = f"bench:{i}"
            thread = f"t{i % senders}"
            events.append((event_id, sender, thread, text, stable_id("h", i), as_of, now))
            facts.append(SyntheticFact(f"f{i}", text, as_of, now, now, "chat", thread, source_event_id=event_id))
            links += [(f"f{i}", f"ent{a}", as_of)] + ([(f"f{i}", f"ent{b}", as_of)] if b != a else [])
        conn.executemany(
            """INSERT INTO events (id, platform, sender_id, thread_id, direction, content, content_hash, as_of,
                   ingested_at, day) VALUES (?, 'chat', ?, ?, 'inbound', ?, ?, ?, ?, '2024-01-01')""",
            events,
        )
        write_facts(conn, facts)
        write_links(conn, links)
        conn.execute(
            "INSERT INTO episode_definitions (id, name, strategy, params, created_at) "
            "VALUES ('def_bench', 'bench', 'time_gap', '{}', ?)",
            (now,),
        )
        for start in range(0, n, EPISODE_EVENTS):
            chunk = events[start : start + EPISODE_EVENTS]
            episode = f"ep{start}"
            conn.execute(
                """INSERT INTO episodes (id, definition_id, start_time, end_time, event_count, first_event_id,
                       last_event_id, created_at) VALUES (?, 'def_bench', ?, ?, ?, ?, ?, ?)""",
                (episode, chunk[0][5], chunk[-1][5], len(chunk), chunk[0][0], chunk[-1][0], now),
            )
            conn.executemany(
                "INSERT INTO episode_events (episode_id, event_id, position) VALUES (?, ?, ?)",
                [(episode, e[0], k) for k, e in enumerate(chunk)],
            )
        write_fact_vectors(stores, MODEL, facts, random_unit_vectors(np_rng, n, DIMENSION))
    build_ivf(conn, stores.data_dir, MODEL, "fact", DIMENSION)
    for schema in ("main", "events", "identity", "embeddings"):
        conn.execute(f"PRAGMA {schema}.wal_checkpoint(TRUNCATE)")
    middle = n // 2
    mid_entity = f"ent{max(1, n_entities // 50)}"  # a mid-frequency entity
    return {
        "fact": f"f{middle}",
        "fact2": f"f{middle + 7}",
        "event": f"bench:{middle + 3}",
        "sender": f"user{(middle + 5) % senders}@example.com",
        "entity": mid_entity,
    }
