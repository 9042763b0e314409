"""Sensors: new events (inbox files and new ledger rows) launch runs for exactly the partitions they touch."""

import hashlib
import json
from pathlib import Path

import dagster as dg

from nexus_memory.ingest import detect_format, ingest_file
from nexus_memory_assets.jobs import memory_pipeline_job
from nexus_memory_assets.partitions import partition_key, platform_partitions
from resources import StoresResource

INBOX_SUFFIXES = (".jsonl", ".json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dg.sensor(
    job=memory_pipeline_job,
    minimum_interval_seconds=15,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Ingests files dropped into the inbox and picks up new rows in events.db; "
    "requests runs only for the (day, platform) partitions that changed.",
)
def new_events_sensor(context: dg.SensorEvaluationContext, stores: StoresResource) -> dg.SensorResult:
    cursor = json.loads(context.cursor) if context.cursor else {"ingested_at": 0}
    settings = stores.settings()
    inbox = Path(settings.inbox_dir)
    with stores.open() as s:
        # 1. Inbox files: ingest each new file once (by content hash), whatever its name.
        for path in sorted(inbox.glob("*")) if inbox.is_dir() else []:
            if path.suffix not in INBOX_SUFFIXES or not path.is_file():
                continue
            digest = _sha256(path)
            if s.conn.execute("SELECT 1 FROM ingested_files WHERE sha256 = ?", (digest,)).fetchone():
                continue
            summary = ingest_file(s, path, detect_format(path), sha256=digest)
            context.log.info(f"ingested {path.name}: {summary.as_dict()}")
        # 2. New ledger rows since the cursor, from the inbox or any other ingest path.
        rows = s.conn.execute(
            "SELECT day, platform, max(ingested_at) FROM events WHERE ingested_at > ? GROUP BY day, platform",
            (cursor["ingested_at"],),
        ).fetchall()
    if not rows:
        return dg.SkipReason("no new events")
    high_water = max(r[2] for r in rows)
    start = settings.partition_start
    for day, platform, _ in rows:
        if day < start:
            context.log.warning(f"{platform} events on {day} are before NEXUS_PARTITION_START={start}; not partitioned")
    rows = [r for r in rows if r[0] >= start]
    platforms = sorted({r[1] for r in rows})
    known = set(context.instance.get_dynamic_partitions(platform_partitions.name or "platform"))
    new_platforms = [p for p in platforms if p not in known]
    run_requests = [
        dg.RunRequest(
            # Same partition and same high-water mark -> same key, so a repeated tick launches nothing.
            run_key=f"events:{day}|{platform}:{high_water}",
            partition_key=partition_key(day, platform),
            tags={"nexus/platform": platform},
        )
        for day, platform, _ in rows
    ]
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=[platform_partitions.build_add_request(new_platforms)] if new_platforms else [],
        cursor=json.dumps({"ingested_at": high_water}),
    )
