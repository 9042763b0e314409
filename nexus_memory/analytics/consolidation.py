"""How much of memory is consolidated: facts folded into observations, left isolated, still waiting.

Consolidation reads each unconsolidated fact, writes or updates observations (analysis_runs of type
'observation_v1', linked to the facts they rest on by observation_facts) and marks the fact
consolidated; a fact with nothing related is marked and left alone ("isolated"). A fact counts as
consolidated when it is marked or supports an observation. An observation is current unless a newer
version names it as parent. An empty layer reads as zeros.
"""

from __future__ import annotations

import pyarrow as pa

from nexus_memory.analytics.frame import Frame, Read
from nexus_memory.analytics.model import Section, ratio
from nexus_memory.analytics.source import StoreReader
from nexus_memory.core.config import Settings
from nexus_memory.recall.filters import OBSERVATION_TYPE

TOP_ENTITIES = 20

_FACT_STATE_SQL = """
    CREATE TEMP TABLE fact_state AS
    SELECT f.id, f.consolidated = 1 OR s.fact_id IS NOT NULL AS consolidated, s.fact_id IS NOT NULL AS supports
    FROM facts f LEFT JOIN (SELECT DISTINCT fact_id FROM support) s ON s.fact_id = f.id"""

_ENTITY_OBSERVATIONS_SQL = """
    CREATE TEMP TABLE entity_observations AS
    SELECT fe.entity_id, count(DISTINCT fe.fact_id) AS facts,
           count(DISTINCT fe.fact_id) FILTER (WHERE fs.consolidated) AS facts_consolidated,
           count(DISTINCT s.analysis_run_id) FILTER (WHERE o.current) AS observations
    FROM fact_entities fe
    JOIN fact_state fs ON fs.id = fe.fact_id
    LEFT JOIN support s ON s.fact_id = fe.fact_id
    LEFT JOIN observations o ON o.id = s.analysis_run_id
    GROUP BY fe.entity_id"""


# What this section reads from the stores, by the name DuckDB knows each table under.
READS: dict[str, Read] = {
    "facts": Read(
        "SELECT id, CAST(coalesce(is_consolidated, 0) AS INTEGER) AS consolidated FROM facts",
        {"id": pa.string(), "consolidated": pa.int64()},
    ),
    "runs": Read(
        "SELECT id, parent_id, CAST(coalesce(is_stale, 0) AS INTEGER) AS stale FROM analysis_runs "
        "WHERE analysis_type_id = ?",
        {"id": pa.string(), "parent_id": pa.string(), "stale": pa.int64()},
        (OBSERVATION_TYPE,),
    ),
    "support": Read(
        """SELECT analysis_run_id, fact_id FROM observation_facts
           WHERE analysis_run_id IN (SELECT id FROM analysis_runs WHERE analysis_type_id = ?)""",
        {"analysis_run_id": pa.string(), "fact_id": pa.string()},
        (OBSERVATION_TYPE,),
    ),
    "fact_entities": Read(
        "SELECT fact_id, entity_id FROM fact_entities", {"fact_id": pa.string(), "entity_id": pa.string()}
    ),
    "entities": Read(
        "SELECT id, name, type FROM entities", {"id": pa.string(), "name": pa.string(), "type": pa.string()}
    ),
}


def consolidation_coverage(reader: StoreReader, settings: Settings) -> Section:
    """Facts consolidated, in observations, isolated and waiting; observations per entity."""
    section = Section("consolidation_coverage", "How much of memory is consolidated")
    with Frame(reader, READS) as frame:
        frame.con.execute(
            """CREATE TEMP TABLE observations AS
               SELECT r.id, r.stale, NOT EXISTS (SELECT 1 FROM runs c WHERE c.parent_id = r.id) AS current
               FROM runs r"""
        )
        frame.con.execute(_FACT_STATE_SQL)
        frame.con.execute(_ENTITY_OBSERVATIONS_SQL)
        _facts(frame, section)
        _observations(frame, section)
    if not section.numbers["observations"]:
        section.notes.append("No observations yet: the consolidation layer has not written any.")
    return section


def _facts(frame: Frame, section: Section) -> None:
    counts = frame.row(
        """SELECT count(*) AS facts,
                  count(*) FILTER (WHERE consolidated) AS facts_consolidated,
                  count(*) FILTER (WHERE supports) AS facts_in_observations,
                  count(*) FILTER (WHERE consolidated AND NOT supports) AS facts_isolated,
                  count(*) FILTER (WHERE NOT consolidated) AS facts_unconsolidated
           FROM fact_state"""
    )
    section.numbers.update(counts)
    section.numbers["consolidated_share"] = ratio(counts["facts_consolidated"], counts["facts"])


def _observations(frame: Frame, section: Section) -> None:
    section.numbers.update(
        frame.row(
            """SELECT count(*) FILTER (WHERE current) AS observations,
                      count(*) AS observation_versions,
                      count(*) FILTER (WHERE current AND stale = 1) AS observations_stale
               FROM observations"""
        )
    )
    per_entity = frame.row(
        """SELECT count(*) AS entities_with_facts,
                  count(*) FILTER (WHERE observations > 0) AS entities_with_observations,
                  avg(observations) AS observations_per_entity_mean,
                  max(observations) AS observations_per_entity_max
           FROM entity_observations"""
    )
    section.numbers.update(per_entity)
    section.tables["top_entities_by_observations"] = frame.table(
        """SELECT coalesce(e.name, eo.entity_id) AS entity, e.type, eo.observations, eo.facts, eo.facts_consolidated
           FROM entity_observations eo LEFT JOIN entities e ON e.id = eo.entity_id
           WHERE eo.observations > 0
           ORDER BY eo.observations DESC, eo.facts DESC, entity LIMIT ?""",
        [TOP_ENTITIES],
    )
