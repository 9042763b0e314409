"""The new-events sensor: inbox files become ingest runs, and ledger rows with work left become pipeline runs.

A tick does no heavy work: it marks runs of dead processes failed, lists the inbox (one
`ingest_inbox_file` run per new file, keyed by name, size and mtime), registers the days and platforms
that gained events since its cursor as partitions, and asks the stores which of them still have work
left (one `memory_pipeline` run per platform, over the range of days it needs). Opening the UI on
stores already processed launches nothing.
"""

import json

import dagster as dg

from nexus_memory.events.inbox import inbox_files
from nexus_memory.events.partitions import Calendar, ledger_partitions, platform_batches
from nexus_memory.pipeline.layers import partitions_ingested_after, pending_partitions
from nexus_memory_assets.ingest import ingest_inbox_job
from nexus_memory_assets.layers.jobs import memory_pipeline_job
from nexus_memory_assets.partitions import (
    PIPELINE_RUN_TAG_KEYS,
    PLATFORM_TAG,
    encode_platform,
    partition_requests,
    pipeline_run_tags,
)
from nexus_memory_assets.runs import fail_orphaned_runs
from resources import StoresResource


@dg.sensor(
    name="new_events_sensor",
    jobs=[memory_pipeline_job, ingest_inbox_job],
    minimum_interval_seconds=15,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Launches an ingest run per new inbox file, and a pipeline run per platform whose new "
    "events still have work left; marks runs of dead processes failed.",
)
def new_events_sensor(context: dg.SensorEvaluationContext, stores: StoresResource) -> dg.SensorResult:
    requests: list[dg.RunRequest] = []
    for orphan in fail_orphaned_runs(context.instance):
        context.log.warning(f"run {orphan.run_id}: its process is gone; marked failed")
        if orphan.job_name == memory_pipeline_job.name and PLATFORM_TAG in orphan.tags:
            # Resume: the same range again; what the killed run committed is skipped.
            resumed = {k: orphan.tags[k] for k in PIPELINE_RUN_TAG_KEYS if k in orphan.tags}
            requests.append(
                dg.RunRequest(job_name=memory_pipeline_job.name, run_key=f"resume:{orphan.run_id}", tags=resumed)
            )
    cursor = json.loads(context.cursor) if context.cursor else {}
    requests += [
        dg.RunRequest(
            job_name=ingest_inbox_job.name,
            run_key=f"inbox:{found.key}",
            run_config={"ops": {"import_file": {"config": {"path": str(found.path)}}}},
        )
        for found in inbox_files(stores.settings().inbox_dir)
    ]
    with stores.open() as opened:
        calendar = Calendar(opened.settings.partition_start)
        touched, high_water = partitions_ingested_after(opened, int(cursor.get("rowid", 0)))
        fresh = set(touched)
        pending = [pair for pair in pending_partitions(opened) if pair in fresh] if fresh else []
        # A cursor from before days were partitions: register every day of the ledger once.
        arrived = touched if cursor.get("days_registered") else ledger_partitions(opened)
    # New days and platforms become partitions in this tick, before the runs that name them.
    registrations, order = partition_requests(context.instance, arrived, calendar)
    ranges = platform_batches(pending, calendar, order)
    requests += [
        dg.RunRequest(
            job_name=memory_pipeline_job.name,
            # The same platform and high-water mark give the same key: a repeated tick launches nothing.
            run_key=f"events:{encode_platform(platform)}:{first}:{high_water}",
            tags=pipeline_run_tags(platform, first, last),
        )
        for platform, first, last in ranges
    ]
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=registrations,
        cursor=json.dumps({"rowid": high_water, "days_registered": True}),
        skip_reason=None if requests else "no new inbox file, and no new events with work left",
    )
