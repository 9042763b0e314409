"""What came in and what is still waiting: events per platform per day, the backlog, ingest dedup.

An event is processed once it is in memory_processing_log (the writer logs every event of an episode
it finished, in the same transaction) or belongs to a writer episode whose outcome is 'ok'. Whatever
else is backlog, by the step it waits on: no writer episode yet, an episode the writer has not run,
or an episode whose run failed. Events dated before NEXUS_PARTITION_START have no partition, so the
pipeline never picks them up: they are counted apart.
"""

from __future__ import annotations

import pyarrow as pa

from nexus_memory.analytics.frame import Frame, Read
from nexus_memory.analytics.model import Chart, Section, Table, ratio
from nexus_memory.analytics.source import StoreReader
from nexus_memory.core.config import Settings
from nexus_memory.episodes.grouping import DEFINITIONS, WRITER_DEFINITION

RECENT_DAYS = 31
RECENT_PLATFORMS = 8
RECENT_FILES = 20

_STATE_SQL = """
    WITH writer AS (
        SELECT we.event_id, bool_or(o.status = 'ok') AS ok, bool_or(o.status = 'failed') AS failed
        FROM writer_events we LEFT JOIN outcomes o ON o.episode_id = we.episode_id
        GROUP BY we.event_id)
    SELECT e.platform, e.day,
           CASE WHEN l.event_id IS NOT NULL OR coalesce(w.ok, false) THEN 'processed'
                WHEN coalesce(w.failed, false) THEN 'episode_failed'
                WHEN w.event_id IS NOT NULL THEN 'episode_pending'
                ELSE 'no_episode' END AS state
    FROM events e
    LEFT JOIN processed l ON l.event_id = e.id
    LEFT JOIN writer w ON w.event_id = e.id"""


# What this section reads from the stores, by the name DuckDB knows each table under.
READS: dict[str, Read] = {
    "events": Read(
        "SELECT id, platform, day FROM events", {"id": pa.string(), "platform": pa.string(), "day": pa.string()}
    ),
    "processed": Read("SELECT event_id FROM memory_processing_log", {"event_id": pa.string()}),
    "writer_events": Read(
        """SELECT episode_id, event_id FROM episode_events
           WHERE episode_id IN (SELECT id FROM episodes WHERE definition_id = ?)""",
        {"episode_id": pa.string(), "event_id": pa.string()},
        (DEFINITIONS[WRITER_DEFINITION].id,),
    ),
    "outcomes": Read(
        "SELECT episode_id, status FROM episode_processing", {"episode_id": pa.string(), "status": pa.string()}
    ),
    "files": Read(
        """SELECT path, format, ingested_at,
                  CASE WHEN json_valid(summary) THEN json_extract(summary, '$.read') END AS read,
                  CASE WHEN json_valid(summary) THEN json_extract(summary, '$.ingested') END AS ingested,
                  CASE WHEN json_valid(summary) THEN json_extract(summary, '$.duplicates') END AS duplicates,
                  CASE WHEN json_valid(summary) THEN json_extract(summary, '$.rejected') END AS rejected
           FROM ingested_files""",
        {
            "path": pa.string(),
            "format": pa.string(),
            "ingested_at": pa.int64(),
            "read": pa.int64(),
            "ingested": pa.int64(),
            "duplicates": pa.int64(),
            "rejected": pa.int64(),
        },
    ),
    "rejects": Read(
        "SELECT count(*) AS unresolved FROM event_rejects WHERE resolved_at IS NULL", {"unresolved": pa.int64()}
    ),
}


def ingest_activity(reader: StoreReader, settings: Settings) -> Section:
    """Events per platform per day (chart and last days), the backlog per platform, ingest dedup."""
    section = Section("ingest_activity", "What came in and what is still waiting")
    with Frame(reader, READS) as frame:
        frame.con.execute(f"CREATE TEMP TABLE state AS {_STATE_SQL}")
        _backlog(frame, section, settings.partition_start)
        _days(frame, section)
        _ingest_dedup(frame, section)
    return section


