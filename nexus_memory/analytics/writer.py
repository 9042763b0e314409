"""What was built and what failed: episodes, facts per episode, failed episodes by reason, skips.

Outcomes come from episode_processing (one row per writer episode, its latest attempt); facts are
counted where the writer filed them, by the episode id in each fact's metadata, so facts written by
the per-turn path (no episode) show apart.
"""

from __future__ import annotations

import pyarrow as pa

from nexus_memory.analytics.frame import Frame, Read
from nexus_memory.analytics.model import Section, ratio
from nexus_memory.analytics.source import StoreReader
from nexus_memory.core.config import Settings
from nexus_memory.episodes.grouping import DEFINITIONS, WRITER_DEFINITION

TOP_REASONS = 20
# An error's reason: its first line with quoted values and numbers blanked, so one cause is one row.
REASON_SQL = """left(regexp_replace(regexp_replace(split_part(coalesce(o.error, '(no error recorded)'), chr(10), 1),
                 '''[^'']*''|"[^"]*"', '…', 'g'), '[0-9]+', '#', 'g'), 160)"""

_EPISODE_FACTS_SQL = """
    CREATE TEMP TABLE written AS
    SELECT ep.id, ep.platform, ep.definition_id, o.status, coalesce(o.attempts, 0) AS attempts,
           coalesce(f.facts, 0) AS facts
    FROM episodes ep
    LEFT JOIN outcomes o ON o.episode_id = ep.id
    LEFT JOIN (SELECT episode_id, count(*) AS facts FROM fact_episodes GROUP BY episode_id) f ON f.episode_id = ep.id
    WHERE ep.definition_id = ?"""


# What this section reads from the stores, by the name DuckDB knows each table under.
READS: dict[str, Read] = {
    "episodes": Read(
        "SELECT id, definition_id, platform, event_count, parent_id FROM episodes",
        {
            "id": pa.string(),
            "definition_id": pa.string(),
            "platform": pa.string(),
            "event_count": pa.int64(),
            "parent_id": pa.string(),
        },
    ),
    "outcomes": Read(
        """SELECT episode_id, status, attempts, prompt_tokens, completion_tokens, error, updated_at
           FROM episode_processing""",
        {
            "episode_id": pa.string(),
            "status": pa.string(),
            "attempts": pa.int64(),
            "prompt_tokens": pa.int64(),
            "completion_tokens": pa.int64(),
            "error": pa.string(),
            "updated_at": pa.int64(),
        },
    ),
    "fact_episodes": Read(
        """SELECT CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.episode_id') END AS episode_id
           FROM facts""",
        {"episode_id": pa.string()},
    ),
}


def writer_outcomes(reader: StoreReader, settings: Settings) -> Section:
    """Episodes per definition, writer outcomes per platform, facts per episode, failures by reason."""
    section = Section("writer_outcomes", "What was built and what failed")
    with Frame(reader, READS) as frame:
        frame.con.execute(_EPISODE_FACTS_SQL, [DEFINITIONS[WRITER_DEFINITION].id])
        _outcomes(frame, section)
        _facts_per_episode(frame, section)
        _failures(frame, section)
    section.notes.append(
        "writer_skip_rate: writer episodes whose events had all been processed already (by the per-turn path "
        "or an earlier version of the episode), over episodes with an outcome. The writer's near-duplicate "
        "guard (a fact like one already stored is not written again) is not recorded in the stores, so it "
        "has no rate here."
    )
    return section


def _outcomes(frame: Frame, section: Section) -> None:
    counts = frame.row(
        """SELECT (SELECT count(*) FROM episodes) AS episodes,
                  count(*) AS writer_episodes,
                  count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM episodes c WHERE c.parent_id = w.id))
                      AS writer_episodes_current,
                  count(*) FILTER (WHERE status = 'ok') AS ok,
                  count(*) FILTER (WHERE status = 'skipped') AS skipped,
                  count(*) FILTER (WHERE status = 'failed') AS failed,
                  count(*) FILTER (WHERE status IS NULL) AS pending
           FROM written w"""
    )
    section.numbers.update(counts)
    section.numbers["writer_skip_rate"] = ratio(counts["skipped"], counts["ok"] + counts["skipped"] + counts["failed"])
    section.numbers.update(
        frame.row(
            "SELECT sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens FROM outcomes"
        )
    )
    section.tables["outcomes_by_platform"] = frame.table(
        """SELECT platform, count(*) AS episodes,
                  count(*) FILTER (WHERE status = 'ok') AS ok,
                  count(*) FILTER (WHERE status = 'skipped') AS skipped,
                  count(*) FILTER (WHERE status = 'failed') AS failed,
                  count(*) FILTER (WHERE status IS NULL) AS pending,
                  sum(facts) AS facts, sum(attempts) AS attempts
           FROM written GROUP BY platform ORDER BY episodes DESC, platform"""
    )
    section.tables["episodes_by_definition"] = frame.table(
        """SELECT ep.definition_id AS definition, count(*) AS episodes,
                  count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM episodes c WHERE c.parent_id = ep.id))
                      AS current_versions,
                  round(avg(ep.event_count), 2) AS avg_events
           FROM episodes ep GROUP BY ep.definition_id ORDER BY episodes DESC, definition"""
    )


def _facts_per_episode(frame: Frame, section: Section) -> None:
    stats = frame.row(
        """SELECT (SELECT count(*) FROM fact_episodes) AS facts,
                  (SELECT count(*) FROM fact_episodes WHERE episode_id IS NULL) AS facts_outside_episodes,
                  avg(facts) AS facts_per_episode_mean, median(facts) AS facts_per_episode_median,
                  quantile_disc(facts, 0.9) AS facts_per_episode_p90, max(facts) AS facts_per_episode_max,
                  count(*) FILTER (WHERE facts = 0) AS ok_episodes_without_facts
           FROM written WHERE status = 'ok'"""
    )
    section.numbers.update(stats)
    section.tables["facts_per_episode"] = frame.table(
        """SELECT bucket AS facts, count(w.id) AS episodes FROM (VALUES
                  (0, '0', 0, 0), (1, '1', 1, 1), (2, '2-3', 2, 3), (3, '4-7', 4, 7), (4, '8-15', 8, 15),
                  (5, '16+', 16, NULL)) b(i, bucket, lo, hi)
           LEFT JOIN written w ON w.status = 'ok' AND w.facts >= b.lo AND (b.hi IS NULL OR w.facts <= b.hi)
           GROUP BY b.i, bucket ORDER BY b.i"""
    )


def _failures(frame: Frame, section: Section) -> None:
    table = frame.table(
        f"""SELECT {REASON_SQL} AS reason, count(*) AS episodes, count(DISTINCT ep.platform) AS platforms,
                   min(o.episode_id) AS example_episode,
                   strftime(epoch_ms(max(o.updated_at)), '%Y-%m-%d %H:%M') AS last_failed_utc
            FROM outcomes o JOIN episodes ep ON ep.id = o.episode_id
            WHERE o.status = 'failed'
            GROUP BY reason ORDER BY episodes DESC, reason"""
    )
    section.numbers["failure_reasons"] = len(table.rows)
    table.rows = table.rows[:TOP_REASONS]
    section.tables["failed_by_reason"] = table
