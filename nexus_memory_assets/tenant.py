"""The tenant tag: every run of the code location carries `nexus/tenant`, so the run queue can limit runs per tenant.

The tenant is NEXUS_TENANT, else the data directory's own id (`nexus_memory.core.tenant`). Every job gets it
as a run tag, and the schedules and sensors launch those tagged jobs, so a run from the launchpad, a
schedule, a sensor or a job backfill carries it from the moment it is queued; `nexus-memory pipeline`
passes it to its in-process runs. A run of selected assets from the UI (Materialize, an asset backfill)
runs Dagster's own asset job, which no code location can tag: it carries `dagster/code_location` when
queued (one code location per tenant), and `nexus/tenant` from its first step (`runs.claim_run`).
"""

from __future__ import annotations

import dagster as dg
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
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
    """The same definitions, every job with these run tags, the schedules and sensors launching those jobs."""
    jobs = {job.name: _tagged(job, tags) for job in definitions.jobs or []}
    return dg.Definitions(
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
