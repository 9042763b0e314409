"""Which rows have vectors: coverage per model and target type, orphans, and stale fact vectors.

The canonical `embeddings` table holds one vector per (target, model); the search index serves one
model (vector_index_state). A target is what embed_pending embeds: every fact, every observation with
text, every live entity, every mental model. An orphan is a vector whose target is gone (a merged
entity, a deleted fact). Stale vectors are counted by embeddings.stale_fact_vectors on the newest
fact vectors of the index's model.
"""

from __future__ import annotations

import pyarrow as pa

from nexus_memory.analytics.frame import Frame, Read
from nexus_memory.analytics.model import Section, ratio
from nexus_memory.analytics.source import StoreReader
from nexus_memory.core.config import Settings
from nexus_memory.embeddings.step import stale_fact_vectors

STALE_SAMPLE = 1_000

# What should have a vector, by target type (the rows embeddings._PENDING_SQL picks up).
_TARGETS_SQL = """
    SELECT 'fact' AS target_type, id AS target_id FROM facts
    UNION ALL SELECT 'observation', id FROM analysis_runs
        WHERE analysis_type_id = 'observation_v1' AND output_text IS NOT NULL AND output_text != ''
    UNION ALL SELECT 'entity', id FROM entities WHERE merged_into IS NULL
    UNION ALL SELECT 'mental_model', id FROM mental_models"""

_COVERAGE_SQL = """
    WITH models AS (SELECT DISTINCT model FROM vectors UNION SELECT model FROM index_state),
         kinds AS (SELECT DISTINCT target_type FROM targets UNION SELECT DISTINCT target_type FROM vectors),
         wanted AS (SELECT target_type, count(*) AS targets FROM targets GROUP BY target_type),
         have AS (SELECT v.model, v.target_type, count(*) AS vectors,
                         count(t.target_id) AS embedded, count(*) - count(t.target_id) AS orphans,
                         count(*) FILTER (WHERE v.no_hash = 1) AS without_text_hash
                  FROM vectors v LEFT JOIN targets t ON t.target_type = v.target_type AND t.target_id = v.target_id
                  GROUP BY v.model, v.target_type)
    SELECT m.model, k.target_type, (m.model IN (SELECT model FROM index_state)) AS in_index,
           coalesce(w.targets, 0) AS targets, coalesce(h.vectors, 0) AS vectors,
           coalesce(w.targets, 0) - coalesce(h.embedded, 0) AS missing,
           CASE WHEN coalesce(w.targets, 0) = 0 THEN 0.0
                ELSE round(coalesce(h.embedded, 0) / w.targets, 4) END AS coverage,
           coalesce(h.orphans, 0) AS orphans, coalesce(h.without_text_hash, 0) AS without_text_hash
    FROM models m CROSS JOIN kinds k
    LEFT JOIN wanted w ON w.target_type = k.target_type
    LEFT JOIN have h ON h.model = m.model AND h.target_type = k.target_type
    ORDER BY in_index DESC, m.model, k.target_type"""


# What this section reads from the stores, by the name DuckDB knows each table under.
READS: dict[str, Read] = {
    "vectors": Read(
        "SELECT target_type, target_id, model, CAST(text_hash IS NULL AS INTEGER) AS no_hash FROM embeddings",
        {"target_type": pa.string(), "target_id": pa.string(), "model": pa.string(), "no_hash": pa.int64()},
    ),
    "targets": Read(f"SELECT * FROM ({_TARGETS_SQL})", {"target_type": pa.string(), "target_id": pa.string()}),
    "index_state": Read(
        "SELECT model, dimension, built_at FROM vector_index_state",
        {"model": pa.string(), "dimension": pa.int64(), "built_at": pa.int64()},
    ),
}


def embedding_coverage(reader: StoreReader, settings: Settings) -> Section:
    """Vectors per model and target type against what should have one; stale fact vectors."""
    section = Section("embedding_coverage", "Which rows have vectors")
    with Frame(reader, READS) as frame:
        coverage = frame.table(_COVERAGE_SQL)
        for row in coverage.rows:
            row["in_index"] = "yes" if row["in_index"] else "no"
        coverage.columns["in_index"] = "string"
        section.tables["coverage"] = coverage
        section.tables["index"] = frame.table(
            "SELECT model, dimension, strftime(epoch_ms(built_at), '%Y-%m-%d %H:%M') AS built_utc FROM index_state"
        )
        index = frame.row("SELECT model FROM index_state")["model"] or None
        section.numbers.update(
            frame.row(
                """SELECT count(*) AS vectors, count(DISTINCT model) AS models,
                          count(*) FILTER (WHERE no_hash = 1) AS vectors_without_text_hash FROM vectors"""
            )
        )
        section.numbers["facts"] = frame.row("SELECT count(*) AS n FROM targets WHERE target_type = 'fact'")["n"]
    # The index model's row for facts; without an index no fact has a vector that recall can use.
    facts = next((r for r in coverage.rows if r["in_index"] == "yes" and r["target_type"] == "fact"), None)
    section.numbers["facts_missing_vectors"] = facts["missing"] if facts else section.numbers["facts"]
    section.numbers["fact_coverage"] = facts["coverage"] if facts else 0.0
    section.numbers["orphan_vectors"] = sum(r["orphans"] for r in coverage.rows)
    stale = stale_fact_vectors(reader, index, STALE_SAMPLE) if index else None
    section.numbers["stale_checked"] = stale.checked if stale else 0
    section.numbers["stale_vectors"] = stale.stale if stale else 0
    section.numbers["stale_unknown"] = stale.unknown if stale else 0
    section.numbers["stale_share"] = ratio(stale.stale + stale.unknown, stale.checked) if stale else 0.0
    section.notes.append(
        "The pipeline's embeddings asset embeds facts; other target types get vectors on request "
        "(nexus-memory rebuild-index --reembed TYPE), so their coverage may rightly be low."
    )
    if index is None:
        section.notes.append("No vector index yet: nothing has been embedded (the embeddings asset builds it).")
    section.notes.append(
        f"stale_*: of the newest {STALE_SAMPLE} fact vectors of the index's model, those made from another text "
        "than the one embedded today (stale) or before text hashes were kept (unknown); reembed_job redoes them."
    )
    return section
