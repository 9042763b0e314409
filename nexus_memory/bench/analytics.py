"""`nexus-memory bench analytics`: build a store of ~100k events, then time each analytics section.

The events are copies of the bundled sample conversation (three weeks of iMessage, Gmail, Discord and
agent sessions), each copy with its own ids and threads and shifted to its own start within two years,
so the same people talk all along; they go through the real ingest and episode steps. The writer's
output is synthetic, written straight into the stores: the offline writer's near-duplicate check
ranks every keyword match across the whole store, so a 100k-event run through it takes hours on two
cores, while the analytics being timed only need rows of the right shapes and sizes (outcomes with
failures and skips, facts per episode, entities by type with merges, co-occurrences, merge candidates,
observations). Vectors come from the real embedding step with a stand-in model (random unit vectors).
The store is kept in `data_dir` and reused when it already holds the asked-for events.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory.analytics.chart import render_png
from nexus_memory.analytics.report import SECTIONS, compute_section
from nexus_memory.bench.synthetic import (
    SyntheticEntity,
    SyntheticFact,
    random_unit_vectors,
    sample_records,
    write_entities,
    write_facts,
    write_links,
)
from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.ledger import RawRecord, ingest, parse_timestamp

SAMPLE_SPAN_DAYS = 21
DAY_MS = 86_400_000


def synthetic_events(count: int, span_days: int = 730) -> Iterator[dict[str, Any]]:
    """`count` events: shifted copies of the sample conversation spread over `span_days` days.

    Copies start at least two days apart when the span allows, so the writer's 24-hour near-duplicate
    guard sees each copy's facts as new.
    """
    sample = sample_records()
    copies = math.ceil(count / len(sample))
    stride_ms = max(1, (span_days - SAMPLE_SPAN_DAYS) * DAY_MS // max(copies, 1))
    first = min(parse_timestamp(r["as_of"]) for r in sample)
    made = 0
    for copy in range(copies):
        for record in sample:
            if made == count:
                return
            shifted = dict(record)
            shifted["as_of"] = parse_timestamp(record["as_of"]) - first + 1_577_836_800_000 + copy * stride_ms
            shifted["id"] = f"{record['id']}~{copy}"
            for key in ("thread_id", "session_id"):
                if record.get(key):
                    shifted[key] = f"{record[key]}~{copy}"
            made += 1
            yield shifted


class _RandomModel:
    """A stand-in sentence model: unit vectors from a seeded generator (the analytics read ids, not vectors)."""

    def __init__(self, dimension: int = 384) -> None:
        self.dimension = dimension
        self.rng = np.random.default_rng(7)

    def get_sentence_embedding_dimension(self) -> int:
        return self.dimension

    def encode(self, texts: list[str], **_: Any) -> np.ndarray:
        return random_unit_vectors(self.rng, len(texts), self.dimension)


@contextlib.contextmanager
def _step(seconds: dict[str, float], name: str) -> Iterator[None]:
    """Time the block as the build's step `name`: `seconds[name]`, to a tenth."""
    started = time.perf_counter()
    yield
    seconds[name] = round(time.perf_counter() - started, 1)


def build_store(settings: Settings, count: int, progress: Callable[[str], None]) -> dict[str, float]:
    """Ingest `count` synthetic events, build episodes, write synthetic writer output, embed; seconds per step."""
    from nexus_memory.embeddings.model import DEFAULT_MODEL, Embedder
    from nexus_memory.embeddings.step import embed_pending
    from nexus_memory.episodes.grouping import build_episodes

    seconds: dict[str, float] = {}
    with Stores(settings) as stores:
        records = (RawRecord("bench", i, e, json.dumps(e)) for i, e in enumerate(synthetic_events(count), 1))
        with _step(seconds, "ingest"):
            summary = ingest(stores, records)
        progress(f"ingested {summary.ingested} events in {seconds['ingest']} s")
        with _step(seconds, "episodes"):
            for day, platform in sorted(summary.partitions):
                build_episodes(stores, day, platform)
        progress(f"episodes for {len(summary.partitions)} partitions in {seconds['episodes']} s")
        with _step(seconds, "writer_output"), stores.transaction():
            SyntheticWriter(stores).write()
        progress(f"synthetic writer output in {seconds['writer_output']} s")
        with _step(seconds, "vectors"):
            embed_pending(stores, Embedder(DEFAULT_MODEL, _RandomModel()))
        progress(f"vectors in {seconds['vectors']} s")
    return seconds


