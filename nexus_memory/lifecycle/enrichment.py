"""Nightly entity enrichment: facts with few entity links are read again by the most accurate entity
finder available, and stamped (fact_state.enriched_at) so no fact is read twice.

The writer extracts entities one episode at a time, knowing only that episode's speakers; a name that
starts a sentence ("Marta plays the cello") is skipped unless it is known. At night every person the
identity store knows is known, so the offline writer's entity finder, given all of them, links what the
writer could not. Links go through the writer's own tool (co-occurrences and mention counts included).
It runs before consolidation, so new links are there when observations are built.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms, ulid
from nexus_memory.core.stores import Stores
from nexus_memory.facts import state
from nexus_memory.facts.state import hidden_sql
from nexus_memory.identity import store as identity
from nexus_memory.lifecycle import runs
from nexus_memory.writer.extractor import find_entities
from nexus_memory.writer.extractor.names import NameBook
from nexus_memory.writer.tools import WriterTools

MAX_LINKS = 1  # a fact with at most this many entity links is "few"
PER_RUN = 5_000
KNOWN_ALIAS_TYPES = ("name", "display_name", "nickname")


@dataclass
class EnrichmentReport:
    facts_read: int = 0
    facts_enriched: int = 0  # gained at least one link
    links_added: int = 0
    entities_created: int = 0
    finder: str = "offline"
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def enrich(
    stores: Stores, *, now: int | None = None, limit: int | None = None, max_links: int = MAX_LINKS
) -> EnrichmentReport:
    """Re-read up to `limit` (default PER_RUN) facts with at most `max_links` entity links, never enriched."""
    started = time.perf_counter()
    limit = PER_RUN if limit is None else limit
    now = now_ms() if now is None else now
    conn = stores.conn
    report = EnrichmentReport()
    rows = conn.execute(
        f"""SELECT f.id, f.text, f.as_of FROM facts f LEFT JOIN fact_state s ON s.fact_id = f.id
            WHERE s.enriched_at IS NULL AND NOT {hidden_sql("f")}
              AND (SELECT count(*) FROM fact_entities fe WHERE fe.fact_id = f.id) <= ?
            ORDER BY f.rowid LIMIT ?""",
        (max_links, limit),
    ).fetchall()
    if rows:
        book = NameBook({})
        for name in known_person_names(conn):
            book.add_known(name)
        entities_before = conn.execute("SELECT count(*) FROM entities").fetchone()[0]
        with db.transaction(conn):
            tools = WriterTools(stores, ulid(now), writer="enrichment")
            for fact_id, text, as_of in rows:
                added = 0
                for mention in find_entities(text, book):
                    entity_id = identity.resolve_or_create(conn, mention.name, mention.type, seen_at=as_of)
                    added += tools.link_fact_entity(fact_id, entity_id)["status"] == "linked"
                report.facts_enriched += added > 0
                report.links_added += added
            state.stamp_enriched(conn, [r[0] for r in rows], now)
            report.facts_read = len(rows)
            report.entities_created = conn.execute("SELECT count(*) FROM entities").fetchone()[0] - entities_before
    report.seconds = round(time.perf_counter() - started, 3)
    with db.transaction(conn):
        runs.record_run(conn, "enrichment", now, now_ms(), report.as_dict())
    return report


def known_person_names(conn: db.Connection) -> list[str]:
    """Names and name-like aliases of every live person entity."""
    rows = conn.execute(
        f"""SELECT name FROM entities WHERE type = 'person' AND merged_into IS NULL
            UNION SELECT a.alias FROM aliases a JOIN entities e ON e.id = a.entity_id
            WHERE a.alias_type IN ({db.placeholders(KNOWN_ALIAS_TYPES)}) AND e.merged_into IS NULL""",
        KNOWN_ALIAS_TYPES,
    ).fetchall()
    return sorted({r[0].strip() for r in rows if r[0] and r[0].strip()})