def _backlog(frame: Frame, section: Section, partition_start: str) -> None:
    totals = frame.row(
        """SELECT count(*) AS events, count(DISTINCT platform) AS platforms, count(DISTINCT day) AS days_with_events,
                  count(*) FILTER (WHERE state = 'processed') AS processed_events,
                  count(*) FILTER (WHERE state != 'processed') AS backlog_events,
                  count(*) FILTER (WHERE state = 'no_episode') AS backlog_no_episode,
                  count(*) FILTER (WHERE state = 'episode_pending') AS backlog_episode_pending,
                  count(*) FILTER (WHERE state = 'episode_failed') AS backlog_episode_failed,
                  count(*) FILTER (WHERE state != 'processed' AND day < ?) AS backlog_before_partition_start
           FROM state""",
        [partition_start],
    )
    section.numbers.update(totals)
    section.numbers["processed_share"] = ratio(totals["processed_events"], totals["events"])
    section.tables["backlog_by_platform"] = frame.table(
        """SELECT platform, count(*) AS events,
                  count(*) FILTER (WHERE state = 'processed') AS processed,
                  count(*) FILTER (WHERE state = 'no_episode') AS no_episode,
                  count(*) FILTER (WHERE state = 'episode_pending') AS episode_pending,
                  count(*) FILTER (WHERE state = 'episode_failed') AS episode_failed,
                  count(*) FILTER (WHERE state != 'processed') AS backlog,
                  min(day) AS first_day, max(day) AS last_day
           FROM state GROUP BY platform ORDER BY events DESC, platform"""
    )


def _days(frame: Frame, section: Section) -> None:
    per_day = frame.table(
        "SELECT day, platform, count(*) AS events FROM events GROUP BY day, platform ORDER BY day, platform"
    )
    section.charts["events_per_day"] = Chart(
        "Events per day per platform (UTC days)", "day", "events", "platform", per_day
    )
    section.tables[f"events_last_{RECENT_DAYS}_days"] = _recent_days(frame)


def _recent_days(frame: Frame) -> Table:
    """The last RECENT_DAYS calendar days up to the newest event, one column per platform (0 when quiet).

    The busiest RECENT_PLATFORMS platforms get a column each; the rest are summed under 'other'.
    """
    long = frame.table(
        """WITH last AS (SELECT max(day)::DATE AS d FROM events),
                days AS (SELECT strftime(r.range, '%Y-%m-%d') AS day
                         FROM last, range(last.d - INTERVAL (? - 1) DAY, last.d + INTERVAL 1 DAY, INTERVAL 1 DAY) r)
           SELECT d.day, e.platform, count(e.id) AS events
           FROM days d LEFT JOIN events e ON e.day = d.day
           GROUP BY d.day, e.platform ORDER BY d.day DESC""",
        [RECENT_DAYS],
    )
    totals: dict[str, int] = {}
    for r in long.rows:
        if r["platform"] is not None:
            totals[r["platform"]] = totals.get(r["platform"], 0) + r["events"]
    ranked = sorted(totals, key=lambda p: (-totals[p], p))
    # A column per platform, named after it unless that name is taken by a fixed column.
    names = {p: p if p not in ("day", "other", "total") else f"{p} (platform)" for p in ranked[:RECENT_PLATFORMS]}
    columns = {"day": "string", **dict.fromkeys(names.values(), "int")}
    if len(ranked) > RECENT_PLATFORMS:
        columns["other"] = "int"
    columns["total"] = "int"
    by_day: dict[str, dict[str, int]] = {}
    for r in long.rows:
        counts = by_day.setdefault(r["day"], dict.fromkeys(list(columns)[1:], 0))
        if r["platform"] is not None:
            counts[names.get(r["platform"], "other")] += r["events"]
            counts["total"] += r["events"]
    return Table(columns, [{"day": day, **counts} for day, counts in by_day.items()])


def _ingest_dedup(frame: Frame, section: Section) -> None:
    files = frame.row(
        """SELECT count(*) AS files_ingested, sum(read) AS records_read, sum(ingested) AS records_ingested,
                  sum(duplicates) AS duplicates_skipped, sum(rejected) AS records_rejected FROM files"""
    )
    section.numbers.update(files)
    section.numbers["ingest_dedup_rate"] = ratio(files["duplicates_skipped"], files["records_read"])
    section.numbers["unresolved_rejects"] = frame.row("SELECT sum(unresolved) AS n FROM rejects")["n"]
    section.tables["recent_files"] = frame.table(
        """SELECT path, format, strftime(epoch_ms(ingested_at), '%Y-%m-%d %H:%M') AS ingested_utc,
                  read, ingested, duplicates, rejected
           FROM files ORDER BY ingested_at DESC, path LIMIT ?""",
        [RECENT_FILES],
    )
    section.notes.append(
        "ingest_dedup_rate: records an import skipped because the ledger already held them (same id or "
        "content hash), over records read, for files imported with `nexus-memory ingest` or the inbox sensor; "
        "a file imported again replaces its earlier summary."
    )