class SyntheticWriter:
    """Writer output of plausible shape for every writer episode, written as rows (see the module doc)."""

    FAILURES = (
        "ToolError: unknown fact_id '{n}'",
        "APITimeoutError: Request timed out after {n} s",
        "ValueError: model returned no JSON object at char {n}",
    )
    ENTITY_TYPES = (("person", 0.35), ("location", 0.2), ("concept", 0.25), ("organization", 0.1), ("date", 0.1))

    def __init__(self, stores: Stores, seed: int = 11, pool: int = 3_000) -> None:
        self.stores = stores
        self.conn = stores.conn
        self.rng = np.random.default_rng(seed)
        self.pool = pool
        self.now = 1_700_000_000_000

    def write(self) -> None:
        senders = self._entities()
        rows = self.conn.execute(
            """SELECT ee.episode_id, e.id, e.sender_id, e.content, e.as_of FROM episode_events ee
               JOIN episodes ep ON ep.id = ee.episode_id JOIN events e ON e.id = ee.event_id
               WHERE ep.definition_id = 'def_thread_gap_30m' ORDER BY ee.episode_id, ee.position"""
        ).fetchall()
        members: dict[str, list[Any]] = {}
        for row in rows:
            members.setdefault(row[0], []).append(row)
        statuses = self.rng.choice(["ok", "failed", "skipped", None], size=len(members), p=[0.9, 0.03, 0.02, 0.05])
        facts_by_episode: dict[str, list[str]] = {}
        for (episode_id, events), status in zip(members.items(), statuses, strict=True):
            if status is None:
                continue  # pending: the writer has not run yet
            if status == "failed":
                error = self.FAILURES[int(self.rng.integers(3))].format(n=int(self.rng.integers(1, 10_000)))
            else:
                error = None
            written = self._facts(episode_id, events, senders) if status == "ok" else []
            facts_by_episode[episode_id] = [f.id for f in written]
            self.conn.execute(
                """INSERT INTO episode_processing (episode_id, status, writer, attempts, facts_written, error,
                       updated_at) VALUES (?, ?, 'synthetic', ?, ?, ?, ?)""",
                (episode_id, status, 1 + int(status == "failed"), len(written), error, self.now),
            )
            if status != "failed":
                self.conn.executemany(
                    "INSERT OR IGNORE INTO memory_processing_log (event_id, processed_at, created_at) VALUES (?, ?, ?)",
                    [(e[1], self.now, self.now) for e in events],
                )
        self._cooccurrences()
        self._merges()
        self._observations(facts_by_episode)

    def _entities(self) -> dict[str, str]:
        """A delivery entity per sender and a pool of inferred ones; {sender_id: entity id}."""
        senders = [r[0] for r in self.conn.execute("SELECT DISTINCT sender_id FROM events ORDER BY 1")]
        types, weights = zip(*self.ENTITY_TYPES, strict=True)
        pool_types = self.rng.choice(types, size=self.pool, p=weights)
        entities = [SyntheticEntity(f"snd{i}", s, "contact", "delivery") for i, s in enumerate(senders)]
        entities += [
            SyntheticEntity(f"ent{i}", f"{t.title()} {i}", str(t), "inferred") for i, t in enumerate(pool_types)
        ]
        write_entities(self.conn, entities)
        return {s: f"snd{i}" for i, s in enumerate(senders)}

    def _facts(self, episode_id: str, events: list[Any], senders: dict[str, str]) -> list[SyntheticFact]:
        facts, links = [], []
        for _, event_id, sender_id, content, as_of in events:
            for _ in range(int(self.rng.choice([0, 1, 1, 1, 2, 3]))):
                fact_id = f"f{self.rng.integers(1 << 62):x}"
                metadata = json.dumps({"episode_id": episode_id})
                facts.append(
                    SyntheticFact(fact_id, content[:160], as_of, as_of, 0, source_event_id=event_id, metadata=metadata)
                )
                mentioned = {int(m) % self.pool for m in self.rng.zipf(1.4, size=int(self.rng.integers(0, 3)))}
                links += [(fact_id, senders[sender_id], as_of)] + [(fact_id, f"ent{m}", as_of) for m in mentioned]
        write_facts(self.conn, facts)
        write_links(self.conn, links)
        return facts

    def _cooccurrences(self) -> None:
        self.conn.execute(
            """INSERT INTO entity_cooccurrences (entity_a, entity_b, count, last_seen)
               SELECT a.entity_id, b.entity_id, count(*), max(a.as_of) FROM fact_entities a
               JOIN fact_entities b ON b.fact_id = a.fact_id AND a.entity_id < b.entity_id
               GROUP BY a.entity_id, b.entity_id"""
        )
        self.conn.execute(
            """UPDATE entities
               SET mention_count = (SELECT count(*) FROM fact_entities fe WHERE fe.entity_id = entities.id)"""
        )

    def _merges(self) -> None:
        """Pending, accepted and rejected merge candidates among the pool, the accepted ones merged."""
        for i in range(60):
            a, b = f"ent{2 * i}", f"ent{2 * i + 1}"
            status = ("pending", "pending", "accepted", "rejected")[i % 4]
            self.conn.execute(
                """INSERT INTO merge_candidates (id, entity_a_id, entity_b_id, confidence, reason, auto_eligible,
                       status, created_at) VALUES (?, ?, ?, ?, 'similar name', ?, ?, ?)""",
                (f"mc{i}", a, b, round(0.5 + 0.008 * i, 3), int(i % 10 == 0), status, self.now),
            )
            if status == "accepted":
                self.conn.execute("UPDATE entities SET merged_into = ? WHERE id = ?", (a, b))

    def _observations(self, facts_by_episode: dict[str, list[str]]) -> None:
        """Observations over a fifth of the episodes, resting on their facts, which become consolidated."""
        self.conn.execute(
            """INSERT OR IGNORE INTO analysis_types (id, name, version, output_type, created_at)
               VALUES ('observation_v1', 'observation', '1', 'text', 0)"""
        )
        for episode_id, fact_ids in list(facts_by_episode.items())[::5]:
            if not fact_ids:
                continue
            run_id = f"obs_{episode_id}"
            self.conn.execute(
                """INSERT INTO analysis_runs (id, analysis_type_id, episode_id, status, output_text, created_at)
                   VALUES (?, 'observation_v1', ?, 'completed', 'an observation', ?)""",
                (run_id, episode_id, self.now),
            )
            self.conn.executemany(
                "INSERT INTO observation_facts (analysis_run_id, fact_id) VALUES (?, ?)",
                [(run_id, f) for f in fact_ids],
            )
            self.conn.executemany("UPDATE facts SET is_consolidated = 1 WHERE id = ?", [(f,) for f in fact_ids])


