"""The tenant tag: every run of the code location carries `nexus/tenant` from the moment it is created, so the run
queue (which reads run tags when it dequeues) can limit runs per tenant.

The tenant is NEXUS_TENANT, else the data directory's own id (`nexus_memory.core.tenant`). Every job gets it
as a run tag, and the schedules and sensors launch those tagged jobs, so a run from the launchpad, a
schedule, a sensor or a job backfill carries it; `nexus-memory pipeline` passes it to its in-process runs.
A run of selected assets (Materialize in the UI, an asset backfill, a sensor's or automation's asset run
request) runs Dagster's own asset job, which Dagster builds inside the repository without tags: its
builder is wrapped so that job carries the tenant as a definition tag too (`_tag_asset_job`). A launch
from the UI merges the job's definition tags into the run's; the daemon's asset backfills and asset run
requests do not, so the instance (`instance.NexusInstance.create_run`) copies the tag from the job
snapshot every run is created with (`with_job_tenant`). The layer steps still add it when missing
(`runs.claim_run`), for an instance that is not ours.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg
from dagster._core.definitions.assets.job.asset_job import IMPLICIT_ASSET_JOB_NAME
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
from dagster._core.snap import JobSnap
from dagster_shared.record import copy as copy_record

from nexus_memory.core.config import Settings
from nexus_memory.core.tenant import tenant_of

TENANT_TAG = "nexus/tenant"
Job = dg.JobDefinition | UnresolvedAssetJobDefinition


def tenant_tags(settings: Settings) -> dict[str, str]:
    return {TENANT_TAG: tenant_of(settings)}


def _tagged(job: Job, tags: dict[str, str]) -> Job:
    if isinstance(job, dg.JobDefinition):
        return job._copy(run_tags={**job.run_tags, **tags})
    return copy_record(job, run_tags={**(job.run_tags or {}), **tags})


def with_run_tags(definitions: dg.Definitions, tags: dict[str, str]) -> dg.Definitions:
    """The same definitions, every job with these run tags (Dagster's own asset job too), the schedules and sensors
    launching those jobs."""
    jobs = {job.name: _tagged(job, tags) for job in definitions.jobs or []}
    tagged = dg.Definitions(
        assets=definitions.assets,
        asset_checks=definitions.asset_checks,
        jobs=list(jobs.values()),
        schedules=[schedule.with_updated_job(jobs[schedule.job_name]) for schedule in definitions.schedules or []],
        sensors=[
            sensor.with_updated_jobs([jobs[job.name] for job in sensor.jobs]) for sensor in definitions.sensors or []
        ],
        resources=definitions.resources,
        loggers=definitions.loggers,
        executor=definitions.executor,
    )
    _tag_asset_job(tagged, tags)
    return tagged


def _tag_asset_job(definitions: dg.Definitions, tags: dict[str, str]) -> None:
    """Give Dagster's own asset job these tags as definition tags (also its run tags: it has none of its own).

    Dagster builds that job lazily inside the repository and offers no setting for its tags, so the builder it
    registered is wrapped (a private structure of Dagster 1.13; tests/test_tenant_queue.py fails if it moves).
    """
    registered = definitions.get_repository_def()._repository_data._jobs._definitions
    build = registered.get(IMPLICIT_ASSET_JOB_NAME)
    if not callable(build):
        return

    def tagged_build(build: Callable[[], dg.JobDefinition] = build) -> dg.JobDefinition:
        job = build()
        return job._copy(tags={**job.tags, **tags})

    registered[IMPLICIT_ASSET_JOB_NAME] = tagged_build


def with_job_tenant(tags: Mapping[str, Any] | None, job_snapshot: JobSnap | None) -> Mapping[str, Any] | None:
    """A new run's tags with the tenant of the job it runs (from the job's tags), when they lack one."""
    if job_snapshot is None or (tags and TENANT_TAG in tags):
        return tags
    tenant = (job_snapshot.run_tags or {}).get(TENANT_TAG) or job_snapshot.tags.get(TENANT_TAG)
    return {**(tags or {}), TENANT_TAG: tenant} if tenant else tags
