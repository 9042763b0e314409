"""Who memory knows about: entities by type and source, the pairs seen together, merges waiting.

Co-occurrence counts are kept per entity id as they were when the fact was linked; a later merge moves
fact links to the surviving entity but not those counts, so pairs are summed here after following
each side's merged_into chain to the entity that survives.
"""

from __future__ import annotations

import pyarrow as pa

from nexus_memory.analytics.frame import Frame, Read
from nexus_memory.analytics.model import Section
from nexus_memory.analytics.source import StoreReader
from nexus_memory.core.config import Settings

TOP_TYPES = 50
TOP_PAIRS = 20
TOP_CANDIDATES = 20
MAX_MERGE_DEPTH = 64  # a merged_into chain longer than this (or a cycle) stops where it is

_SURVIVOR_SQL = """
    CREATE TEMP TABLE survivor AS
    WITH RECURSIVE walk(id, target, depth) AS (
        SELECT id, id, 0 FROM entities
        UNION ALL
        SELECT w.id, e.merged_into, w.depth + 1 FROM walk w JOIN entities e ON e.id = w.target
        WHERE e.merged_into IS NOT NULL AND w.depth < ?)
    SELECT id, arg_max(target, depth) AS survivor FROM walk GROUP BY id"""

_PAIRS_SQL = """
    CREATE TEMP TABLE pairs AS
    SELECT least(sa, sb) AS a, greatest(sa, sb) AS b, sum(n) AS facts_together
    FROM (SELECT coalesce(x.survivor, c.entity_a) AS sa, coalesce(y.survivor, c.entity_b) AS sb, c.count AS n
          FROM cooccurrences c
          LEFT JOIN survivor x ON x.id = c.entity_a LEFT JOIN survivor y ON y.id = c.entity_b)
    WHERE sa != sb
    GROUP BY 1, 2"""


# What this section reads from the stores, by the name DuckDB knows each table under.
READS: dict[str, Read] = {
    "entities": Read(
        "SELECT id, name, type, source, merged_into, mention_count FROM entities",
        {
            "id": pa.string(),
            "name": pa.string(),
            "type": pa.string(),
            "source": pa.string(),
            "merged_into": pa.string(),
            "mention_count": pa.int64(),
        },
    ),
    "cooccurrences": Read(
        "SELECT entity_a, entity_b, count FROM entity_cooccurrences",
        {"entity_a": pa.string(), "entity_b": pa.string(), "count": pa.int64()},
    ),
    "candidates": Read(
        """SELECT entity_a_id, entity_b_id, confidence, reason, CAST(auto_eligible AS INTEGER) AS auto_eligible,
                  status, created_at FROM merge_candidates""",
        {
            "entity_a_id": pa.string(),
            "entity_b_id": pa.string(),
            "confidence": pa.float64(),
            "reason": pa.string(),
            "auto_eligible": pa.int64(),
            "status": pa.string(),
            "created_at": pa.int64(),
        },
    ),
}


def entity_graph(reader: StoreReader, settings: Settings) -> Section:
    """Entity counts by type and source, the top co-occurring pairs, merge candidates by status."""
    section = Section("entity_graph", "Who memory knows about")
    with Frame(reader, READS) as frame:
        frame.con.execute(_SURVIVOR_SQL, [MAX_MERGE_DEPTH])
        frame.con.execute(_PAIRS_SQL)
        _counts(frame, section)
        _pairs(frame, section)
        _candidates(frame, section)
    return section


def _counts(frame: Frame, section: Section) -> None:
    section.numbers.update(
        frame.row(
            """SELECT count(*) FILTER (WHERE merged_into IS NULL) AS entities_live,
                      count(*) FILTER (WHERE merged_into IS NOT NULL) AS entities_merged,
                      count(DISTINCT type) FILTER (WHERE merged_into IS NULL) AS entity_types,
                      count(*) FILTER (WHERE merged_into IS NULL AND source = 'delivery') AS entities_delivery,
                      count(*) FILTER (WHERE merged_into IS NULL AND source = 'inferred') AS entities_inferred,
                      count(*) FILTER (WHERE merged_into IS NULL AND source = 'user') AS entities_user,
                      count(*) FILTER (WHERE merged_into IS NULL AND source = 'import') AS entities_import
               FROM entities"""
        )
    )
    table = frame.table(
        """SELECT type, source, count(*) AS entities, sum(mention_count) AS mentions
           FROM entities WHERE merged_into IS NULL
           GROUP BY type, source ORDER BY entities DESC, type, source"""
    )
    table.rows = table.rows[:TOP_TYPES]
    section.tables["entities_by_type_source"] = table


def _pairs(frame: Frame, section: Section) -> None:
    section.numbers["cooccurring_pairs"] = frame.row("SELECT count(*) AS n FROM pairs")["n"]
    section.tables["top_pairs"] = frame.table(
        """SELECT ea.name AS entity_a, ea.type AS type_a, eb.name AS entity_b, eb.type AS type_b, p.facts_together
           FROM pairs p JOIN entities ea ON ea.id = p.a JOIN entities eb ON eb.id = p.b
           ORDER BY p.facts_together DESC, entity_a, entity_b LIMIT ?""",
        [TOP_PAIRS],
    )


def _candidates(frame: Frame, section: Section) -> None:
    section.numbers.update(
        frame.row(
            """SELECT count(*) FILTER (WHERE status = 'pending') AS merge_candidates_pending,
                      count(*) FILTER (WHERE status = 'pending' AND auto_eligible = 1)
                          AS merge_candidates_auto_eligible,
                      count(*) FILTER (WHERE status = 'accepted') AS merges_accepted,
                      count(*) FILTER (WHERE status = 'auto_merged') AS merges_automatic,
                      count(*) FILTER (WHERE status = 'rejected') AS merges_rejected
               FROM candidates"""
        )
    )
    section.tables["pending_merges"] = frame.table(
        """SELECT eb.name AS merge, eb.type AS merge_type, ea.name AS into_entity, ea.type AS into_type,
                  c.confidence, c.reason, c.auto_eligible,
                  strftime(epoch_ms(c.created_at), '%Y-%m-%d %H:%M') AS proposed_utc
           FROM candidates c
           LEFT JOIN entities ea ON ea.id = c.entity_a_id LEFT JOIN entities eb ON eb.id = c.entity_b_id
           WHERE c.status = 'pending'
           ORDER BY c.confidence DESC, c.created_at, merge LIMIT ?""",
        [TOP_CANDIDATES],
    )