def time_sections(settings: Settings) -> dict[str, dict[str, float]]:
    """Seconds per section: computing its figures, and drawing its charts (what each asset does)."""
    timings: dict[str, dict[str, float]] = {}
    for name in SECTIONS:
        started = time.perf_counter()
        section = compute_section(name, settings)
        computed = time.perf_counter()
        for chart in section.charts.values():
            render_png(chart)
        timings[name] = {
            "figures_s": round(computed - started, 3),
            "charts_s": round(time.perf_counter() - computed, 3),
            "total_s": round(time.perf_counter() - started, 3),
        }
    return timings


def _event_count(settings: Settings) -> int:
    if not settings.store_path("events").exists():
        return 0
    with Stores(settings) as stores:
        return stores.conn.execute("SELECT count(*) FROM events").fetchone()[0]


def run(data_dir: Path, events: int = 100_000, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Build the store if `data_dir` does not hold `events` events yet, then time every analytics section."""
    settings = load_settings(data_dir=data_dir)
    result: dict[str, Any] = {"data_dir": str(data_dir), "events_asked": events}
    have = _event_count(settings)
    if have and have != events:
        raise ValueError(f"{data_dir} holds {have} events, not {events}: use another --data-dir or remove it")
    if not have:
        result["build_s"] = build_store(settings, events, progress)
    with Stores(settings) as stores:
        result["store"] = stores.counts()
    result["sections"] = time_sections(settings)
    result["total_s"] = round(sum(t["total_s"] for t in result["sections"].values()), 3)
    return result
